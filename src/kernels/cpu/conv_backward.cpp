// Gradients of convolution, as GEMMs the way the forward (conv.cpp) is. Per (sample, group):
//   grad_weight += grad_out [O_g, oH*oW] x cols^T [oH*oW, C_g*kH*kW]   (cols = im2col(input))
//   grad_input   = col2im(W^T [C_g*kH*kW, O_g] x grad_out [O_g, oH*oW])
// (3-D: oD*oH*oW positions, C_g*kD*kH*kW rows, vol2col and col2vol_add)
// and grad_bias sums grad_out over samples and positions. Where the forward runs per kernel row
// (Note [Convolution by kernel rows] in conv.cpp), so do both products: kernel row i's block of
// the weight gradient gets grad_out's rows kernel_row_outputs(g, i) times that kernel row's
// unrolled input, and its block of W^T x grad_out is folded back into the input gradient.
//
// Samples run in parallel like the forward's, each thread with its own column buffer and its own
// grad_weight accumulator (summed once at the end), BLAS single-threaded inside; a few large
// samples run one after another and leave the threading to OpenBLAS. A 1x1 kernel with stride 1
// and no padding needs no unrolling: the input (and the input gradient) is the column matrix.
#include <algorithm>
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
namespace {

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
  const int64_t ohw = out_positions(g);
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, g.batch * ohw));
  parallel::parallel_for(0, g.out_channels, grain, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      T total = 0;
      for (int64_t n = 0; n < g.batch; ++n)
        total += sum_contiguous(go + (n * g.out_channels + o) * ohw, ohw);
      gb[o] = total;
    }
  });
}

// Weight gradient blocks [O, kH, C_g, kW] (by kernel rows) added into grad_weight's
// [O, C_g, kH, kW] layout.
template <typename T>
void add_kernel_rows_to_weights(const T* rows, const ConvGeometry& g, T* gw) {
  const int64_t cg = g.in_channels / g.groups, kh = g.kernel_h, kw = g.kernel_w;
  for (int64_t o = 0; o < g.out_channels; ++o)
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t i = 0; i < kh; ++i) {
        T* dst = gw + ((o * cg + c) * kh + i) * kw;
        const T* src = rows + ((o * kh + i) * cg + c) * kw;
        for (int64_t j = 0; j < kw; ++j) dst[j] += src[j];
      }
}

