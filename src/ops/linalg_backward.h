// The backward ops of the linalg family: gradients of convolution and pooling as table ops with
// their own kernels (src/kernels/cpu/conv_backward.cpp, pool_backward.cpp). The derivative
// formulas (src/autograd/formulas/linalg.cpp) call them; each has a derivative of its own, so
// higher-order gradients work. Internal, like PyTorch's at::convolution_backward: user code gets
// them through autograd.
#pragma once

#include <array>
#include <optional>
#include <tuple>

#include "kiln/tensor.h"

namespace kiln {

// The gradients of conv1d/conv2d/conv3d (batched or not) with respect to input, weight and bias,
// for the forward's stride, dilation and groups and its leading padding per spatial dim (see Note
// [Convolution backward padding] in src/ops/conv_backward.cpp). Outputs whose output_mask entry
// is false are not computed and come back as empty [0] tensors.
std::tuple<Tensor, Tensor, Tensor> convolution_backward(const Tensor& grad_output,
                                                        const Tensor& input, const Tensor& weight,
                                                        IntArrayRef stride, IntArrayRef padding,
                                                        IntArrayRef dilation, int64_t groups,
                                                        std::array<bool, 3> output_mask);
// The gradients of conv_transpose1d/2d/3d with respect to input, weight and bias, for the
// forward's arguments (Note [Transposed convolution as a convolution's gradient] in
// src/ops/conv_transpose.cpp); output_mask as for convolution_backward.
std::tuple<Tensor, Tensor, Tensor> conv_transpose_backward(
    const Tensor& grad_output, const Tensor& input, const Tensor& weight, IntArrayRef stride,
    IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation,
    std::array<bool, 3> output_mask);

// The input gradient of max_pool2d: grad_output added at each window's argmax in `self` (the
// forward's input), found again.
Tensor max_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                           bool ceil_mode);
// The input gradient of max_pool2d_with_indices: grad_output added at `indices` (what the
// forward returned). `self` (the forward's input) gives the shape.
Tensor max_pool2d_with_indices_backward(const Tensor& grad_output, const Tensor& self,
                                        IntArrayRef kernel_size, IntArrayRef stride,
                                        IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                        const Tensor& indices);
// The input gradients of avg_pool2d and adaptive_avg_pool2d, same arguments as the forward.
Tensor avg_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                           bool count_include_pad, std::optional<int64_t> divisor_override);
Tensor adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& self);

}  // namespace kiln
