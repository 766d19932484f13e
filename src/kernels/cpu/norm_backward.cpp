// Backward kernels of the normalizations (the forward kernels are in norm.cpp).
//
// Note [Normalization backward]
// All three normalizations compute, per statistics group (a layer_norm row, a batch_norm channel,
// a group_norm (sample, group) block) of n values, xhat = (x - mean) * rstd and y = xhat * w + b.
// With a = dy * w, the input gradient is
//   dx = rstd * (a - mean(a) - xhat * mean(a * xhat)),
// and since xhat is affine in x it is one multiply-add per element once the two group sums
// sum(a) and sum(a * x) are known:
//   dx = (rstd * w) * dy + c2 * x + c3,  c2 = -rstd^2 * mean(a * xhat),
//   c3 = rstd * (mean * rstd * mean(a * xhat) - mean(a)),
// with mean(a * xhat) = rstd * (sum(a * x) - mean * sum(a)) / n. So every kernel is two passes
// over dy and x: the sums, then dx (plus the per-feature dw = sum(dy * xhat), db = sum(dy)). In
// eval mode (batch_norm with running statistics) the statistics are constants: dx = rstd * a.
// The derivative formulas (src/autograd/formulas/nn.cpp) differentiate these kernels again.
#include <algorithm>
#include <cmath>
#include <vector>

#include "src/kernels/cpu/loops.h"
#include "src/kernels/cpu/nn_kernels.h"
#include "src/kernels/cpu/norm_utils.h"
#include "src/kernels/cpu/streaming_store.h"
#include "src/util/parallel.h"

