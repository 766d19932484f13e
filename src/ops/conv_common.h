// Argument helpers shared by the convolution ops (conv.cpp) and their gradient (conv_backward.cpp).
#pragma once

#include <array>
#include <string_view>

#include "kiln/array_ref.h"
#include "kiln/sym_int.h"

namespace kiln {

// A stride/padding/dilation list as (H, W): one element applies to every spatial dim; for a
// 1-D convolution (spatial = 1) H is `fill` and W the list's value. ValueError otherwise.
std::array<int64_t, 2> conv_spatial_arg(std::string_view op, std::string_view what, IntArrayRef v,
                                        int spatial, int64_t fill);

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
