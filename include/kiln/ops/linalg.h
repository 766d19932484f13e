// Matrix products, convolutions and pooling, as in LibTorch (torch::matmul, torch::conv2d,
// torch::max_pool2d, ...). All take float16, bfloat16, float32 and float64; the matrix products
// also take every integer dtype (modular arithmetic) and max pooling every integer dtype.
// Matrix products reject bool (as PyTorch's CPU mm does) and mixed dtypes (DTypeError).
#pragma once

#include <optional>
#include <utility>

#include "kiln/tensor.h"

namespace kiln {

// ---- matrix products ----

// [n, k] x [k, m] -> [n, m].
Tensor mm(const Tensor& self, const Tensor& mat2);
// [b, n, k] x [b, k, m] -> [b, n, m].
Tensor bmm(const Tensor& self, const Tensor& mat2);
// beta * self + alpha * (mat1 @ mat2); self broadcasts to [n, m]. With beta = 0 self is not
// read (its NaNs do not propagate). Integer dtypes need integer alpha and beta.
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
             const Scalar& alpha = 1);
// torch.matmul: 1-D x 1-D is a dot product (0-dim result), a 1-D operand is treated as a row
// (first) or column (second) vector and its dim removed from the result, and leading batch
// dims broadcast.
Tensor matmul(const Tensor& self, const Tensor& other);
// input @ weight^T + bias, for input [*, in], weight [out, in], bias [out] (optional: pass an
// undefined Tensor for none).
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});

// ---- convolution ----
// Input [N, C_in, L] (conv1d) or [N, C_in, H, W] (conv2d), or the same without N (unbatched).
// Weight [C_out, C_in / groups, kL] or [C_out, C_in / groups, kH, kW]; bias [C_out] or
// undefined. One-element stride/padding/dilation lists apply to every spatial dim.

// padding = Same: output as large as the input (zeros added, the odd one at the end; stride
// must be 1). Valid: no padding.
enum class ConvPadding { Valid, Same };

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef dilation = 1,
              int64_t groups = 1);
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              ConvPadding padding, IntArrayRef dilation = 1, int64_t groups = 1);
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef dilation = 1,
              int64_t groups = 1);
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              ConvPadding padding, IntArrayRef dilation = 1, int64_t groups = 1);

// ---- pooling ----
// Input [N, C, H, W] or [C, H, W]. An empty stride means stride = kernel_size. Padding is at
// most half the kernel. ceil_mode rounds the output size up (a window must still start inside
// the input or its left padding).

Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = 0, IntArrayRef dilation = 1, bool ceil_mode = false);
// (values, indices): indices (int64) are flat positions h * W + w within each input plane.
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size,
                                                  IntArrayRef stride = {}, IntArrayRef padding = 0,
                                                  IntArrayRef dilation = 1, bool ceil_mode = false);
// count_include_pad: zeros of the padding count in the divisor; divisor_override replaces it.
Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = 0, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
// Output [.., oH, oW]: window i spans [floor(i * H / oH), ceil((i + 1) * H / oH)).
Tensor adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size);

}  // namespace kiln
