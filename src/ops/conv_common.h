// Argument helpers shared by the convolution ops (conv.cpp) and their gradient (conv_backward.cpp).
#pragma once

#include <array>
#include <string_view>

#include "kiln/array_ref.h"

namespace kiln {

// A stride/padding/dilation list as (H, W): one element applies to every spatial dim; for a
// 1-D convolution (spatial = 1) H is `fill` and W the list's value. ValueError otherwise.
std::array<int64_t, 2> conv_spatial_arg(std::string_view op, std::string_view what, IntArrayRef v,
                                        int spatial, int64_t fill);

}  // namespace kiln
