// Argument helpers shared by the convolution ops (conv.cpp, conv_transpose.cpp) and their
// gradients (conv_backward.cpp).
#pragma once

#include <array>
#include <string_view>

#include "kiln/array_ref.h"
#include "kiln/sym_int.h"
#include "src/kernels/cpu/conv.h"

namespace kiln {

// A stride/padding/dilation list as (D, H, W): one element applies to every spatial dim; the
// dims a convolution with fewer spatial dims lacks (D for 2-D, D and H for 1-D) are `fill`.
// ValueError for a list of any other length.
std::array<int64_t, 3> conv_spatial_arg(std::string_view op, std::string_view what, IntArrayRef v,
                                        int spatial, int64_t fill);

class OpRegistry;
// conv_transpose1d/2d/3d and conv_transpose_backward (conv_transpose.cpp), registered by
// register_conv_ops.
void register_conv_transpose_ops(OpRegistry& r);

// The kernel geometry of a convolution from per-dim sizes in (D, H, W) order, as
// conv_spatial_arg orders them (a dim the convolution lacks: size 1, no padding).
struct ConvSizes {
  std::array<int64_t, 3> in{1, 1, 1}, kernel{1, 1, 1}, out{1, 1, 1};
  std::array<int64_t, 3> stride{1, 1, 1}, pad{0, 0, 0}, dilation{1, 1, 1};
};
cpu::ConvGeometry conv_geometry(int64_t batch, int64_t in_channels, int64_t out_channels,
                                int64_t groups, const ConvSizes& s);

// Note [Symbolic convolution output size]
// The number of output positions along one spatial dim of a padded input of size `padded`
// (input + both paddings): (padded - dilation * (kernel - 1) - 1) // stride + 1. `/` on SymInt is
// floor division, so with a symbolic input size this is the expression the compiled graph
// evaluates, e.g. "(s1 + -3)//2 + 1" for kernel 3, stride 2, no padding. Callers first check
// (guard) that the dilated kernel fits, so the numerator is never negative. Pooling uses the same
// rule (pool.cpp, plus its ceil_mode adjustment).
inline SymInt conv_output_size(SymInt padded, SymInt kernel, int64_t stride, int64_t dilation) {
  return (padded - dilation * (kernel - 1) - 1) / stride + 1;
}

}  // namespace kiln
