// Factories: empty, full, arange (zeros/ones/... are wrappers over full).
#include <cmath>
#include <cstring>

#include "kiln/ops/creation.h"
#include "src/core/checked_convert.h"
#include "src/kernels/cpu/copy.h"
#include "src/ops/factory_options.h"
#include "src/ops/registry.h"

namespace kiln {
namespace {

void meta_empty(OpCall& call) { call.set_output(0, call.arg(1).dtype(), call.sym_ints(0)); }

void meta_full(OpCall& call) {
  sym_checked_numel("full", call.sym_ints(0));
  check_fits("full", call.scalar(1), call.arg(2).dtype());  // Note [Overflowing fill values]
  call.set_output(0, call.arg(2).dtype(), call.sym_ints(0));
}
void cpu_full(OpCall& call) { cpu::fill(call.output(0), call.scalar(1)); }

int64_t arange_length(const Scalar& start, const Scalar& end, const Scalar& step) {
  if (start.is_integral() && end.is_integral() && step.is_integral()) {
    const int64_t s = start.to_int64(), e = end.to_int64(), st = step.to_int64();
    KILN_CHECK(st != 0, ValueError, "arange: step must be nonzero");
    KILN_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), ValueError,
               "arange: upper bound {} and lower bound {} are inconsistent with step sign {}", e, s,
               st);
    return st > 0 ? (e - s + st - 1) / st : (s - e - st - 1) / -st;
  }
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  KILN_CHECK(std::isfinite(s) && std::isfinite(e), ValueError,
             "arange: bounds must be finite, got start {} and end {}", s, e);
  KILN_CHECK(st != 0, ValueError, "arange: step must be nonzero");
  KILN_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), ValueError,
             "arange: upper bound {} and lower bound {} are inconsistent with step sign {}", e, s,
             st);
  return static_cast<int64_t>(std::ceil((e - s) / st));
}

// The length of an integer arange whose bounds may be symbolic (arange(x.size(0)) while tracing,
// boxed as ints, not Scalars: Note [Boxed SymInts]). The step must be concrete; the length is the
// expression ceil((end - start) / step), with the sign check guarded.
SymInt sym_arange_length(SymInt start, SymInt end, int64_t step) {
  KILN_CHECK(step != 0, ValueError, "arange: step must be nonzero");
  KILN_CHECK(step > 0 ? end >= start : end <= start, ValueError,
             "arange: upper bound {} and lower bound {} are inconsistent with step sign {}", end,
             start, step);
  if (step == 1) return end - start;
  return step > 0 ? (end - start + step - 1) / step : (start - end - step - 1) / -step;
}

void meta_arange(OpCall& call) {
  const bool symbolic = [&] {
    for (size_t i = 0; i < 3; ++i)
      if (call.arg(i).is_int() && call.sym_int_arg(i).is_symbolic()) return true;
    return false;
  }();
  if (symbolic) {
    KILN_CHECK(call.arg(0).is_int() && call.arg(1).is_int() && call.arg(2).is_int(), ValueError,
               "arange: symbolic bounds need integer start, end and step");
    const SymInt n = sym_arange_length(call.sym_int_arg(0), call.sym_int_arg(1), call.int_arg(2));
    call.set_output(0, call.arg(3).dtype(), {n});
    return;
  }
  const ScalarType dtype = call.arg(3).dtype();
  // PyTorch steps an integer arange in the integer type: a fractional step that truncates to 0
  // is no step at all (arange(1, 4, 0.5, kInt64) raises there, it would be six 1s and 2s here).
  KILN_CHECK(!(is_integral(dtype) && call.scalar(2).is_floating() &&
               std::abs(call.scalar(2).to_double()) < 1.0),
             ValueError,
             "arange: step must be nonzero (step {} truncates to 0 in dtype {}); use a floating "
             "dtype or an integer step",
             call.scalar(2).str(), dtype_name(dtype));
  const int64_t n = arange_length(call.scalar(0), call.scalar(1), call.scalar(2));
  call.set_output(0, dtype, {n});
}

void cpu_arange(OpCall& call) {
  const Tensor& out = call.output(0);
  const Scalar start = call.scalar(0), step = call.scalar(2);
  const bool integral = start.is_integral() && step.is_integral();
  visit_dtype(out.dtype(), [&]<typename T>() {
    T* p = static_cast<T*>(out.data_ptr());
    for (int64_t i = 0; i < out.numel(); ++i) {
      p[i] = integral
                 ? Scalar(start.to_int64() + i * step.to_int64()).to<T>()
                 : Scalar(start.to_double() + static_cast<double>(i) * step.to_double()).to<T>();
    }
  });
}

}  // namespace

void register_factory_ops(OpRegistry& r) {
  r.add({.name = "empty",
         .schema = "empty(SymInt[] size, ScalarType dtype, Device device) -> Tensor",
         .family = "factory",
         .meta = meta_empty,
         .tags = kTagFactory,
         .device_arg = 2});
  r.add({.name = "full",
         .schema =
             "full(SymInt[] size, Scalar fill_value, ScalarType dtype, Device device) -> Tensor",
         .family = "factory",
         .meta = meta_full,
         .cpu = cpu_full,
         .tags = kTagFactory,
         .device_arg = 3});
  r.add({.name = "arange",
         .schema = "arange(Scalar start, Scalar end, Scalar step, ScalarType dtype, Device device) "
                   "-> Tensor",
         .family = "factory",
         .meta = meta_arange,
         .cpu = cpu_arange,
         .dtypes = dtypes::kNumeric,
         .tags = kTagFactory,
         .device_arg = 4});
}

