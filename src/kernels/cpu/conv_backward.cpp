// Gradients of 2-D convolution, as GEMMs the way the forward (conv.cpp) is. Per (sample, group):
//   grad_weight += grad_out [O_g, oH*oW] x cols^T [oH*oW, C_g*kH*kW]   (cols = im2col(input))
//   grad_input   = col2im(W^T [C_g*kH*kW, O_g] x grad_out [O_g, oH*oW])
// and grad_bias sums grad_out over samples and positions.
//
// Samples run in parallel like the forward's, each thread with its own column buffer and its own
// grad_weight accumulator (summed once at the end), BLAS single-threaded inside; a few large
// samples run one after another and leave the threading to OpenBLAS. A 1x1 kernel with stride 1
// and no padding needs no unrolling: the input (and the input gradient) is the column matrix.
#include <cblas.h>
#include <omp.h>

#include <climits>
#include <vector>

#include "src/core/tensor_factory.h"
#include "src/kernels/cpu/conv.h"
#include "src/kernels/cpu/copy.h"
#include "src/kernels/cpu/im2col.h"

namespace kiln::cpu {
namespace {

// c [m, n] = a^T b with a [k, m], b [k, n] (row-major).
void gemm_tn(int m, int n, int k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, n, k, 1.0f, a, m, b, n, 0.0f, c, n);
}
void gemm_tn(int m, int n, int k, const double* a, const double* b, double* c) {
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, n, k, 1.0, a, m, b, n, 0.0, c, n);
}
// c [m, n] += a b^T with a [m, k], b [n, k].
void gemm_nt_acc(int m, int n, int k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, k, b, k, 1.0f, c, n);
}
void gemm_nt_acc(int m, int n, int k, const double* a, const double* b, double* c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0, a, k, b, k, 1.0, c, n);
}

// Sum of n contiguous values with eight independent partial sums, which the compiler turns into
// vector adds without reassociating anything itself.
template <typename T>
T sum_contiguous(const T* x, int64_t n) {
  T acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += x[i + k];
  T total = 0;
  for (; i < n; ++i) total += x[i];
  for (int k = 0; k < 8; ++k) total += acc[k];
  return total;
}

template <typename T>
void bias_grad(const T* go, T* gb, const ConvGeometry& g) {
  const int64_t ohw = g.out_h * g.out_w;
#pragma omp parallel for if (g.out_channels > 1 && g.batch * g.out_channels * ohw > 65536)
  for (int64_t o = 0; o < g.out_channels; ++o) {
    T total = 0;
    for (int64_t n = 0; n < g.batch; ++n)
      total += sum_contiguous(go + (n * g.out_channels + o) * ohw, ohw);
    gb[o] = total;
  }
}

