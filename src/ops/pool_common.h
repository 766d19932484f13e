// Argument checks and geometry shared by the pooling ops (pool.cpp) and their gradients
// (pool_backward.cpp).
#pragma once

#include "src/kernels/cpu/conv.h"
#include "src/ops/registry.h"

namespace kiln {

// Validates a windowed pooling call whose input is argument `self_arg`, followed by kernel_size,
// stride, padding and, when `has_dilation`, dilation; returns its geometry. Errors name the op.
cpu::PoolGeometry pool_window_geometry(const OpCall& call, size_t self_arg, bool has_dilation,
                                       bool ceil_mode);
// The same for adaptive pooling: argument `self_arg` is the input, the next one output_size.
cpu::PoolGeometry adaptive_pool_geometry(const OpCall& call, size_t self_arg);
// self's shape with the last two dims replaced by (oh, ow).
DimVector pooled_shape(const Tensor& self, int64_t oh, int64_t ow);

}  // namespace kiln
