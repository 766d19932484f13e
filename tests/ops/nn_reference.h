// Helpers for the nn OpInfos' reference implementations: plain double loops over
// to_vector<double>() values, no Kiln kernel involved beyond conversions and views.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "tests/ops/harness.h"

namespace kiln::testing::nn_ref {

inline std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }
inline std::vector<int64_t> shape_of(const Tensor& t) {
  return {t.sizes().begin(), t.sizes().end()};
}
inline Tensor opt(const IValue& v) {
  if (v.is_none()) return Tensor();
  return v.tensor();
}
inline Tensor result(const std::vector<double>& v, const std::vector<int64_t>& shape,
                     ScalarType dtype) {
  return from_vector(v, shape).to(dtype);
}
inline int64_t prod(const std::vector<int64_t>& s) {
  int64_t p = 1;
  for (int64_t v : s) p *= v;
  return p;
}
// Uniform integers in [lo, hi] as a tensor of dtype `dtype`.
inline Tensor random_ints(const std::vector<int64_t>& shape, int64_t lo, int64_t hi,
                          ScalarType dtype, std::mt19937_64& rng) {
  std::vector<int64_t> v(static_cast<size_t>(prod(shape)));
  std::uniform_int_distribution<int64_t> d(lo, hi);
  for (int64_t& x : v) x = d(rng);
  return from_vector(v, shape).to(dtype);
}
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline double reduce(const std::vector<double>& v, std::string_view reduction) {
  double s = 0;
  for (double x : v) s += x;
  return reduction == "sum" ? s : (v.empty() ? kNaN : s / static_cast<double>(v.size()));
}

}  // namespace kiln::testing::nn_ref
