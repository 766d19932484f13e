// The pooling kernels that return indices over up to three spatial dims (pool3d.cpp):
// max_pool3d_with_indices (whose values are max_pool3d's) and adaptive max pooling (2-d as 3-d
// with depth 1). Each window is scanned whole, because an index names one element of the whole
// [D, H, W] box. The 3-d average pools are composites of the 2-d kernels (Note [Separable 3-d
// pooling] in src/ops/pool3d.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "kiln/tensor.h"

namespace kiln::cpu {

// Sizes of one pooling over `planes` independent [in[0], in[1], in[2]] boxes (depth, height,
// width); a 2-d pooling has in[0] = out[0] = 1.
struct Pool3dGeometry {
  int64_t planes = 0;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1};
  std::array<int64_t, 3> kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dilation{1, 1, 1};
};

// values (input's dtype) and indices (int64), both contiguous [planes, out...]: each window's
// first largest element in (d, h, w) order, or its last NaN, and that element's flat position
// (d * H + h) * W + w in its box, as PyTorch. A window with every tap in the padding gets the
// lowest value and the position of its first tap past the padding. Every numeric dtype.
void max_pool3d_with_indices(const Tensor& input, const Tensor& values, const Tensor& indices,
                             const Pool3dGeometry& g);
// The same over adaptive windows: along a dim of size L pooled to n, window i is
// [floor(i * L / n), ceil((i + 1) * L / n)). Only planes, in and out of g are read.
void adaptive_max_pool3d(const Tensor& input, const Tensor& values, const Tensor& indices,
                         const Pool3dGeometry& g);

// The input gradient of both: grad_input (contiguous, zeroed here) [planes, in_box] gets each
// grad_out element [planes, out_box] added at its index; an index outside [0, in_box) raises
// IndexError naming `op`. grad_out and indices may have any layout. Floating dtypes.
void max_pool_indices_backward(std::string_view op, const Tensor& grad_out, const Tensor& indices,
                               const Tensor& grad_input, int64_t planes, int64_t in_box,
                               int64_t out_box);

}  // namespace kiln::cpu
