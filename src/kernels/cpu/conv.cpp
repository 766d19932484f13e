// Convolution as im2col + GEMM: each (sample, group) unrolls its input windows into a
// [C_g * kH * kW, oH * oW] matrix and multiplies the group's [O_g, C_g * kH * kW] weights by it,
// or does the same one kernel row at a time (Note [Convolution by kernel rows]). A 3-D
// convolution unrolls [C_g * kD * kH * kW, oD * oH * oW] (vol2col) the same way, never by rows.
// Samples run in parallel, each thread with its own column buffer, and then call BLAS
// single-threaded (OpenBLAS does so inside a parallel region); a few large samples leave the
// threading to OpenBLAS.
//
// Note [Convolution by kernel rows]
// When a kernel row's unrolled depth C_g * kW is enough for an efficient GEMM
// (conv_by_kernel_rows), the products run one kernel row i at a time: the input rows that kernel
// row i reads for the output rows kernel_row_outputs(g, i) are unrolled into a [C_g * kW, n_i]
// matrix (im2col_kernel_row) and multiplied with that kernel row's weights, an [O_g, C_g * kW]
// block of the weights reordered once per call to [O, kH, C_g, kW] (weights_by_kernel_rows); the
// products add up in the output. Output rows for which kernel row i would read the vertical
// padding are left out of its product instead of multiplying zeros (with 5x5 kernels and padding
// 2 on 14x14 inputs, 9% of the work), and the unrolled matrix, kH times smaller than a full
// im2col, stays in cache from being written to being read. The backward (conv_backward.cpp)
// splits its products the same way. A shallow input (a first layer's single channel) keeps the
// full im2col: a GEMM of depth 5 would not pay.

#include <climits>
#include <vector>

#include "src/core/tensor_factory.h"
#include "src/kernels/cpu/blas_typed.h"
#include "src/kernels/cpu/conv.h"
#include "src/kernels/cpu/copy.h"
#include "src/kernels/cpu/im2col.h"
#include "src/kernels/cpu/shallow_gemm.h"
#include "src/util/parallel.h"

namespace kiln::cpu {

Tensor contiguous_as(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype && t.is_contiguous()) return t;
  Tensor c = empty_tensor(t.sizes(), dtype);
  copy_into(c, t);
  return c;
}

bool conv_parallel_over_batch(const ConvGeometry& g) {
  const int64_t per_sample = g.out_channels * out_positions(g) * (g.in_channels / g.groups) *
                             kernel_taps(g);  // multiply-adds
  const int64_t max_threads = parallel::num_threads();
  return g.batch > 1 && max_threads > 1 && g.batch * per_sample >= (int64_t{1} << 16) &&
         (g.batch >= max_threads || per_sample < (int64_t{1} << 21));
}

