// Reference helpers shared by the linalg, conv and pooling OpInfos (linalg_ref_helpers.cpp).
#pragma once

#include <cstdint>
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

// The geometry of a windowed pooling call whose input is args[self_arg], followed by
// kernel_size, stride, padding and (has_dilation) dilation, from PyTorch's documented formulas.
struct PoolWindow {
  int64_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
};
PoolWindow pool_window(const Stack& args, size_t self_arg, bool has_dilation, bool ceil_mode);
// x's shape with the last two dims replaced by (oh, ow).
std::vector<int64_t> pooled_shape(const Tensor& x, int64_t oh, int64_t ow);

}  // namespace kiln::testing
