// Transposed convolution and its gradients, all three from the convolution kernels: the forward
// is the convolution's input gradient (GEMM + col2im, conv_backward.cpp) plus the bias, its
// input gradient a convolution (conv.cpp), its weight gradient the convolution's weight gradient
// with the roles of input and output gradient swapped. See Note [Transposed convolution as a
// convolution's gradient] in src/ops/conv_transpose.cpp.
#include <algorithm>

#include "src/core/tensor_factory.h"
#include "src/kernels/cpu/conv.h"
#include "src/kernels/cpu/copy.h"
#include "src/util/parallel.h"

namespace kiln::cpu {
namespace {

// x [batch, channels, positions] += bias[c] on channel c.
template <typename T>
void add_channel_bias(T* x, const T* bias, int64_t batch, int64_t channels, int64_t positions) {
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, positions));
  parallel::parallel_for(0, batch * channels, grain, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const T b = bias[p % channels];
      T* row = x + p * positions;
      for (int64_t k = 0; k < positions; ++k) row[k] += b;
    }
  });
}

// out[c] = sum over samples and positions of x [batch, channels, positions], each channel's sum
// in sample order, whatever the thread count (Note [Deterministic partial sums] in reduce.cpp).
template <typename T>
void channel_sums(const T* x, T* out, int64_t batch, int64_t channels, int64_t positions) {
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, batch * positions));
  parallel::parallel_for(0, channels, grain, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      T total = 0;
      for (int64_t n = 0; n < batch; ++n) {
        const T* row = x + (n * channels + c) * positions;
        T partial[8] = {};
        int64_t k = 0;
        for (; k + 8 <= positions; k += 8)
          for (int j = 0; j < 8; ++j) partial[j] += row[k + j];
        for (; k < positions; ++k) total += row[k];
        for (int j = 0; j < 8; ++j) total += partial[j];
      }
      out[c] = total;
    }
  });
}

// float32 for the reduced floats (computed in float32, rounded once), else the dtype itself.
ScalarType compute_dtype(ScalarType dt) {
  KILN_CHECK(is_floating(dt), DTypeError,
             "conv_transpose: dtype {} is not supported; use a floating dtype", dtype_name(dt));
  return dt == kFloat64 ? kFloat64 : kFloat32;
}

template <typename F>
void with_compute_type(ScalarType dt, F&& f) {
  if (dt == kFloat64) {
    f(double{});
  } else {
    f(float{});
  }
}

}  // namespace

void conv_transpose(const Tensor& input, const Tensor& weight, const Tensor& bias,
                    const Tensor& out, const ConvGeometry& g) {
  const ScalarType dt = out.dtype(), ct = compute_dtype(dt);
  const Tensor work = dt == ct ? out : empty_tensor(out.sizes(), ct);
  convolution_backward(contiguous_as(input, ct), Tensor(), contiguous_as(weight, ct), work,
                       Tensor(), Tensor(), g);
  if (bias.defined()) {
    const Tensor b = contiguous_as(bias, ct);
    with_compute_type(ct, [&](auto zero) {
      using T = decltype(zero);
      add_channel_bias(work.data_ptr<T>(), b.data_ptr<T>(), g.batch, g.in_channels,
                       in_positions(g));
    });
  }
  if (dt != ct) copy_into(out, work);
}

void conv_transpose_backward(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                             const Tensor& grad_input, const Tensor& grad_weight,
                             const Tensor& grad_bias, const ConvGeometry& g) {
  // grad_out has the shape of the convolution's input, `input` that of its output.
  if (grad_input.defined()) convolution(grad_out, weight, Tensor(), grad_input, g);
  if (grad_weight.defined())
    convolution_backward(input, grad_out, weight, Tensor(), grad_weight, Tensor(), g);
  if (grad_bias.defined()) {
    const ScalarType dt = grad_bias.dtype(), ct = compute_dtype(dt);
    const Tensor dy = contiguous_as(grad_out, ct);
    const Tensor sums = dt == ct ? grad_bias : empty_tensor(grad_bias.sizes(), ct);
    with_compute_type(ct, [&](auto zero) {
      using T = decltype(zero);
      channel_sums(dy.data_ptr<T>(), sums.data_ptr<T>(), g.batch, g.in_channels, in_positions(g));
    });
    if (dt != ct) copy_into(grad_bias, sums);
  }
}

}  // namespace kiln::cpu
