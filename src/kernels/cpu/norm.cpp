// Normalization kernels: layer_norm (one fused pass set per row), batch_norm (per channel),
// group_norm (per sample and group). Statistics are two-pass (mean, then the mean of squared
// deviations), which is exact enough without Welford's division per element.
#include <cmath>
#include <vector>

#include "src/kernels/cpu/loops.h"
#include "src/kernels/cpu/nn_kernels.h"
#include "src/kernels/cpu/norm_utils.h"
#include "src/kernels/cpu/streaming_store.h"
#include "src/util/parallel.h"

namespace kiln::cpu {
namespace {

// y = (x - mean) * rstd * w + b, with w/b optional; four loops so each one vectorizes. Written
// as (x * rstd + shift) * w + b with shift = -mean * rstd: two multiply-adds per element.
template <typename A>
void normalize_row(const A* x, A* y, int64_t n, A mean, A rstd, const A* w, const A* b) {
  const A shift = -mean * rstd;
  if (w != nullptr && b != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * rstd + shift) * w[i] + b[i];
  } else if (w != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * rstd + shift) * w[i];
  } else if (b != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * rstd + shift + b[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * rstd + shift;
  }
}

// The values of an optional per-feature parameter in the compute type (empty when undefined).
template <typename A>
std::vector<A> param_values(const Tensor& p) {
  return p.defined() ? p.to_vector<A>() : std::vector<A>();
}

// y = x * scale + shift over n elements of T, computing in A.
template <typename T, typename A>
void affine_span(const T* x, T* y, int64_t n, A scale, A shift) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(static_cast<A>(x[i]) * scale + shift);
}

}  // namespace

void layer_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, double eps,
                int64_t M, int64_t N, const Tensor& out, const Tensor& mean, const Tensor& rstd) {
  if (M == 0) return;
  const Tensor x = input.contiguous();
  visit_dtype_in<dtypes::kFloating>(x.dtype(), "layer_norm", [&]<typename T>() {
    using A = opmath_t<T>;
    constexpr bool kReduced = !std::is_same_v<T, A>;
    const std::vector<A> w = param_values<A>(weight), b = param_values<A>(bias);
    const A* wp = w.empty() ? nullptr : w.data();
    const A* bp = b.empty() ? nullptr : b.data();
    const T* xp = x.data_ptr<T>();
    T* yp = out.data_ptr<T>();
    T* mp = mean.data_ptr<T>();
    T* rp = rstd.data_ptr<T>();
    const A inv_n = A(1) / static_cast<A>(N);
    const bool streaming = M * N * static_cast<int64_t>(sizeof(T)) >= kStreamingBytes;
    parallel::parallel_for_if(M * N > kParallelGrain, 0, M, [&](int64_t r_begin, int64_t r_end) {
      // Reduced floats are widened into per-thread row buffers once, then share the float code.
      std::vector<A> xbuf(kReduced ? N : 0), ybuf(kReduced ? N : 0);
      for (int64_t r = r_begin; r < r_end; ++r) {
        const A* xr;
        A* yr;
        if constexpr (kReduced) {
          widen(xp + r * N, xbuf.data(), N);
          xr = xbuf.data();
          yr = ybuf.data();
        } else {
          xr = xp + r * N;
          yr = yp + r * N;
        }
        const A m = sum_span<A>(xr, N) * inv_n;
        const A var = sum_sq_dev_span<A>(xr, N, m) * inv_n;
        const A rs = A(1) / std::sqrt(var + static_cast<A>(eps));
        if constexpr (kReduced) {
          normalize_row(xr, yr, N, m, rs, wp, bp);
          narrow_span(yr, yp + r * N, N);
        } else if (streaming) {  // Note [Streaming stores]
          stream_blocks(yr, 0, N, [&](int64_t b, int64_t e, A* dst) {
            normalize_row(xr + b, dst, e - b, m, rs, wp ? wp + b : nullptr, bp ? bp + b : nullptr);
          });
        } else {
          normalize_row(xr, yr, N, m, rs, wp, bp);
        }
        mp[r] = static_cast<T>(m);
        rp[r] = static_cast<T>(rs);
      }
    });
  });
}

void batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                const Tensor& running_mean, const Tensor& running_var, bool training,
                double momentum, double eps, const Tensor& out, const Tensor& save_mean,
                const Tensor& save_invstd) {
  const int64_t N = input.size(0), C = input.size(1);
  const int64_t S = C == 0 || N == 0 ? 0 : input.numel() / (N * C);
  const int64_t count = N * S;  // values per channel
  if (C == 0) return;
  const Tensor x = input.contiguous();
  // Per-channel statistics in double, whatever the input dtype.
  std::vector<double> ch_mean(C), ch_invstd(C), ch_var_unbiased(C);
  if (training) {
    visit_dtype_in<dtypes::kFloating>(x.dtype(), "batch_norm", [&]<typename T>() {
      const T* xp = x.data_ptr<T>();
      parallel::parallel_for_if(
          N * C * S > kParallelGrain, 0, C, [&](int64_t c_begin, int64_t c_end) {
            for (int64_t c = c_begin; c < c_end; ++c) {
              double sum = 0;
              for (int64_t n = 0; n < N; ++n) sum += sum_span<double>(xp + (n * C + c) * S, S);
              const double m = count > 0 ? sum / static_cast<double>(count) : 0.0;
              double sq = 0;
              for (int64_t n = 0; n < N; ++n)
                sq += sum_sq_dev_span<double>(xp + (n * C + c) * S, S, m);
              const double var = count > 0 ? sq / static_cast<double>(count) : 0.0;
              ch_mean[c] = m;
              ch_invstd[c] = 1.0 / std::sqrt(var + eps);
              ch_var_unbiased[c] = count > 1 ? sq / static_cast<double>(count - 1) : var;
            }
          });
    });
    visit_dtype_in<dtypes::kFloating>(save_mean.dtype(), "batch_norm", [&]<typename T>() {
      T* mp = save_mean.data_ptr<T>();
      T* ip = save_invstd.data_ptr<T>();
      for (int64_t c = 0; c < C; ++c) {
        mp[c] = static_cast<T>(ch_mean[c]);
        ip[c] = static_cast<T>(ch_invstd[c]);
      }
    });
    // Running statistics: r = (1 - momentum) * r + momentum * batch_stat, as PyTorch, with the
    // unbiased variance. Any floating dtype and stride; the version counter records the write.
    auto update = [&](const Tensor& r, const std::vector<double>& stat) {
      if (!r.defined() || count == 0) return;
      visit_dtype_in<dtypes::kFloating>(r.dtype(), "batch_norm", [&]<typename R>() {
        R* p = static_cast<R*>(r.data_ptr());
        const int64_t st = r.stride(0);
        for (int64_t c = 0; c < C; ++c) {
          const double old = static_cast<double>(p[c * st]);
          p[c * st] = static_cast<R>((1.0 - momentum) * old + momentum * stat[c]);
        }
      });
      r.bump_version();
    };
    update(running_mean, ch_mean);
    update(running_var, ch_var_unbiased);
  } else {
    const std::vector<double> rm = running_mean.to_vector<double>();
    const std::vector<double> rv = running_var.to_vector<double>();
    for (int64_t c = 0; c < C; ++c) {
      ch_mean[c] = rm[c];
      ch_invstd[c] = 1.0 / std::sqrt(rv[c] + eps);
    }
  }
  if (count == 0) return;
  const std::vector<double> w = param_values<double>(weight), b = param_values<double>(bias);
  visit_dtype_in<dtypes::kFloating>(x.dtype(), "batch_norm", [&]<typename T>() {
    using A = opmath_t<T>;
    const T* xp = x.data_ptr<T>();
    T* yp = out.data_ptr<T>();
    parallel::parallel_for_if(N * C * S > kParallelGrain, 0, N * C, [&](int64_t b0, int64_t e0) {
      for (int64_t nc = b0; nc < e0; ++nc) {
        const int64_t c = nc % C;
        // Folded into one multiply-add: y = x * scale + shift.
        const double scale = ch_invstd[c] * (w.empty() ? 1.0 : w[c]);
        const double shift = (b.empty() ? 0.0 : b[c]) - ch_mean[c] * scale;
        const int64_t off = nc * S;
        affine_span<T, A>(xp + off, yp + off, S, static_cast<A>(scale), static_cast<A>(shift));
      }
    });
  });
}

void group_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t groups,
                double eps, const Tensor& out, const Tensor& mean, const Tensor& rstd) {
  const int64_t N = input.size(0), C = input.size(1);
  if (N == 0 || groups == 0) return;
  const int64_t S = C == 0 ? 0 : input.numel() / (N * C);
  const int64_t cpg = C / groups;  // channels per group
  const int64_t block = cpg * S;   // contiguous values of one (sample, group)
  const Tensor x = input.contiguous();
  const std::vector<double> w = param_values<double>(weight), b = param_values<double>(bias);
  visit_dtype_in<dtypes::kFloating>(x.dtype(), "group_norm", [&]<typename T>() {
    using A = opmath_t<T>;
    const T* xp = x.data_ptr<T>();
    T* yp = out.data_ptr<T>();
    T* mp = mean.data_ptr<T>();
    T* rp = rstd.data_ptr<T>();
    parallel::parallel_for_if(
        N * C * S > kParallelGrain, 0, N * groups, [&](int64_t ng_begin, int64_t ng_end) {
          for (int64_t ng = ng_begin; ng < ng_end; ++ng) {
            const T* xb = xp + ng * block;
            const double m =
                block > 0 ? sum_span<double>(xb, block) / static_cast<double>(block) : std::nan("");
            const double var =
                block > 0 ? sum_sq_dev_span<double>(xb, block, m) / static_cast<double>(block)
                          : std::nan("");
            const double rs = 1.0 / std::sqrt(var + eps);
            mp[ng] = static_cast<T>(m);
            rp[ng] = static_cast<T>(rs);
            const int64_t g = ng % groups;
            for (int64_t j = 0; j < cpg; ++j) {
              const int64_t c = g * cpg + j;
              const double scale = rs * (w.empty() ? 1.0 : w[c]);
              const double shift = (b.empty() ? 0.0 : b[c]) - m * scale;
              affine_span<T, A>(xb + j * S, yp + ng * block + j * S, S, static_cast<A>(scale),
                                static_cast<A>(shift));
            }
          }
        });
  });
}

}  // namespace kiln::cpu