Tensor empty(SymIntArrayRef sizes, TensorOptions options) {
  static const OpId id = op_id("empty");
  return with_requires_grad(dispatch::call_tensor(id, sizes, options.dtype_, options.device_),
                            options);
}
Tensor full(SymIntArrayRef sizes, const Scalar& value, TensorOptions options) {
  static const OpId id = op_id("full");
  return with_requires_grad(
      dispatch::call_tensor(id, sizes, value, options.dtype_, options.device_), options);
}
Tensor zeros(SymIntArrayRef sizes, TensorOptions options) { return full(sizes, 0, options); }
Tensor ones(SymIntArrayRef sizes, TensorOptions options) { return full(sizes, 1, options); }

Tensor arange(const Scalar& end, std::optional<TensorOptions> options) {
  return arange(0, end, 1, options);
}
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step,
              std::optional<TensorOptions> options) {
  static const OpId id = op_id("arange");
  const bool integral = start.is_integral() && end.is_integral() && step.is_integral();
  TensorOptions o = options.value_or(TensorOptions(integral ? kInt64 : kFloat32));
  return with_requires_grad(dispatch::call_tensor(id, start, end, step, o.dtype_, o.device_), o);
}

Tensor sym_arange(SymInt start, SymInt end, SymInt step, std::optional<TensorOptions> options) {
  static const OpId id = op_id("arange");
  TensorOptions o = options.value_or(TensorOptions(kInt64));
  return dispatch::call_tensor(id, start, end, step, o.dtype_, o.device_);
}

Tensor empty_like(const Tensor& t, std::optional<ScalarType> dtype) {
  return empty(t.sym_sizes(), TensorOptions(dtype.value_or(t.dtype())).device(t.device()));
}
Tensor zeros_like(const Tensor& t, std::optional<ScalarType> dtype) {
  return full_like(t, 0, dtype);
}
Tensor ones_like(const Tensor& t, std::optional<ScalarType> dtype) {
  return full_like(t, 1, dtype);
}
Tensor full_like(const Tensor& t, const Scalar& value, std::optional<ScalarType> dtype) {
  return full(t.sym_sizes(), value, TensorOptions(dtype.value_or(t.dtype())).device(t.device()));
}

template <typename T>
Tensor from_vector(const std::vector<T>& values, std::optional<std::vector<int64_t>> sizes) {
  std::vector<int64_t> shape =
      sizes.value_or(std::vector<int64_t>{static_cast<int64_t>(values.size())});
  const int64_t n = checked_numel("from_vector", shape);
  KILN_CHECK(n == static_cast<int64_t>(values.size()), ShapeError,
             "from_vector: {} values do not fill shape {} ({} elements)", values.size(),
             shape_str(shape), n);
  Tensor out = empty_tensor(shape, scalar_type_of<T>);
  if (n > 0) {
    if constexpr (std::is_same_v<T, bool>) {
      bool* p = out.data_ptr<bool>();
      for (int64_t i = 0; i < n; ++i) p[i] = values[static_cast<size_t>(i)];
    } else {
      std::memcpy(out.data_ptr(), values.data(), static_cast<size_t>(n) * sizeof(T));
    }
  }
  return out;
}
template Tensor from_vector(const std::vector<bool>&, std::optional<std::vector<int64_t>>);
template Tensor from_vector(const std::vector<uint8_t>&, std::optional<std::vector<int64_t>>);
template Tensor from_vector(const std::vector<uint16_t>&, std::optional<std::vector<int64_t>>);
template Tensor from_vector(const std::vector<uint32_t>&, std::optional<std::vector<int64_t>>);
template Tensor from_vector(const std::vector<uint64_t>&, std::optional<std::vector<int64_t>>);
template Tensor from_vector(const std::vector<int8_t>&, std::optional<std::vector<int64_t>>);
template Tensor from_vector(const std::vector<int16_t>&, std::optional<std::vector<int64_t>>);
template Tensor from_vector(const std::vector<int32_t>&, std::optional<std::vector<int64_t>>);
template Tensor from_vector(const std::vector<int64_t>&, std::optional<std::vector<int64_t>>);
template Tensor from_vector(const std::vector<Half>&, std::optional<std::vector<int64_t>>);
template Tensor from_vector(const std::vector<BFloat16>&, std::optional<std::vector<int64_t>>);
template Tensor from_vector(const std::vector<float>&, std::optional<std::vector<int64_t>>);
template Tensor from_vector(const std::vector<double>&, std::optional<std::vector<int64_t>>);

Tensor tensor(std::initializer_list<double> values, ScalarType dtype) {
  return from_vector(std::vector<double>(values)).to(dtype);
}
Tensor tensor(std::initializer_list<int64_t> values, ScalarType dtype) {
  return from_vector(std::vector<int64_t>(values)).to(dtype);
}
Tensor tensor(std::initializer_list<int> values, ScalarType dtype) {
  return from_vector(std::vector<int64_t>(values.begin(), values.end())).to(dtype);
}
Tensor scalar_tensor(const Scalar& value, std::optional<ScalarType> dtype) {
  Tensor t = scalar_to_tensor(value, dtype);
  t.impl()->set_wrapped_number(false);
  return t;
}
Tensor from_blob(void* data, IntArrayRef sizes, ScalarType dtype) {
  const int64_t n = checked_numel("from_blob", sizes);
  auto storage = make_intrusive<StorageImpl>(data, static_cast<size_t>(n * element_size(dtype)),
                                             nullptr, nullptr);
  SymDimVector sym_sizes(sizes.begin(), sizes.end());
  SymDimVector strides = contiguous_strides(SymIntArrayRef(sym_sizes));
  return Tensor(make_intrusive<TensorImpl>(std::move(storage), dtype, std::move(sym_sizes),
                                           std::move(strides), SymInt(0)));
}

}  // namespace kiln