template <typename T>
void convolution_backward_typed(const T* go, const T* in, const T* w, T* gi, T* gw, T* gb,
                                const ConvGeometry& g) {
  const int64_t cg = g.in_channels / g.groups, og = g.out_channels / g.groups;
  const int64_t kdim = cg * kernel_taps(g);
  const int64_t ohw = out_positions(g);  // by kernel rows only when planar: oH * oW
  const int64_t in_plane = in_positions(g);
  const int64_t in_sample = g.in_channels * in_plane;
  const int64_t out_sample = g.out_channels * ohw;
  const int64_t weight_numel = g.out_channels * kdim;
  const bool direct = conv_reads_input_directly(g);
  const bool by_rows = !direct && conv_by_kernel_rows(g);
  const bool no_products = g.batch == 0 || ohw == 0 || kdim == 0 || og == 0;
  // Note [Shallow products] in shallow_gemm.h: a shallow weight gradient sums each row of
  // grad_out for the bias gradient in the same pass. (A per-kernel-row product is never shallow.)
  const bool shallow = kdim <= kMaxShallowDepth;
  const bool fused_bias = gb != nullptr && gw != nullptr && shallow && !no_products;
  if (gb != nullptr && !fused_bias) bias_grad(go, gb, g);
  if (gw != nullptr) std::fill(gw, gw + weight_numel, T(0));
  if ((gi == nullptr && gw == nullptr) || no_products) {
    if (gi != nullptr) std::fill(gi, gi + g.batch * in_sample, T(0));
    return;
  }
  KILN_CHECK(kdim <= INT_MAX && ohw <= INT_MAX && og <= INT_MAX, NotImplementedError,
             "convolution_backward: per-group sizes [{}, {}] x [{}, {}] exceed the 32-bit sizes "
             "BLAS takes",
             og, kdim, kdim, ohw);
  const int64_t row_depth = cg * g.kernel_w;
  // Note [Deterministic weight gradients]
  // The weight (and fused bias) gradient sums a product per sample. The samples are cut into
  // `pieces` runs of consecutive samples by size alone, each summed into its own accumulator, and
  // the accumulators are added in piece order: the same sums in the same order whatever the thread
  // count (Note [The intra-op pool]). Pieces run in parallel; extra accumulators are capped at
  // kAccumulatorBytes.
  const bool parallel = conv_parallel_over_batch(g);
  constexpr int64_t kMaxPieces = 8, kAccumulatorBytes = int64_t{32} << 20;
  int64_t pieces = std::min<int64_t>(g.batch, kMaxPieces);
  if (gw != nullptr)
    pieces =
        std::clamp<int64_t>(kAccumulatorBytes / (weight_numel * int64_t{sizeof(T)}), 1, pieces);
  const int64_t col_size = direct ? 0 : by_rows ? row_depth * ohw : kdim * ohw;
  std::vector<T> weight_rows(by_rows && gi != nullptr ? static_cast<size_t>(weight_numel) : 0);
  if (!weight_rows.empty()) weights_by_kernel_rows(w, g, weight_rows.data());
  // Weight gradient accumulators, one per piece: by kernel rows ([O, kH, C_g, kW]) when the
  // products run that way, else grad_weight's own layout, where piece 0 accumulates directly.
  const int64_t acc_count = gw == nullptr ? 0 : by_rows ? pieces : pieces - 1;
  std::vector<T> weight_acc(static_cast<size_t>(acc_count * weight_numel), T(0));
  // Bias gradient accumulators, one per piece, when it is summed with the weight gradient.
  std::vector<T> bias_acc(fused_bias ? static_cast<size_t>(pieces * g.out_channels) : 0, T(0));
  const int m = static_cast<int>(og), hw = static_cast<int>(ohw), k = static_cast<int>(kdim);

  auto run_one = [&](int64_t n, int64_t t, T* col) {
    T* acc = nullptr;
    if (gw != nullptr) {
      acc = by_rows  ? weight_acc.data() + t * weight_numel
            : t == 0 ? gw
                     : weight_acc.data() + (t - 1) * weight_numel;
    }
    // The input gradient is folded (added) into, except where a 1x1 product writes it whole.
    if (gi != nullptr && !direct) std::fill(gi + n * in_sample, gi + (n + 1) * in_sample, T(0));
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      const T* dy = go + n * out_sample + grp * og * ohw;
      const T* x = in + n * in_sample + grp * cg * in_plane;
      T* dx = gi == nullptr ? nullptr : gi + n * in_sample + grp * cg * in_plane;
      if (by_rows) {
        for (int64_t i = 0; i < g.kernel_h; ++i) {
          const ValidRange rows = kernel_row_outputs(g, i);
          if (rows.lo == rows.hi) continue;
          const int cols_i = static_cast<int>((rows.hi - rows.lo) * g.out_w);
          const T* dy_rows = dy + rows.lo * g.out_w;
          const int64_t block = grp * og * kdim + i * row_depth;  // [O_g, C_g*kW], ld kdim
          if (acc != nullptr) {
            im2col_kernel_row(x, cg, g, i, rows, col);
            blas_gemm(false, true, m, static_cast<int>(row_depth), cols_i, dy_rows, hw, col, cols_i,
                      T(1), acc + block, k);
          }
          if (dx != nullptr) {
            blas_gemm(true, false, static_cast<int>(row_depth), cols_i, m,
                      weight_rows.data() + block, k, dy_rows, hw, T(0), col, cols_i);
            col2im_kernel_row_add(col, cg, g, i, rows, dx);
          }
        }
        continue;
      }
      if (acc != nullptr) {
        const T* b = x;
        if (!direct) {
          vol2col(x, cg, g, col);
          b = col;
        }
        if (shallow) {
          shallow_product_nt<T>(
              m, k, hw, dy, hw, b, hw, acc + grp * og * kdim, k,
              fused_bias ? bias_acc.data() + t * g.out_channels + grp * og : nullptr);
        } else {
          blas_gemm(false, true, m, k, hw, dy, hw, b, hw, T(1), acc + grp * og * kdim, k);
        }
      }
      if (dx != nullptr) {
        if (direct) {
          blas_gemm(true, false, k, hw, m, w + grp * og * kdim, k, dy, hw, T(0), dx, hw);
        } else {
          blas_gemm(true, false, k, hw, m, w + grp * og * kdim, k, dy, hw, T(0), col, hw);
          col2vol_add(col, cg, g, dx);
        }
      }
    }
  };
  // Each piece has its own im2col buffer; inside a chunk OpenBLAS runs on the chunk's thread.
  auto run_pieces = [&](int64_t begin, int64_t end) {
    std::vector<T> col(static_cast<size_t>(col_size));
    for (int64_t t = begin; t < end; ++t)
      for (int64_t n = g.batch * t / pieces; n < g.batch * (t + 1) / pieces; ++n)
        run_one(n, t, col.data());
  };
  if (parallel) {
    parallel::parallel_for(0, pieces, 1, run_pieces);
  } else {
    run_pieces(0, pieces);
  }
  if (fused_bias) {
    for (int64_t o = 0; o < g.out_channels; ++o) {
      T total = 0;
      for (int64_t t = 0; t < pieces; ++t) total += bias_acc[t * g.out_channels + o];
      gb[o] = total;
    }
  }
  if (gw == nullptr) return;
  if (by_rows) {
    for (int64_t t = 0; t < acc_count; ++t)
      add_kernel_rows_to_weights(weight_acc.data() + t * weight_numel, g, gw);
  } else if (acc_count > 0) {
    parallel::parallel_for(0, weight_numel, 65536, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        for (int64_t t = 0; t < acc_count; ++t) gw[i] += weight_acc[t * weight_numel + i];
    });
  }
}