namespace kiln::cpu {
namespace {

// Parallel reductions over rows or samples split the work into at most this many fixed blocks,
// whatever the thread count, so results do not depend on it.
constexpr int64_t kReductionBlocks = 16;

// sum(g) and sum(g * x) over n values, accumulated in Acc with independent lanes
// (Note [Vectorizable reductions]).
template <typename Acc, typename T>
void sum_g_gx(const T* g, const T* x, int64_t n, Acc& sum_g, Acc& sum_gx) {
  constexpr int kL = kLanes<Acc>;
  Acc ag[kL] = {}, agx[kL] = {};
  int64_t i = 0;
  for (; i + kL <= n; i += kL) {
    for (int j = 0; j < kL; ++j) {
      const Acc gv = static_cast<Acc>(g[i + j]);
      ag[j] += gv;
      agx[j] += gv * static_cast<Acc>(x[i + j]);
    }
  }
  Acc sg = 0, sgx = 0;
  for (int j = 0; j < kL; ++j) {
    sg += ag[j];
    sgx += agx[j];
  }
  for (; i < n; ++i) {
    sg += static_cast<Acc>(g[i]);
    sgx += static_cast<Acc>(g[i]) * static_cast<Acc>(x[i]);
  }
  sum_g = sg;
  sum_gx = sgx;
}

// The same with a = g * w (w per element), for layer_norm rows.
template <typename A>
void sum_a_ax(const A* g, const A* x, const A* w, int64_t n, A& sum_a, A& sum_ax) {
  constexpr int kL = kLanes<A>;
  A aa[kL] = {}, aax[kL] = {};
  int64_t i = 0;
  for (; i + kL <= n; i += kL) {
    for (int j = 0; j < kL; ++j) {
      const A a = g[i + j] * w[i + j];
      aa[j] += a;
      aax[j] += a * x[i + j];
    }
  }
  A sa = 0, sax = 0;
  for (int j = 0; j < kL; ++j) {
    sa += aa[j];
    sax += aax[j];
  }
  for (; i < n; ++i) {
    const A a = g[i] * w[i];
    sa += a;
    sax += a * x[i];
  }
  sum_a = sa;
  sum_ax = sax;
}

// dx = k1 * g + k2 * x + k3 over n values of T, computed in A.
template <typename T, typename A>
void affine2_span(const T* g, const T* x, T* dx, int64_t n, A k1, A k2, A k3) {
  for (int64_t i = 0; i < n; ++i)
    dx[i] = static_cast<T>(k1 * static_cast<A>(g[i]) + k2 * static_cast<A>(x[i]) + k3);
}

// The coefficients of Note [Normalization backward] for one statistics group of n values, from
// sum(a) and sum(a * x), in double.
struct DxCoefficients {
  double c2, c3;
};
DxCoefficients dx_coefficients(double sum_a, double sum_ax, double mean, double rstd, double n) {
  const double mean_a = sum_a / n;
  const double mean_axhat = rstd * (sum_ax - mean * sum_a) / n;
  return {-rstd * rstd * mean_axhat, rstd * (mean * rstd * mean_axhat - mean_a)};
}

template <typename A>
std::vector<A> values_or(const Tensor& t, int64_t n, A fill) {
  return t.defined() ? t.to_vector<A>() : std::vector<A>(static_cast<size_t>(n), fill);
}

}  // namespace

void layer_norm_backward(const Tensor& grad_out, const Tensor& input, const Tensor& mean,
                         const Tensor& rstd, const Tensor& weight, int64_t M, int64_t N,
                         const Tensor& grad_input, const Tensor& grad_weight,
                         const Tensor& grad_bias) {
  const bool want_w = grad_weight.defined(), want_b = grad_bias.defined();
  if (M == 0 || N == 0) {
    if (want_w) grad_weight.zero_();
    if (want_b) grad_bias.zero_();
    return;
  }
  const Tensor x = input.contiguous(), g = grad_out.contiguous();
  visit_dtype_in<dtypes::kFloating>(x.dtype(), "native_layer_norm_backward", [&]<typename T>() {
    using A = opmath_t<T>;
    constexpr bool kReduced = !std::is_same_v<T, A>;
    const std::vector<A> w = values_or<A>(weight, N, A(1));
    const std::vector<A> mv = mean.to_vector<A>(), rv = rstd.to_vector<A>();
    const T* xp = x.data_ptr<T>();
    const T* gp = g.data_ptr<T>();
    T* dxp = grad_input.defined() ? grad_input.data_ptr<T>() : nullptr;
    const bool streaming = M * N * static_cast<int64_t>(sizeof(T)) >= kStreamingBytes;
    // Rows go in fixed blocks, each summing its own dw/db partials, added up in block order:
    // the same result on any number of threads.
    const int64_t blocks = std::min<int64_t>(M, kReductionBlocks);
    const int64_t rows_per_block = (M + blocks - 1) / blocks;
    std::vector<A> dw_part(want_w ? static_cast<size_t>(blocks * N) : 0, A(0));
    std::vector<A> db_part(want_b ? static_cast<size_t>(blocks * N) : 0, A(0));
    parallel::parallel_for_if(
        M * N > kParallelGrain, 0, blocks, [&](int64_t blk_begin, int64_t blk_end) {
          std::vector<A> xbuf(kReduced ? N : 0), gbuf(kReduced ? N : 0), dxbuf(kReduced ? N : 0);
          for (int64_t blk = blk_begin; blk < blk_end; ++blk) {
            A* dw = want_w ? dw_part.data() + blk * N : nullptr;
            A* db = want_b ? db_part.data() + blk * N : nullptr;
            for (int64_t r = blk * rows_per_block; r < std::min(M, (blk + 1) * rows_per_block);
                 ++r) {
              const A* xr;
              const A* gr;
              if constexpr (kReduced) {
                widen(xp + r * N, xbuf.data(), N);
                widen(gp + r * N, gbuf.data(), N);
                xr = xbuf.data();
                gr = gbuf.data();
              } else {
                xr = xp + r * N;
                gr = gp + r * N;
              }
              const A m = mv[static_cast<size_t>(r)], rs = rv[static_cast<size_t>(r)];
              if (dxp != nullptr) {
                A sum_a, sum_ax;
                sum_a_ax(gr, xr, w.data(), N, sum_a, sum_ax);
                const DxCoefficients k =
                    dx_coefficients(sum_a, sum_ax, m, rs, static_cast<double>(N));
                const A c2 = static_cast<A>(k.c2), c3 = static_cast<A>(k.c3);
                const A* wp = w.data();
                auto compute = [&](int64_t b, int64_t e, A* dst) {
                  for (int64_t i = b; i < e; ++i) dst[i - b] = rs * wp[i] * gr[i] + c2 * xr[i] + c3;
                };
                if constexpr (kReduced) {
                  compute(0, N, dxbuf.data());
                  narrow_span(dxbuf.data(), dxp + r * N, N);
                } else if (streaming) {  // Note [Streaming stores]
                  stream_blocks(dxp + r * N, 0, N, compute);
                } else {
                  compute(0, N, dxp + r * N);
                }
              }
              if (dw != nullptr) {
                for (int64_t i = 0; i < N; ++i) dw[i] += gr[i] * ((xr[i] - m) * rs);
              }
              if (db != nullptr) {
                for (int64_t i = 0; i < N; ++i) db[i] += gr[i];
              }
            }
          }
        });
    std::vector<A> dw_total(want_w ? static_cast<size_t>(N) : 0, A(0));
    std::vector<A> db_total(want_b ? static_cast<size_t>(N) : 0, A(0));
    for (int64_t blk = 0; blk < blocks; ++blk) {
      for (int64_t i = 0; i < (want_w ? N : 0); ++i) dw_total[i] += dw_part[blk * N + i];
      for (int64_t i = 0; i < (want_b ? N : 0); ++i) db_total[i] += db_part[blk * N + i];
    }
    if (want_w) {
      T* p = grad_weight.data_ptr<T>();
      for (int64_t i = 0; i < N; ++i) p[i] = static_cast<T>(dw_total[i]);
    }
    if (want_b) {
      T* p = grad_bias.data_ptr<T>();
      for (int64_t i = 0; i < N; ++i) p[i] = static_cast<T>(db_total[i]);
    }
  });
}

void batch_norm_backward(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                         const Tensor& mean, const Tensor& invstd, bool training,
                         const Tensor& grad_input, const Tensor& grad_weight,
                         const Tensor& grad_bias) {
  const int64_t N = input.size(0), C = input.size(1);
  const int64_t S = N * C == 0 ? 0 : input.numel() / (N * C);
  const int64_t count = N * S;
  if (C == 0) return;
  const Tensor x = input.contiguous(), g = grad_out.contiguous();
  const std::vector<double> w = values_or<double>(weight, C, 1.0);
  const std::vector<double> mv = mean.to_vector<double>(), iv = invstd.to_vector<double>();
  const bool need_sums = training || grad_weight.defined() || grad_bias.defined();
  std::vector<double> sum_g(static_cast<size_t>(C), 0.0), sum_gxc(static_cast<size_t>(C), 0.0);
  visit_dtype_in<dtypes::kFloating>(x.dtype(), "native_batch_norm_backward", [&]<typename T>() {
    using A = opmath_t<T>;
    const T* xp = x.data_ptr<T>();
    const T* gp = g.data_ptr<T>();
    if (need_sums && count > 0) {
      // Per channel: sum(g) and sum(g * (x - mean)) = sum(g * x) - mean * sum(g), in double.
      // Read in memory order (samples outer, channels inner) in fixed blocks of samples, each
      // with its own per-channel partials, added up in block order (the same result on any
      // number of threads).
      const int64_t blocks = std::min<int64_t>(N, kReductionBlocks);
      const int64_t per_block = (N + blocks - 1) / blocks;
      std::vector<double> sg(static_cast<size_t>(blocks * C), 0.0),
          sgx(static_cast<size_t>(blocks * C), 0.0);
      parallel::parallel_for_if(
          N * C * S > kParallelGrain, 0, blocks, [&](int64_t blk_begin, int64_t blk_end) {
            for (int64_t blk = blk_begin; blk < blk_end; ++blk) {
              for (int64_t n = blk * per_block; n < std::min(N, (blk + 1) * per_block); ++n) {
                for (int64_t c = 0; c < C; ++c) {
                  double a, b;
                  sum_g_gx<double>(gp + (n * C + c) * S, xp + (n * C + c) * S, S, a, b);
                  sg[static_cast<size_t>(blk * C + c)] += a;
                  sgx[static_cast<size_t>(blk * C + c)] += b;
                }
              }
            }
          });
      for (int64_t blk = 0; blk < blocks; ++blk) {
        for (int64_t c = 0; c < C; ++c) {
          sum_g[static_cast<size_t>(c)] += sg[static_cast<size_t>(blk * C + c)];
          sum_gxc[static_cast<size_t>(c)] += sgx[static_cast<size_t>(blk * C + c)];
        }
      }
      for (int64_t c = 0; c < C; ++c)
        sum_gxc[static_cast<size_t>(c)] -=
            mv[static_cast<size_t>(c)] * sum_g[static_cast<size_t>(c)];
    }
    if (grad_input.defined() && count > 0) {
      std::vector<A> k1(static_cast<size_t>(C)), k2(static_cast<size_t>(C)),
          k3(static_cast<size_t>(C));
      for (int64_t c = 0; c < C; ++c) {
        const size_t i = static_cast<size_t>(c);
        const double scale = iv[i] * w[i];
        if (training) {
          // dx = scale * (g - sum_g / count - (x - mean) * invstd^2 * sum_gxc / count)
          const double proj = iv[i] * iv[i] * sum_gxc[i] / static_cast<double>(count);
          k1[i] = static_cast<A>(scale);
          k2[i] = static_cast<A>(-scale * proj);
          k3[i] = static_cast<A>(scale * (mv[i] * proj - sum_g[i] / static_cast<double>(count)));
        } else {
          k1[i] = static_cast<A>(scale);
          k2[i] = A(0);
          k3[i] = A(0);
        }
      }
      T* dxp = grad_input.data_ptr<T>();
      const bool streaming = N * C * S * static_cast<int64_t>(sizeof(T)) >= kStreamingBytes;
      parallel::parallel_for_if(
          N * C * S > kParallelGrain, 0, N * C, [&](int64_t nc_begin, int64_t nc_end) {
            for (int64_t nc = nc_begin; nc < nc_end; ++nc) {
              const int64_t c = nc % C, off = nc * S;
              if (streaming) {  // Note [Streaming stores]
                stream_blocks(dxp + off, 0, S, [&](int64_t b, int64_t e, T* dst) {
                  affine2_span<T, A>(gp + off + b, xp + off + b, dst, e - b, k1[c], k2[c], k3[c]);
                });
              } else {
                affine2_span<T, A>(gp + off, xp + off, dxp + off, S, k1[c], k2[c], k3[c]);
              }
            }
          });
    }
    if (grad_weight.defined()) {
      T* p = grad_weight.data_ptr<T>();
      for (int64_t c = 0; c < C; ++c)
        p[c] = static_cast<T>(sum_gxc[static_cast<size_t>(c)] * iv[static_cast<size_t>(c)]);
    }
    if (grad_bias.defined()) {
      T* p = grad_bias.data_ptr<T>();
      for (int64_t c = 0; c < C; ++c) p[c] = static_cast<T>(sum_g[static_cast<size_t>(c)]);
    }
  });
}

void group_norm_backward(const Tensor& grad_out, const Tensor& input, const Tensor& mean,
                         const Tensor& rstd, const Tensor& weight, int64_t groups,
                         const Tensor& grad_input, const Tensor& grad_weight,
                         const Tensor& grad_bias) {
  const int64_t N = input.size(0), C = input.size(1);
  const int64_t S = N * C == 0 ? 0 : input.numel() / (N * C);
  const int64_t cpg = C / groups;
  if (N == 0 || C == 0 || S == 0) {
    if (grad_weight.defined()) grad_weight.zero_();
    if (grad_bias.defined()) grad_bias.zero_();
    return;
  }
  const Tensor x = input.contiguous(), g = grad_out.contiguous();
  const std::vector<double> w = values_or<double>(weight, C, 1.0);
  const std::vector<double> mv = mean.to_vector<double>(), rv = rstd.to_vector<double>();
  // Per (sample, channel): sum(g) and sum(g * x).
  std::vector<double> db(static_cast<size_t>(N * C)), ds(static_cast<size_t>(N * C));
  visit_dtype_in<dtypes::kFloating>(x.dtype(), "native_group_norm_backward", [&]<typename T>() {
    using A = opmath_t<T>;
    const T* xp = x.data_ptr<T>();
    const T* gp = g.data_ptr<T>();
    const bool parallel = N * C * S > kParallelGrain;
    parallel::parallel_for_if(parallel, 0, N * C, [&](int64_t nc_begin, int64_t nc_end) {
      for (int64_t nc = nc_begin; nc < nc_end; ++nc)
        sum_g_gx<double>(gp + nc * S, xp + nc * S, S, db[static_cast<size_t>(nc)],
                         ds[static_cast<size_t>(nc)]);
    });
    if (grad_input.defined()) {
      T* dxp = grad_input.data_ptr<T>();
      parallel::parallel_for_if(parallel, 0, N * groups, [&](int64_t ng_begin, int64_t ng_end) {
        for (int64_t ng = ng_begin; ng < ng_end; ++ng) {
          const int64_t n = ng / groups, grp = ng % groups;
          double sum_a = 0, sum_ax = 0;
          for (int64_t j = 0; j < cpg; ++j) {
            const int64_t c = grp * cpg + j;
            sum_a += w[static_cast<size_t>(c)] * db[static_cast<size_t>(n * C + c)];
            sum_ax += w[static_cast<size_t>(c)] * ds[static_cast<size_t>(n * C + c)];
          }
          const double m = mv[static_cast<size_t>(ng)], rs = rv[static_cast<size_t>(ng)];
          const DxCoefficients k =
              dx_coefficients(sum_a, sum_ax, m, rs, static_cast<double>(cpg * S));
          for (int64_t j = 0; j < cpg; ++j) {
            const int64_t c = grp * cpg + j;
            const int64_t off = (n * C + c) * S;
            affine2_span<T, A>(gp + off, xp + off, dxp + off, S,
                               static_cast<A>(rs * w[static_cast<size_t>(c)]), static_cast<A>(k.c2),
                               static_cast<A>(k.c3));
          }
        }
      });
    }
    if (grad_weight.defined() || grad_bias.defined()) {
      std::vector<double> dw(static_cast<size_t>(C), 0.0), dbias(static_cast<size_t>(C), 0.0);
      for (int64_t n = 0; n < N; ++n) {
        for (int64_t c = 0; c < C; ++c) {
          const size_t nc = static_cast<size_t>(n * C + c),
                       ng = static_cast<size_t>(n * groups + c / cpg);
          dw[static_cast<size_t>(c)] += (ds[nc] - mv[ng] * db[nc]) * rv[ng];
          dbias[static_cast<size_t>(c)] += db[nc];
        }
      }
      if (grad_weight.defined()) {
        T* p = grad_weight.data_ptr<T>();
        for (int64_t c = 0; c < C; ++c) p[c] = static_cast<T>(dw[static_cast<size_t>(c)]);
      }
      if (grad_bias.defined()) {
        T* p = grad_bias.data_ptr<T>();
        for (int64_t c = 0; c < C; ++c) p[c] = static_cast<T>(dbias[static_cast<size_t>(c)]);
      }
    }
  });
}

}  // namespace kiln::cpu
