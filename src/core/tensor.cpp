// Tensor's metadata accessors, element access and printing. Methods that compute are op wrappers
// in src/ops/.
#include "kiln/tensor.h"

#include <fmt/format.h>

#include <sstream>

#include "src/core/cast.h"
#include "src/core/tensor_factory.h"
#include "src/core/tracing_hooks.h"

namespace kiln {

SymInt Tensor::size(int64_t d, std::source_location loc) const {
  SymInt s = sym_sizes()[wrap_dim("size", d, dim())];
  if (s.is_symbolic() && current_tracing_hooks() != nullptr) last_symbolic_size_read() = loc;
  return s;
}
SymInt Tensor::stride(int64_t d) const { return sym_strides()[wrap_dim("stride", d, dim())]; }

bool Tensor::is_alias_of(const Tensor& other) const {
  return checked_impl("is_alias_of").storage() == other.checked_impl("is_alias_of").storage();
}

void Tensor::throw_undefined(const char* accessor) {
  throw ValueError(fmt::format(
      "Tensor::{}(): the tensor is undefined (a default-constructed Tensor, or an optional "
      "argument such as a bias left empty); check defined() first or create it with a factory "
      "(kiln::zeros, kiln::empty)",
      accessor));
}

template <typename T>
T* Tensor::data_ptr() const {
  (void)checked_impl("data_ptr");
  KILN_CHECK(scalar_type_of<T> == dtype(), DTypeError,
             "data_ptr: asked for {} data but the tensor's dtype is {}",
             dtype_name(scalar_type_of<T>), dtype_name(dtype()));
  return static_cast<T*>(checked_impl("data_ptr").data());
}

namespace {
void check_has_data(const Tensor& t, std::string_view what) {
  KILN_CHECK(t.defined(), ValueError, "{}: the tensor is undefined", what);
  KILN_CHECK(!t.is_meta(), ValueError, "{}: a Meta tensor has no data (shape {}, dtype {})", what,
             shape_str(t.sizes()), dtype_name(t.dtype()));
}

// Reads element i (row-major logical order) of t, without requiring contiguity.
template <typename T, typename From>
T read_element(const Tensor& t, int64_t linear) {
  const From* base = static_cast<const From*>(t.data_ptr());
  int64_t offset = 0;
  IntArrayRef sizes = t.sizes();
  IntArrayRef strides = t.strides();
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    const int64_t idx = linear % sizes[d];
    linear /= sizes[d];
    offset += idx * strides[d];
  }
  return cast_value<T>(base[offset]);
}
}  // namespace

std::optional<std::source_location>& last_symbolic_size_read() {
  thread_local std::optional<std::source_location> loc;
  return loc;
}

TracingHooks*& current_tracing_hooks() {
  thread_local TracingHooks* hooks = nullptr;
  return hooks;
}

namespace {
// A fake tensor read inside a trace is replaced by its real value (src/core/tracing_hooks.h).
Tensor with_data(const Tensor& t, const char* what, const std::source_location& loc) {
  if (t.defined() && t.device() == Device::Meta) {
    if (TracingHooks* hooks = current_tracing_hooks()) return hooks->materialize(t, what, loc);
  }
  return t;
}
}  // namespace

template <typename T>
T Tensor::item(std::source_location loc) const {
  const Tensor self = with_data(*this, "item()", loc);
  check_has_data(self, "item");
  KILN_CHECK(self.numel() == 1, ValueError,
             "item: a tensor with {} elements (shape {}) cannot be converted to a scalar; only "
             "one-element tensors can",
             self.numel(), shape_str(self.sizes()));
  return visit_dtype(dtype(), [&]<typename From>() { return read_element<T, From>(self, 0); });
}

Scalar Tensor::item(std::source_location loc) const {
  return visit_dtype(dtype(), [&]<typename T>() { return Scalar(item<T>(loc)); });
}

template <typename T>
std::vector<T> Tensor::to_vector(std::source_location loc) const {
  const Tensor self_data = with_data(*this, "to_vector()", loc);
  if (!self_data.is_same(*this)) return self_data.to_vector<T>(loc);
  check_has_data(*this, "to_vector");
  std::vector<T> out(static_cast<size_t>(numel()));
  visit_dtype(dtype(), [&]<typename From>() {
    if (is_contiguous()) {
      const From* p = static_cast<const From*>(data_ptr());
      for (size_t i = 0; i < out.size(); ++i) out[i] = cast_value<T>(p[i]);
    } else {
      for (size_t i = 0; i < out.size(); ++i)
        out[i] = read_element<T, From>(*this, static_cast<int64_t>(i));
    }
  });
  return out;
}

