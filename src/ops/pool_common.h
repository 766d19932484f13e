// Argument checks and shape rules shared by the pooling ops (pool.cpp) and their gradients
// (pool_backward.cpp).
#pragma once

#include "src/kernels/cpu/conv.h"
#include "src/ops/registry.h"

namespace kiln {

// One pooling call's checked arguments, with the sizes that derive from the input's in SymInt so
// that a trace with symbolic sizes gets symbolic output sizes (Note [Symbolic convolution output
// size] in conv_common.h). Meta functions use the sizes; kernels take geometry().
struct PoolShape {
  SymInt in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;

  // The kernel's geometry for input `self` (concrete sizes only: kernels never see symbols).
  cpu::PoolGeometry geometry(const Tensor& self) const;
};

// Validates a windowed pooling call whose input is argument `self_arg`, followed by kernel_size,
// stride, padding and, when `has_dilation`, dilation; returns its shape. Errors name the op.
PoolShape pool_window_shape(const OpCall& call, size_t self_arg, bool has_dilation, bool ceil_mode);
// The same for adaptive pooling: argument `self_arg` is the input, the next one output_size.
PoolShape adaptive_pool_shape(const OpCall& call, size_t self_arg);
// The pooled size of one dim of size `in` (PyTorch's rule, ceil_mode included).
SymInt pooled_size(SymInt in, int64_t k, int64_t pad, int64_t stride, int64_t dilation,
                   bool ceil_mode);
// self's shape with the last two dims replaced by (oh, ow).
SymDimVector pooled_shape(const Tensor& self, SymInt oh, SymInt ow);

}  // namespace kiln
