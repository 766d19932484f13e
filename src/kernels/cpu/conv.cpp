// 2-D convolution as im2col + GEMM: each (sample, group) unrolls its input windows into a
// [C_g * kH * kW, oH * oW] matrix and multiplies the group's [O_g, C_g * kH * kW] weights by it.
// Samples run in parallel, each thread with its own column buffer, and then call BLAS
// single-threaded (OpenBLAS does so inside a parallel region); a few large samples leave the
// threading to OpenBLAS.
#include <cblas.h>
#include <omp.h>

#include <climits>
#include <vector>

#include "src/core/tensor_factory.h"
#include "src/kernels/cpu/conv.h"
#include "src/kernels/cpu/copy.h"
#include "src/kernels/cpu/im2col.h"

namespace kiln::cpu {

Tensor contiguous_as(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype && t.is_contiguous()) return t;
  Tensor c = empty_tensor(t.sizes(), dtype);
  copy_into(c, t);
  return c;
}

bool conv_parallel_over_batch(const ConvGeometry& g) {
  const int64_t per_sample = g.out_channels * g.out_h * g.out_w * (g.in_channels / g.groups) *
                             g.kernel_h * g.kernel_w;  // multiply-adds
  const int64_t max_threads = omp_get_max_threads();
  return g.batch > 1 && max_threads > 1 && g.batch * per_sample >= (int64_t{1} << 16) &&
         (g.batch >= max_threads || per_sample < (int64_t{1} << 21));
}

namespace {

void gemm_nn(int m, int n, int k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}
void gemm_nn(int m, int n, int k, const double* a, const double* b, double* c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a, k, b, n, 0.0, c, n);
}

template <typename T>
void conv2d_typed(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                  const ConvGeometry& g) {
  const int64_t cg = g.in_channels / g.groups, og = g.out_channels / g.groups;
  const int64_t kdim = cg * g.kernel_h * g.kernel_w;
  const int64_t ohw = g.out_h * g.out_w;
  const int64_t in_sample = g.in_channels * g.in_h * g.in_w;
  const int64_t out_sample = g.out_channels * ohw;
  T* po = out.data_ptr<T>();
  if (g.batch == 0 || out_sample == 0) return;
  KILN_CHECK(kdim <= INT_MAX && ohw <= INT_MAX && og <= INT_MAX, NotImplementedError,
             "conv2d: per-group sizes [{}, {}] x [{}, {}] exceed the 32-bit sizes BLAS takes", og,
             kdim, kdim, ohw);
  const T* pi = input.data_ptr<T>();
  const T* pw = weight.data_ptr<T>();
  const T* pb = bias.defined() ? bias.data_ptr<T>() : nullptr;
  // A 1x1 kernel with stride 1 and no padding reads the input as it is: no unrolling.
  const bool direct = g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 &&
                      g.pad_h == 0 && g.pad_w == 0;
  const bool parallel = conv_parallel_over_batch(g);
  const int threads = parallel ? omp_get_max_threads() : 1;
  std::vector<T> cols(direct ? 0 : static_cast<size_t>(threads) * static_cast<size_t>(kdim * ohw));

#pragma omp parallel for if (parallel)
  for (int64_t n = 0; n < g.batch; ++n) {
    T* col = cols.data() + (parallel ? omp_get_thread_num() : 0) * (direct ? 0 : kdim * ohw);
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const T* in = pi + n * in_sample + grp * cg * g.in_h * g.in_w;
      T* dst = po + n * out_sample + grp * og * ohw;
      if (kdim == 0) {
        for (int64_t i = 0; i < og * ohw; ++i) dst[i] = T(0);
        continue;
      }
      const T* b = in;
      if (!direct) {
        im2col(in, cg, g, col);
        b = col;
      }
      gemm_nn(static_cast<int>(og), static_cast<int>(ohw), static_cast<int>(kdim),
              pw + grp * og * kdim, b, dst);
    }
    if (pb != nullptr) {
      for (int64_t o = 0; o < g.out_channels; ++o) {
        T* dst = po + n * out_sample + o * ohw;
        for (int64_t i = 0; i < ohw; ++i) dst[i] += pb[o];
      }
    }
  }
}

}  // namespace

void conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
            const ConvGeometry& g) {
  const ScalarType dt = out.dtype();
  if (dt == kFloat32 || dt == kFloat64) {
    const Tensor b = bias.defined() ? contiguous_as(bias, dt) : Tensor();
    if (dt == kFloat32) {
      conv2d_typed<float>(contiguous_as(input, dt), contiguous_as(weight, dt), b, out, g);
    } else {
      conv2d_typed<double>(contiguous_as(input, dt), contiguous_as(weight, dt), b, out, g);
    }
    return;
  }
  KILN_CHECK(dt == kFloat16 || dt == kBFloat16, DTypeError,
             "conv2d: dtype {} is not supported; use a floating dtype", dtype_name(dt));
  // Reduced floats compute in float32 and round once at the end.
  Tensor out32 = empty_tensor(out.sizes(), kFloat32);
  conv2d_typed<float>(contiguous_as(input, kFloat32), contiguous_as(weight, kFloat32),
                      bias.defined() ? contiguous_as(bias, kFloat32) : Tensor(), out32, g);
  copy_into(out, out32);
}

}  // namespace kiln::cpu