template <typename T>
T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

}  // namespace

void convolution_backward(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                          const Tensor& grad_input, const Tensor& grad_weight,
                          const Tensor& grad_bias, const ConvGeometry& g) {
  const ScalarType dt = grad_out.dtype();
  // The input is read only for the weight gradient.
  auto input_as = [&](ScalarType t) {
    return grad_weight.defined() ? contiguous_as(input, t) : Tensor();
  };
  if (dt == kFloat32 || dt == kFloat64) {
    const Tensor dy = contiguous_as(grad_out, dt), x = input_as(dt), w = contiguous_as(weight, dt);
    if (dt == kFloat32) {
      convolution_backward_typed<float>(dy.data_ptr<float>(), data_or_null<float>(x),
                                        w.data_ptr<float>(), data_or_null<float>(grad_input),
                                        data_or_null<float>(grad_weight),
                                        data_or_null<float>(grad_bias), g);
    } else {
      convolution_backward_typed<double>(dy.data_ptr<double>(), data_or_null<double>(x),
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
  const Tensor dy = contiguous_as(grad_out, kFloat32), x = input_as(kFloat32),
               w = contiguous_as(weight, kFloat32);
  convolution_backward_typed<float>(dy.data_ptr<float>(), data_or_null<float>(x),
                                    w.data_ptr<float>(), data_or_null<float>(gi),
                                    data_or_null<float>(gw), data_or_null<float>(gb), g);
  if (gi.defined()) copy_into(grad_input, gi);
  if (gw.defined()) copy_into(grad_weight, gw);
  if (gb.defined()) copy_into(grad_bias, gb);
}

}  // namespace kiln::cpu
