// Matrix products and convolutions, as in LibTorch (torch::matmul, torch::conv2d, ...), and the
// pooling ops (kiln/ops/pooling.h, included). All take float16, bfloat16, float32 and float64;
// the matrix products also take every integer dtype (modular arithmetic) and max pooling every
// integer dtype. Matrix products reject bool (as PyTorch's CPU mm does) and mixed dtypes
// (DTypeError).
#pragma once

#include <optional>
#include <utility>

#include "kiln/ops/pooling.h"
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
// Input [N, C_in, L] (conv1d), [N, C_in, H, W] (conv2d) or [N, C_in, D, H, W] (conv3d), or the
// same without N (unbatched). Weight [C_out, C_in / groups, *kernel]; bias [C_out] or
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
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef dilation = 1,
              int64_t groups = 1);
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              ConvPadding padding, IntArrayRef dilation = 1, int64_t groups = 1);

// Transposed convolutions ("deconvolutions"), ATen's argument order. Input [N, C_in, *spatial]
// or [C_in, *spatial]; weight [C_in, C_out / groups, *kernel]; bias [C_out] or undefined. Each
// spatial size becomes (in - 1) * stride - 2 * padding + dilation * (kernel - 1) +
// output_padding + 1; output_padding must be smaller than the stride or the dilation. The
// input gradient of the convolution with the same arguments.
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        IntArrayRef stride = 1, IntArrayRef padding = 0,
                        IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        IntArrayRef stride = 1, IntArrayRef padding = 0,
                        IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        IntArrayRef stride = 1, IntArrayRef padding = 0,
                        IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);

}  // namespace kiln
