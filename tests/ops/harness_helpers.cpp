#include <fmt/format.h>

#include <cmath>

#include "src/core/cast.h"
#include "src/core/shape.h"
#include "src/core/tensor_factory.h"
#include "tests/ops/harness.h"

namespace kiln::testing {

namespace {
std::vector<OpInfo>& registry() {
  static std::vector<OpInfo> infos;
  return infos;
}
}  // namespace

bool register_op_info(OpInfo info) {
  registry().push_back(std::move(info));
  return true;
}
const std::vector<OpInfo>& op_infos() { return registry(); }
const OpInfo* find_op_info(std::string_view name) {
  for (const OpInfo& i : registry())
    if (i.name == name) return &i;
  return nullptr;
}

std::pair<double, double> default_tolerance(ScalarType dtype) {
  switch (dtype) {
    case kFloat16:
      return {1e-3, 1e-3};
    case kBFloat16:
      return {1e-2, 1.6e-2};
    case kFloat32:
      return {1e-5, 1.3e-6};
    case kFloat64:
      return {1e-7, 1e-7};
    default:
      return {0, 0};
  }
}

Tensor make_tensor(IntArrayRef shape, ScalarType dtype, std::mt19937_64& rng, double low,
                   double high, Layout layout, bool full_range) {
  std::vector<int64_t> sizes(shape.begin(), shape.end());
  std::vector<int64_t> alloc = sizes;
  if (layout == Layout::NonContiguous && !alloc.empty()) alloc.back() *= 2;
  int64_t n = 1;
  for (int64_t s : alloc) n *= s;
  std::vector<double> values(static_cast<size_t>(n));
  std::uniform_real_distribution<double> uni(low, high);
  for (double& v : values) {
    if (dtype == kBool) {
      v = static_cast<double>(rng() & 1);
    } else if (is_integral(dtype)) {
      double lo = is_unsigned(dtype) ? 0 : std::floor(low);
      double hi = std::ceil(high);
      v = std::floor(std::uniform_real_distribution<double>(lo, hi + 1)(rng));
      if (v > hi) v = hi;
    } else {
      v = uni(rng);
    }
  }
  Tensor t = from_vector(values, alloc).to(dtype);
  if (full_range && is_unsigned(dtype)) {
    // Put a few values near the top of the type, where wrap-around happens.
    visit_dtype(dtype, [&]<typename T>() {
      if constexpr (std::is_unsigned_v<T> && !std::is_same_v<T, bool>) {
        T* p = t.data_ptr<T>();
        for (int64_t i = 0; i < n; i += 3)
          p[i] = static_cast<T>(std::numeric_limits<T>::max() - p[i]);
      }
    });
  }
  if (layout == Layout::NonContiguous && !sizes.empty()) {
    t = t.slice(static_cast<int64_t>(sizes.size()) - 1, 0, std::nullopt, 2);
  }
  if (layout == Layout::Expanded && !sizes.empty()) {
    // A size-1 first dim expanded to the requested size: stride 0.
    std::vector<int64_t> one = sizes;
    one[0] = 1;
    Tensor base = make_tensor(one, dtype, rng, low, high, Layout::Contiguous, full_range);
    t = base.expand(sizes);
  }
  return t;
}

std::vector<SampleInput> unary_samples(ScalarType dtype, std::mt19937_64& rng, double low,
                                       double high) {
  std::vector<SampleInput> s;
  s.push_back({{make_tensor({}, dtype, rng, low, high)}, "0-dim"});
  s.push_back({{make_tensor({7}, dtype, rng, low, high)}, "[7]"});
  s.push_back({{make_tensor({33, 65}, dtype, rng, low, high)}, "[33, 65]"});
  s.push_back({{make_tensor({0, 3}, dtype, rng, low, high)}, "zero-size [0, 3]"});
  s.push_back({{make_tensor({5, 6}, dtype, rng, low, high, Layout::NonContiguous)},
               "non-contiguous [5, 6]"});
  s.push_back({{make_tensor({4, 3}, dtype, rng, low, high, Layout::Expanded)}, "expanded [4, 3]"});
  return s;
}

std::vector<SampleInput> binary_samples(ScalarType dtype, std::mt19937_64& rng, double low,
                                        double high) {
  std::vector<SampleInput> s;
  s.push_back(
      {{make_tensor({5, 7}, dtype, rng, low, high), make_tensor({5, 7}, dtype, rng, low, high)},
       "[5, 7] with [5, 7]"});
  s.push_back(
      {{make_tensor({3, 1}, dtype, rng, low, high), make_tensor({1, 4}, dtype, rng, low, high)},
       "broadcast [3, 1] with [1, 4]"});
  s.push_back({{make_tensor({}, dtype, rng, low, high), make_tensor({2, 3}, dtype, rng, low, high)},
               "0-dim with [2, 3]"});
  s.push_back(
      {{make_tensor({0, 3}, dtype, rng, low, high), make_tensor({3}, dtype, rng, low, high)},
       "zero-size [0, 3] with [3]"});
  s.push_back({{make_tensor({4, 6}, dtype, rng, low, high, Layout::NonContiguous),
                make_tensor({6, 4}, dtype, rng, low, high).t()},
               "non-contiguous [4, 6] with transposed"});
  s.push_back(
      {{make_tensor({100, 400}, dtype, rng, low, high), make_tensor({400}, dtype, rng, low, high)},
       "large [100, 400] with [400] (parallel path)"});
  return s;
}

Tensor map_unary_f64(const Tensor& x, ScalarType out, const std::function<double(double)>& f) {
  std::vector<double> v = x.to_vector<double>();
  for (double& e : v) e = f(e);
  return from_vector(v, std::vector<int64_t>(x.sizes().begin(), x.sizes().end())).to(out);
}

Tensor map_binary_f64(const Tensor& a, const Tensor& b, ScalarType out,
                      const std::function<double(double, double)>& f) {
  DimVector shape = broadcast_shapes("reference", a.sizes(), b.sizes());
  std::vector<double> va = a.expand(shape).to_vector<double>();
  std::vector<double> vb = b.expand(shape).to_vector<double>();
  for (size_t i = 0; i < va.size(); ++i) va[i] = f(va[i], vb[i]);
  return from_vector(va, std::vector<int64_t>(shape.begin(), shape.end())).to(out);
}

std::string compare_tensors(const Tensor& actual, const Tensor& expected, double atol,
                            double rtol) {
  if (actual.dtype() != expected.dtype())
    return fmt::format("dtype {} != expected {}", dtype_name(actual.dtype()),
                       dtype_name(expected.dtype()));
  if (!(actual.sizes() == expected.sizes()))
    return fmt::format("shape {} != expected {}", shape_str(actual.sizes()),
                       shape_str(expected.sizes()));
  const int64_t n = actual.numel();
  if (is_floating(actual.dtype())) {
    std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
    for (int64_t i = 0; i < n; ++i) {
      const double x = a[i], y = e[i];
      if (std::isnan(x) && std::isnan(y)) continue;
      if (x == y) continue;  // equal infinities
      if (std::isfinite(x) && std::isfinite(y) && std::fabs(x - y) <= atol + rtol * std::fabs(y))
        continue;
      return fmt::format("element {} is {} but expected {} (atol {}, rtol {})", i, x, y, atol,
                         rtol);
    }
    return "";
  }
  // Integers and bool: exact, compared in the tensor's own type.
  return visit_dtype(actual.dtype(), [&]<typename T>() -> std::string {
    std::vector<T> a = actual.to_vector<T>(), e = expected.to_vector<T>();
    for (int64_t i = 0; i < n; ++i) {
      if (a[i] != e[i]) {
        return fmt::format("element {} is {} but expected {}", i, cast_value<double>(a[i]),
                           cast_value<double>(e[i]));
      }
    }
    return std::string();
  });
}

// ---- running samples (harness_test.cpp, compiled_harness_test.cpp) ----

std::vector<std::string> all_op_names() {
  std::vector<std::string> names;
  for (const auto& op : OpRegistry::instance().ops()) names.push_back(op->name);
  return names;
}

const char* exemption_reason(std::string_view name) {
  for (const auto& [op, reason] : harness_exemptions())
    if (op == name) return reason.c_str();
  return nullptr;
}

// A Meta tensor with the same dtype, sizes, strides and offset as `t`.
Tensor to_meta(const Tensor& t) {
  if (!t.defined()) return t;
  int64_t extent = t.storage_offset() + 1;
  for (int64_t d = 0; d < t.dim(); ++d) extent += (t.size(d) - 1) * t.stride(d);
  Tensor base = empty_tensor({std::max<int64_t>(extent, 1)}, t.dtype(), Device::Meta);
  return base.as_strided(t.sizes(), t.strides(), t.storage_offset());
}

Stack meta_args(const Stack& args) {
  Stack out;
  for (const IValue& v : args) {
    if (v.is_tensor()) {
      out.emplace_back(to_meta(v.tensor()));
    } else if (v.is_tensor_list()) {
      std::vector<Tensor> list;
      for (const Tensor& t : v.tensor_list()) list.push_back(to_meta(t));
      out.emplace_back(std::move(list));
    } else if (v.is_device()) {
      out.emplace_back(Device::Meta);
    } else {
      out.push_back(v);
    }
  }
  return out;
}

// Deep copies of tensor args (same layout is not needed: only values), so in-place ops do not
// disturb the reference.
Stack copy_args(const Stack& args) {
  Stack out;
  for (const IValue& v : args) {
    if (v.is_tensor() && v.tensor().defined() && !v.tensor().is_meta()) {
      out.emplace_back(v.tensor().clone());
    } else {
      out.push_back(v);
    }
  }
  return out;
}

std::vector<Tensor> tensors_of(const Stack& outputs) {
  std::vector<Tensor> r;
  for (const IValue& v : outputs) {
    if (v.is_tensor()) r.push_back(v.tensor());
    if (v.is_tensor_list())
      for (const Tensor& t : v.tensor_list()) r.push_back(t);
  }
  return r;
}

std::string op_test_name(const std::string& op) {
  std::string s = op;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

}  // namespace kiln::testing
