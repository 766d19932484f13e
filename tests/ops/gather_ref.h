// Reference helpers for shape and index OpInfos: build the expected tensor position by position
// from the input's row-major values (no Kiln kernel beyond to_vector/from_vector involved).
#pragma once

#include <functional>
#include <vector>

#include "src/core/cast.h"
#include "tests/ops/harness.h"

namespace kiln::testing {

inline std::vector<int64_t> shape_vec(const Tensor& t) {
  return {t.sizes().begin(), t.sizes().end()};
}

inline int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

inline std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

inline int64_t ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
  return flat;
}

// out[i] = src[f(i)] (row-major flat index into src), or `fill` where f returns -1.
inline Tensor map_positions(const Tensor& src, const std::vector<int64_t>& out_shape,
                            const std::function<int64_t(const std::vector<int64_t>&)>& f,
                            double fill = 0) {
  return visit_dtype(src.dtype(), [&]<typename T>() {
    const std::vector<T> v = src.to_vector<T>();
    std::vector<T> out;
    const int64_t n = numel_of(out_shape);
    for (int64_t p = 0; p < n; ++p) {
      const int64_t s = f(unravel(p, out_shape));
      out.push_back(s < 0 ? cast_value<T>(fill) : v[static_cast<size_t>(s)]);
    }
    return from_vector(out, out_shape);
  });
}

// Values of an integer tensor as int64 (row-major).
inline std::vector<int64_t> int_values(const Tensor& t) {
  return visit_dtype(t.dtype(), [&]<typename T>() {
    std::vector<int64_t> out;
    for (T x : t.to_vector<T>()) out.push_back(cast_value<int64_t>(x));
    return out;
  });
}

}  // namespace kiln::testing
