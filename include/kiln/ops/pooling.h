// Pooling, as in LibTorch (torch::max_pool2d, torch::adaptive_max_pool3d, ...): 1-d inputs
// [N, C, L] or [C, L], 2-d [N, C, H, W] or [C, H, W], 3-d [N, C, D, H, W] or [C, D, H, W]; only
// the batch may be empty. Floating dtypes; max pooling also takes every integer dtype.
//
// Windowed pools: a one-element kernel_size/stride/padding/dilation list applies to every spatial
// dim; an empty stride means stride = kernel_size. Padding is at most half the kernel. ceil_mode
// rounds the output size up (a window must still start inside the input or its left padding).
// Adaptive pools: window i along a dim of size L pooled to n spans
// [floor(i * L / n), ceil((i + 1) * L / n)).
// Indices (int64) are flat positions within each input plane or box: w (1-d), h * W + w (2-d),
// (d * H + h) * W + w (3-d), of each window's first largest element (or its last NaN).
#pragma once

#include <optional>
#include <utility>

#include "kiln/tensor.h"

namespace kiln {

// ---- max pooling ----

Tensor max_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = 0, IntArrayRef dilation = 1, bool ceil_mode = false);
Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = 0, IntArrayRef dilation = 1, bool ceil_mode = false);
Tensor max_pool3d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = 0, IntArrayRef dilation = 1, bool ceil_mode = false);
// (values, indices).
std::pair<Tensor, Tensor> max_pool1d_with_indices(const Tensor& self, IntArrayRef kernel_size,
                                                  IntArrayRef stride = {}, IntArrayRef padding = 0,
                                                  IntArrayRef dilation = 1, bool ceil_mode = false);
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size,
                                                  IntArrayRef stride = {}, IntArrayRef padding = 0,
                                                  IntArrayRef dilation = 1, bool ceil_mode = false);
std::pair<Tensor, Tensor> max_pool3d_with_indices(const Tensor& self, IntArrayRef kernel_size,
                                                  IntArrayRef stride = {}, IntArrayRef padding = 0,
                                                  IntArrayRef dilation = 1, bool ceil_mode = false);

// ---- average pooling ----
// count_include_pad: zeros of the padding count in the divisor; divisor_override replaces it
// (avg_pool1d has none, as in PyTorch).

Tensor avg_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = 0, bool ceil_mode = false, bool count_include_pad = true);
Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = 0, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor avg_pool3d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = 0, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);

// ---- adaptive pooling ----
// output_size: one size per spatial dim, or one for all; 0 gives an empty output.

Tensor adaptive_avg_pool1d(const Tensor& self, IntArrayRef output_size);
Tensor adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size);
Tensor adaptive_avg_pool3d(const Tensor& self, IntArrayRef output_size);
// (values, indices).
std::pair<Tensor, Tensor> adaptive_max_pool1d(const Tensor& self, IntArrayRef output_size);
std::pair<Tensor, Tensor> adaptive_max_pool2d(const Tensor& self, IntArrayRef output_size);
std::pair<Tensor, Tensor> adaptive_max_pool3d(const Tensor& self, IntArrayRef output_size);

}  // namespace kiln
