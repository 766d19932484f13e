// Reference helpers shared by the linalg, conv and pooling OpInfos (linalg_ref_helpers.cpp).
#pragma once

#include <vector>

#include "tests/ops/harness.h"

namespace kiln::testing {

// A tensor's values, row-major: float64 for floating dtypes, uint64 (wrapping) otherwise.
struct RefValues {
  std::vector<int64_t> shape;
  bool floating = true;
  std::vector<double> f;
  std::vector<uint64_t> u;
};

std::vector<int64_t> shape_of(const Tensor& t);
int64_t numel_of(const std::vector<int64_t>& shape);
RefValues ref_values(const Tensor& t);
// Converts back to `dtype` (integers truncate modulo 2^bits).
Tensor ref_tensor(const RefValues& r, ScalarType dtype);
// a [..., n, k] @ b [..., k, p] with broadcast batch dims (both at least 2-D).
RefValues ref_batched_matmul(const RefValues& a, const RefValues& b);

}  // namespace kiln::testing
