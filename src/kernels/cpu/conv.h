// Convolution and pooling kernels (conv.cpp, pool.cpp). The ops (src/ops/conv.cpp,
// src/ops/pool.cpp) validate the arguments and compute the geometry; conv1d runs as conv2d with a
// height of 1, and unbatched inputs as a batch of 1.
#pragma once

#include <optional>

#include "kiln/tensor.h"

namespace kiln::cpu {

// t itself when it is contiguous of `dtype`, else a contiguous copy converted to it.
Tensor contiguous_as(const Tensor& t, ScalarType dtype);

// Sizes of one 2-D convolution. Only the leading padding matters to the kernel (the trailing
// padding only changes the output size, already in out_h/out_w).
struct ConvGeometry {
  int64_t batch = 0, in_channels = 0, in_h = 0, in_w = 0;
  int64_t out_channels = 0, kernel_h = 0, kernel_w = 0, out_h = 0, out_w = 0;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
};

// Whether a convolution (forward or backward) runs its samples in parallel, each thread calling
// BLAS single-threaded: when there are enough samples for the threads, or each sample's products
// are too small for OpenBLAS's own threading to pay off; never for work too small to pay for
// waking the threads.
bool conv_parallel_over_batch(const ConvGeometry& g);

// out[n, o] = bias[o] + sum over the group's channels of weight[o] correlated with input[n].
// input holds batch * in_channels * in_h * in_w values (any layout of that shape), weight
// [out_channels, in_channels / groups, kernel_h, kernel_w], bias [out_channels] or undefined,
// out a contiguous batch * out_channels * out_h * out_w tensor. Floating dtypes.
void conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
            const ConvGeometry& g);

// The gradients of conv2d with geometry g, from grad_out (batch * out_channels * out_h * out_w
// values, any layout): grad_input = col2im(W^T x grad_out), grad_weight = sum over samples of
// grad_out x im2col(input)^T, grad_bias = grad_out summed over samples and positions. An output
// left undefined is not computed; defined ones are contiguous, shaped as input, weight and
// [out_channels]. Floating dtypes, all tensors of one dtype.
void conv2d_backward(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                     const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                     const ConvGeometry& g);

// Sizes of one 2-D pooling over `planes` independent [in_h, in_w] planes.
struct PoolGeometry {
  int64_t planes = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;
};

// indices may be undefined (values only). Every numeric dtype; NaN wins, as in PyTorch.
void max_pool2d(const Tensor& input, const Tensor& values, const Tensor& indices,
                const PoolGeometry& g);
// Floating dtypes.
void avg_pool2d(const Tensor& input, const Tensor& out, const PoolGeometry& g,
                bool count_include_pad, std::optional<int64_t> divisor_override);
// Floating dtypes; only planes, in_*, out_* of g are used.
void adaptive_avg_pool2d(const Tensor& input, const Tensor& out, const PoolGeometry& g);

// Pooling gradients (pool_backward.cpp): grad_input (contiguous, the input's shape) from grad_out
// (the output's shape, any layout), with the forward's geometry. Floating dtypes.
// max: each grad_out element is added at its window's argmax, indices[o] (a flat position in the
// plane); an index outside the plane raises IndexError.
void max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Tensor& grad_input,
                         const PoolGeometry& g);
// The same without indices: each window's argmax is found again in `input` (the forward's).
void max_pool2d_rescan_backward(const Tensor& grad_out, const Tensor& input,
                                const Tensor& grad_input, const PoolGeometry& g);
void avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_input, const PoolGeometry& g,
                         bool count_include_pad, std::optional<int64_t> divisor_override);
void adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_input,
                                  const PoolGeometry& g);

}  // namespace kiln::cpu
