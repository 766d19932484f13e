// Convolution and pooling kernels (conv.cpp, pool.cpp). The ops (src/ops/conv.cpp,
// src/ops/pool.cpp) validate the arguments and compute the geometry; conv1d runs as conv2d with a
// height of 1, conv2d as conv3d with a depth of 1 (the depth fields of ConvGeometry keep their
// defaults), and unbatched inputs as a batch of 1.
#pragma once

#include <optional>

#include "kiln/tensor.h"

namespace kiln::cpu {

// t itself when it is contiguous of `dtype`, else a contiguous copy converted to it.
Tensor contiguous_as(const Tensor& t, ScalarType dtype);

// Sizes of one convolution: 2-D, or 3-D where the depth fields (in_d .. dilation_d) are set.
// Only the leading padding matters to the kernel (the trailing padding only changes the output
// size, already in out_d/out_h/out_w).
struct ConvGeometry {
  int64_t batch = 0, in_channels = 0, in_h = 0, in_w = 0;
  int64_t out_channels = 0, kernel_h = 0, kernel_w = 0, out_h = 0, out_w = 0;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  int64_t in_d = 1, out_d = 1, kernel_d = 1, stride_d = 1, pad_d = 0, dilation_d = 1;
};

// Whether the geometry has no depth (a 1-D or 2-D convolution, or a 3-D one whose depth is 1 in
// input, kernel and output, with no depth padding): the planar kernels' optimizations apply.
inline bool is_planar(const ConvGeometry& g) {
  return g.in_d == 1 && g.out_d == 1 && g.kernel_d == 1 && g.pad_d == 0;
}
// Positions of one input or output channel, and kernel taps of one (output, input) channel pair.
inline int64_t in_positions(const ConvGeometry& g) { return g.in_d * g.in_h * g.in_w; }
inline int64_t out_positions(const ConvGeometry& g) { return g.out_d * g.out_h * g.out_w; }
inline int64_t kernel_taps(const ConvGeometry& g) { return g.kernel_d * g.kernel_h * g.kernel_w; }

// Whether a convolution (forward or backward) runs its samples in parallel, each thread calling
// BLAS single-threaded: when there are enough samples for the threads, or each sample's products
// are too small for OpenBLAS's own threading to pay off; never for work too small to pay for
// waking the threads.
bool conv_parallel_over_batch(const ConvGeometry& g);

// out[n, o] = bias[o] + sum over the group's channels of weight[o] correlated with input[n].
// input holds batch * in_channels * in_positions(g) values (any layout of that shape), weight
// [out_channels, in_channels / groups, kernel...], bias [out_channels] or undefined, out a
// contiguous batch * out_channels * out_positions(g) tensor. Floating dtypes.
void convolution(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                 const ConvGeometry& g);

// The gradients of convolution with geometry g, from grad_out (batch * out_channels *
// out_positions(g) values, any layout): grad_input = col2im(W^T x grad_out), grad_weight = sum
// over samples of grad_out x im2col(input)^T, grad_bias = grad_out summed over samples and
// positions. An output left undefined is not computed; defined ones are contiguous, shaped as
// input, weight and [out_channels]. `input` is read only for grad_weight (it may be undefined
// without). Floating dtypes, all tensors of one dtype.
void convolution_backward(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                          const Tensor& grad_input, const Tensor& grad_weight,
                          const Tensor& grad_bias, const ConvGeometry& g);

// Transposed convolution (conv_transpose.cpp): the input gradient of a convolution (Note
// [Transposed convolution as a convolution's gradient] in src/ops/conv_transpose.cpp). g is that
// convolution's geometry: its input is this op's output (g.in_channels = C_out, in_* the output
// sizes), its output this op's input (g.out_channels = C_in, out_* the input sizes), and its
// weight [g.out_channels, g.in_channels / groups, kernel...] is the transposed weight
// [C_in, C_out / groups, kernel...] as it is. out (contiguous) = that input gradient for
// grad_output = input, plus bias[c] (undefined: none) on every position of channel c.
void conv_transpose(const Tensor& input, const Tensor& weight, const Tensor& bias,
                    const Tensor& out, const ConvGeometry& g);
// Its gradients: grad_input = convolution(grad_out, weight), grad_weight = the convolution's
// weight gradient with grad_out as its input and `input` as its output gradient, grad_bias =
// grad_out summed over samples and positions. Undefined outputs are not computed.
void conv_transpose_backward(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                             const Tensor& grad_input, const Tensor& grad_weight,
                             const Tensor& grad_bias, const ConvGeometry& g);

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