namespace {
// item<SymInt>() reads integers (a SymInt has no fractional part) that fit int64.
void check_symint_dtype(const Tensor& t, const char* what) {
  KILN_CHECK(is_integral_or_bool(t.dtype()), DTypeError,
             "{}: a {} tensor has no integer value; SymInt values come from integer or bool "
             "tensors (read a floating value with item<double>(), a graph break under "
             "kiln::compile)",
             what, dtype_name(t.dtype()));
}
bool captures_scalar_outputs(const Tensor& t) {
  if (!t.defined() || t.device() != Device::Meta) return false;
  const TracingHooks* hooks = current_tracing_hooks();
  return hooks != nullptr && hooks->captures_scalar_outputs();
}
}  // namespace

template <>
SymInt Tensor::item<SymInt>(std::source_location loc) const {
  check_symint_dtype(*this, "item<SymInt>()");
  if (captures_scalar_outputs(*this)) return current_tracing_hooks()->scalar_symbol(*this, loc);
  if (dtype() == kUInt64) {
    const uint64_t value = item<uint64_t>(loc);
    KILN_CHECK(value <= uint64_t{INT64_MAX}, ValueError,
               "item<SymInt>(): the uint64 value {} does not fit a SymInt (int64); read it with "
               "item<uint64_t>()",
               value);
    return static_cast<int64_t>(value);
  }
  return item<int64_t>(loc);
}

template <>
std::vector<SymInt> Tensor::to_vector<SymInt>(std::source_location loc) const {
  check_symint_dtype(*this, "to_vector<SymInt>()");
  std::vector<SymInt> out;
  if (captures_scalar_outputs(*this)) {
    const Tensor flat = reshape({-1});
    const int64_t n = flat.sym_sizes()[0].guard_int(loc);
    for (int64_t i = 0; i < n; ++i) out.push_back(flat.select(0, i).item<SymInt>(loc));
    return out;
  }
  const Tensor flat = with_data(*this, "to_vector()", loc).reshape({-1});
  for (int64_t i = 0; i < flat.numel(); ++i) out.push_back(flat.select(0, i).item<SymInt>(loc));
  return out;
}

#define KILN_INSTANTIATE(T)                               \
  template T* Tensor::data_ptr<T>() const;                \
  template T Tensor::item<T>(std::source_location) const; \
  template std::vector<T> Tensor::to_vector<T>(std::source_location) const;
KILN_INSTANTIATE(bool)
KILN_INSTANTIATE(uint8_t)
KILN_INSTANTIATE(uint16_t)
KILN_INSTANTIATE(uint32_t)
KILN_INSTANTIATE(uint64_t)
KILN_INSTANTIATE(int8_t)
KILN_INSTANTIATE(int16_t)
KILN_INSTANTIATE(int32_t)
KILN_INSTANTIATE(int64_t)
KILN_INSTANTIATE(Half)
KILN_INSTANTIATE(BFloat16)
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
#undef KILN_INSTANTIATE

namespace {
std::string format_element(const Tensor& t, int64_t linear) {
  return visit_dtype(t.dtype(), [&]<typename T>() -> std::string {
    if constexpr (std::is_same_v<T, bool>) {
      return read_element<bool, T>(t, linear) ? "True" : "False";
    } else if constexpr (is_floating_v<T>) {
      return fmt::format("{:.4f}", read_element<double, T>(t, linear));
    } else {
      return fmt::format("{}", read_element<T, T>(t, linear));
    }
  });
}

void format_dim(std::ostringstream& os, const Tensor& t, int64_t d, int64_t& linear, int indent) {
  if (t.dim() == 0) {
    os << format_element(t, 0);
    return;
  }
  const int64_t n = t.size(d);
  os << '[';
  for (int64_t i = 0; i < n; ++i) {
    if (d == t.dim() - 1) {
      os << format_element(t, linear++);
    } else {
      format_dim(os, t, d + 1, linear, indent + 1);
    }
    if (i + 1 < n) {
      os << ',';
      if (d == t.dim() - 1) {
        os << ' ';
      } else {
        os << std::string(static_cast<size_t>(t.dim() - d - 1), '\n')
           << std::string(static_cast<size_t>(indent + 1), ' ');
      }
    }
  }
  os << ']';
}
}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  std::ostringstream os;
  os << "tensor(";
  if (is_meta() || numel() > 1000) {
    os << "..., size=" << shape_str(sym_sizes());  // a symbolic shape prints unguarded
  } else {
    int64_t linear = 0;
    format_dim(os, *this, 0, linear, 7);
    if (numel() == 0) os << ", size=" << shape_str(sizes());
  }
  if (dtype() != kFloat32 && dtype() != kInt64 && dtype() != kBool)
    os << ", dtype=" << dtype_name(dtype());
  if (is_meta()) os << ", device='meta'";
  os << ')';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace kiln
