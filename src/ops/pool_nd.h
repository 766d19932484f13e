// Argument checks and shape rules of the 1-d and 3-d pools and of adaptive max pooling
// (pool1d.cpp, pool3d.cpp, adaptive_max_pool.cpp), for any number of spatial dims (1 to 3). The
// composites check here, naming themselves, before they call the 2-d ops, so an error names the
// op the user called.
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include "src/ops/registry.h"

namespace kiln {

// A windowed pooling call's checked arguments: spatial dims, sizes per dim (in SymInt, so a
// trace with symbolic sizes gets symbolic output sizes), the window per dim.
struct PoolNdShape {
  int64_t spatial = 0;
  SymDimVector in, out;
  std::array<int64_t, 3> kernel{1, 1, 1}, stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1};
};

// self must have spatial + 1 (unbatched) or spatial + 2 dims, all but the batch non-empty.
void check_pool_nd_input(std::string_view op, const Tensor& self, int64_t spatial);
// A composite's dtype check (the dispatcher checks only native ops): self's dtype must be one of
// the op's (OpDef::dtypes).
void check_pool_nd_dtype(const OpCall& call, const Tensor& self);
// Validates input, kernel_size, stride (empty: the kernel size), padding (at most half the
// kernel) and dilation (empty: 1, for the avg pools, which have none), and computes the output
// size; a window must fit (output size > 0).
PoolNdShape pool_nd_window_shape(std::string_view op, const Tensor& self, int64_t spatial,
                                 IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                                 IntArrayRef dilation, bool ceil_mode);
// Validates an adaptive pooling call; returns the output size per spatial dim (non-negative).
std::array<int64_t, 3> adaptive_nd_output_size(std::string_view op, const Tensor& self,
                                               int64_t spatial, IntArrayRef output_size);
// self's shape with the last `out.size()` dims replaced by out.
SymDimVector pooled_nd_shape(const Tensor& self, SymIntArrayRef out);
// divisor_override, if given, must not be 0.
void check_divisor(std::string_view op, std::optional<int64_t> divisor_override);

// The input gradient of max_pool3d_with_indices, adaptive_max_pool2d and adaptive_max_pool3d
// (pool_indices_backward.cpp): grad_output added at `indices`, flat positions within the last
// `spatial_dims` dims of `self` (the forward's input, which gives the shape). Internal: user code
// gets it through autograd.
Tensor max_pool_with_indices_backward(const Tensor& grad_output, const Tensor& self,
                                      const Tensor& indices, int64_t spatial_dims);

}  // namespace kiln