namespace {

template <typename T>
void convolution_typed(const Tensor& input, const Tensor& weight, const Tensor& bias,
                       const Tensor& out, const ConvGeometry& g) {
  const int64_t cg = g.in_channels / g.groups, og = g.out_channels / g.groups;
  const int64_t kdim = cg * kernel_taps(g);
  const int64_t ohw = out_positions(g);  // by kernel rows only when planar: oH * oW
  const int64_t in_sample = g.in_channels * in_positions(g);
  const int64_t out_sample = g.out_channels * ohw;
  T* po = out.data_ptr<T>();
  if (g.batch == 0 || out_sample == 0) return;
  KILN_CHECK(kdim <= INT_MAX && ohw <= INT_MAX && og <= INT_MAX, NotImplementedError,
             "convolution: per-group sizes [{}, {}] x [{}, {}] exceed the 32-bit sizes BLAS takes",
             og, kdim, kdim, ohw);
  const T* pi = input.data_ptr<T>();
  const T* pw = weight.data_ptr<T>();
  const T* pb = bias.defined() ? bias.data_ptr<T>() : nullptr;
  const bool direct = conv_reads_input_directly(g);
  const bool by_rows = !direct && kdim > 0 && conv_by_kernel_rows(g);
  const int64_t row_depth = cg * g.kernel_w;  // the depth of one kernel row's product
  const int64_t col_size = direct ? 0 : by_rows ? row_depth * ohw : kdim * ohw;
  std::vector<T> weight_rows(by_rows ? static_cast<size_t>(g.out_channels * kdim) : 0);
  if (by_rows) weights_by_kernel_rows(pw, g, weight_rows.data());
  const bool parallel = conv_parallel_over_batch(g);

  auto run_one = [&](int64_t n, T* col) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const T* in = pi + n * in_sample + grp * cg * in_positions(g);
      T* dst = po + n * out_sample + grp * og * ohw;
      if (kdim == 0 || by_rows) {
        // Start from the bias (or zeros) and add each kernel row's product.
        for (int64_t o = 0; o < og; ++o)
          std::fill(dst + o * ohw, dst + (o + 1) * ohw, pb != nullptr ? pb[grp * og + o] : T(0));
      }
      if (kdim == 0) continue;
      if (by_rows) {
        for (int64_t i = 0; i < g.kernel_h; ++i) {
          const ValidRange rows = kernel_row_outputs(g, i);
          if (rows.lo == rows.hi) continue;
          const int64_t cols_i = (rows.hi - rows.lo) * g.out_w;
          im2col_kernel_row(in, cg, g, i, rows, col);
          blas_gemm(false, false, static_cast<int>(og), static_cast<int>(cols_i),
                    static_cast<int>(row_depth),
                    weight_rows.data() + grp * og * kdim + i * row_depth, static_cast<int>(kdim),
                    col, static_cast<int>(cols_i), T(1), dst + rows.lo * g.out_w,
                    static_cast<int>(ohw));
        }
        continue;
      }
      const T* b = in;
      if (!direct) {
        vol2col(in, cg, g, col);
        b = col;
      }
      if (kdim <= kMaxShallowDepth) {  // Note [Shallow products] in shallow_gemm.h
        shallow_product(og, ohw, kdim, pw + grp * og * kdim, kdim, b, ohw,
                        pb != nullptr ? pb + grp * og : nullptr, dst, ohw);
        continue;
      }
      blas_gemm(false, false, static_cast<int>(og), static_cast<int>(ohw), static_cast<int>(kdim),
                pw + grp * og * kdim, static_cast<int>(kdim), b, static_cast<int>(ohw), T(0), dst,
                static_cast<int>(ohw));
      if (pb != nullptr)
        for (int64_t o = 0; o < og; ++o)
          for (int64_t k = 0; k < ohw; ++k) dst[o * ohw + k] += pb[grp * og + o];
    }
  };
  // Each chunk of samples has its own im2col buffer. Inside a chunk OpenBLAS runs on the chunk's
  // thread (Note [The intra-op pool]); a serial run leaves OpenBLAS its own threads.
  auto run_samples = [&](int64_t begin, int64_t end) {
    std::vector<T> col(static_cast<size_t>(col_size));
    for (int64_t n = begin; n < end; ++n) run_one(n, col.data());
  };
  if (parallel) {
    parallel::parallel_for(0, g.batch, 1, run_samples);
  } else {
    run_samples(0, g.batch);
  }
}

}  // namespace

void convolution(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                 const ConvGeometry& g) {
  const ScalarType dt = out.dtype();
  if (dt == kFloat32 || dt == kFloat64) {
    const Tensor b = bias.defined() ? contiguous_as(bias, dt) : Tensor();
    if (dt == kFloat32) {
      convolution_typed<float>(contiguous_as(input, dt), contiguous_as(weight, dt), b, out, g);
    } else {
      convolution_typed<double>(contiguous_as(input, dt), contiguous_as(weight, dt), b, out, g);
    }
    return;
  }
  KILN_CHECK(dt == kFloat16 || dt == kBFloat16, DTypeError,
             "convolution: dtype {} is not supported; use a floating dtype", dtype_name(dt));
  // Reduced floats compute in float32 and round once at the end.
  Tensor out32 = empty_tensor(out.sizes(), kFloat32);
  convolution_typed<float>(contiguous_as(input, kFloat32), contiguous_as(weight, kFloat32),
                           bias.defined() ? contiguous_as(bias, kFloat32) : Tensor(), out32, g);
  copy_into(out, out32);
}

}  // namespace kiln::cpu