template <typename T>
void conv2d_backward_typed(const T* go, const T* in, const T* w, T* gi, T* gw, T* gb,
                           const ConvGeometry& g) {
  const int64_t cg = g.in_channels / g.groups, og = g.out_channels / g.groups;
  const int64_t kdim = cg * g.kernel_h * g.kernel_w;
  const int64_t ohw = g.out_h * g.out_w;
  const int64_t in_plane = g.in_h * g.in_w;
  const int64_t in_sample = g.in_channels * in_plane;
  const int64_t out_sample = g.out_channels * ohw;
  const int64_t weight_numel = g.out_channels * kdim;
  if (gb != nullptr) bias_grad(go, gb, g);
  if (gi != nullptr) std::fill(gi, gi + g.batch * in_sample, T(0));
  if (gw != nullptr) std::fill(gw, gw + weight_numel, T(0));
  if ((gi == nullptr && gw == nullptr) || g.batch == 0 || ohw == 0 || kdim == 0 || og == 0) return;
  KILN_CHECK(kdim <= INT_MAX && ohw <= INT_MAX && og <= INT_MAX, NotImplementedError,
             "convolution_backward: per-group sizes [{}, {}] x [{}, {}] exceed the 32-bit sizes "
             "BLAS takes",
             og, kdim, kdim, ohw);
  const bool direct = g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 &&
                      g.pad_h == 0 && g.pad_w == 0;
  const bool parallel = conv_parallel_over_batch(g);
  const int threads = parallel ? omp_get_max_threads() : 1;
  const int64_t col_size = direct ? 0 : kdim * ohw;
  std::vector<T> cols(static_cast<size_t>(threads * col_size));
  // Thread t > 0 accumulates its samples' weight gradients in its own buffer; thread 0 in gw.
  std::vector<T> weight_acc(gw != nullptr ? static_cast<size_t>((threads - 1) * weight_numel) : 0,
                            T(0));
  const int m = static_cast<int>(og), hw = static_cast<int>(ohw), k = static_cast<int>(kdim);

#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t n = 0; n < g.batch; ++n) {
    const int t = parallel ? omp_get_thread_num() : 0;
    T* col = cols.data() + t * col_size;
    T* acc = gw == nullptr ? nullptr : t == 0 ? gw : weight_acc.data() + (t - 1) * weight_numel;
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const T* dy = go + n * out_sample + grp * og * ohw;
      const T* w_grp = w + grp * og * kdim;
      if (acc != nullptr) {
        const T* x = in + n * in_sample + grp * cg * in_plane;
        if (!direct) {
          im2col(x, cg, g, col);
          x = col;
        }
        gemm_nt_acc(m, k, hw, dy, x, acc + grp * og * kdim);
      }
      if (gi != nullptr) {
        T* dx = gi + n * in_sample + grp * cg * in_plane;
        if (direct) {
          gemm_tn(k, hw, m, w_grp, dy, dx);
        } else {
          gemm_tn(k, hw, m, w_grp, dy, col);
          col2im_add(col, cg, g, dx);
        }
      }
    }
  }
  if (gw != nullptr && threads > 1) {
#pragma omp parallel for if (weight_numel > 65536)
    for (int64_t i = 0; i < weight_numel; ++i)
      for (int t = 1; t < threads; ++t) gw[i] += weight_acc[(t - 1) * weight_numel + i];
  }
}

template <typename T>
T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

}  // namespace

void conv2d_backward(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                     const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                     const ConvGeometry& g) {
  const ScalarType dt = input.dtype();
  if (dt == kFloat32 || dt == kFloat64) {
    const Tensor dy = contiguous_as(grad_out, dt), x = contiguous_as(input, dt),
                 w = contiguous_as(weight, dt);
    if (dt == kFloat32) {
      conv2d_backward_typed<float>(dy.data_ptr<float>(), x.data_ptr<float>(), w.data_ptr<float>(),
                                   data_or_null<float>(grad_input),
                                   data_or_null<float>(grad_weight), data_or_null<float>(grad_bias),
                                   g);
    } else {
      conv2d_backward_typed<double>(dy.data_ptr<double>(), x.data_ptr<double>(),
                                    w.data_ptr<double>(), data_or_null<double>(grad_input),
                                    data_or_null<double>(grad_weight),
                                    data_or_null<double>(grad_bias), g);
    }
    return;
  }
  KILN_CHECK(dt == kFloat16 || dt == kBFloat16, DTypeError,
             "convolution_backward: dtype {} is not supported; use a floating dtype",
             dtype_name(dt));
  // Reduced floats compute in float32 and round once at the end, as the forward does.
  auto widened = [](const Tensor& t) {
    return t.defined() ? empty_tensor(t.sizes(), kFloat32) : Tensor();
  };
  const Tensor gi = widened(grad_input), gw = widened(grad_weight), gb = widened(grad_bias);
  const Tensor dy = contiguous_as(grad_out, kFloat32), x = contiguous_as(input, kFloat32),
               w = contiguous_as(weight, kFloat32);
  conv2d_backward_typed<float>(dy.data_ptr<float>(), x.data_ptr<float>(), w.data_ptr<float>(),
                               data_or_null<float>(gi), data_or_null<float>(gw),
                               data_or_null<float>(gb), g);
  if (gi.defined()) copy_into(grad_input, gi);
  if (gw.defined()) copy_into(grad_weight, gw);
  if (gb.defined()) copy_into(grad_bias, gb);
}

}  // namespace kiln::cpu
