// Loss kernels. Losses are summed over whole batches in double, where float accumulation would
// lose digits. The exception is the log-sum-exp of one row of class scores (cross_entropy's hot
// path), vectorized in the input's float type, as the softmax kernels do.
#include <cmath>
#include <limits>
#include <vector>

#include "src/core/shape.h"
#include "src/kernels/cpu/loops.h"
#include "src/kernels/cpu/loss_utils.h"
#include "src/kernels/cpu/nn_kernels.h"
#include "src/kernels/cpu/norm_utils.h"
#include "src/util/parallel.h"

namespace kiln::cpu {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Writes a reduced loss (0-dim out) of dtype T.
void write_scalar(const Tensor& out, double v) {
  visit_dtype_in<dtypes::kFloating>(out.dtype(), "loss",
                                    [&]<typename T>() { *out.data_ptr<T>() = static_cast<T>(v); });
}

// Log-probabilities of one sample's C classes (stride `inner` apart) into lp.
template <typename T>
void log_probs(const T* x, int64_t C, int64_t inner, bool log_softmax, double* lp) {
  for (int64_t c = 0; c < C; ++c) lp[c] = static_cast<double>(x[c * inner]);
  if (!log_softmax) return;
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < C; ++c) mx = std::max(mx, lp[c]);
  double sum = 0;
  for (int64_t c = 0; c < C; ++c) sum += std::exp(lp[c] - mx);
  const double lse = std::isinf(mx) ? mx : mx + std::log(sum);
  for (int64_t c = 0; c < C; ++c) lp[c] -= lse;
}

// log(sum(exp(x))) of one contiguous row of n values: the row's max m plus the log of the
// vectorized sum of exp(x - m); m itself when it is infinite (then log p is -inf, or NaN for an
// infinite class, as the per-element formula gives).
template <typename A>
double row_logsumexp(const A* x, int64_t n) {
  const auto [m, sum] = max_and_exp_sum<A>(x, n, nullptr);
  const double md = static_cast<double>(m);
  return std::isinf(md) ? md : md + std::log(static_cast<double>(sum));
}

double finish(Reduction r, double sum, double denom) {
  return r == Reduction::Sum ? sum : sum / denom;
}

}  // namespace

void nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction reduction,
              int64_t ignore_index, double label_smoothing, bool log_softmax, int64_t outer,
              int64_t C, int64_t inner, const Tensor& out) {
  const std::string_view op = log_softmax ? "cross_entropy" : "nll_loss";
  const std::vector<int64_t> idx = class_indices(target, C, ignore_index, op, input.sizes());
  const std::vector<double> w =
      weight.defined() ? weight.to_vector<double>() : std::vector<double>();
  const int64_t n = outer * inner;
  const double eps = label_smoothing;
  std::vector<double> loss(static_cast<size_t>(n)), wt(static_cast<size_t>(n));
  std::vector<double> smooth(eps > 0 ? static_cast<size_t>(n) : 0);
  double w_sum = 0;
  for (int64_t c = 0; c < C; ++c) w_sum += w.empty() ? 1.0 : w[static_cast<size_t>(c)];
  const Tensor x = input.contiguous();
  visit_dtype_in<dtypes::kFloating>(x.dtype(), op, [&]<typename T>() {
    using A = opmath_t<T>;
    const T* xp = x.data_ptr<T>();
    // Rows of classes that are strided (inner > 1) or of a reduced float type go through a
    // buffer; contiguous float/double rows are read in place.
    const bool buffered = !std::is_same_v<T, A> || inner > 1;
    parallel::parallel_for_if(n * C > kParallelGrain, 0, n, [&](int64_t s_begin, int64_t s_end) {
      std::vector<A> buf(buffered ? static_cast<size_t>(C) : 0);
      for (int64_t s = s_begin; s < s_end; ++s) {
        const int64_t t = idx[static_cast<size_t>(s)];
        if (t < 0) continue;  // ignored: zero loss, zero weight
        const int64_t base = s / inner * C * inner + s % inner;
        const A* row = buf.data();
        if (buffered) {
          for (int64_t c = 0; c < C; ++c)
            buf[static_cast<size_t>(c)] = static_cast<A>(xp[base + c * inner]);
        } else if constexpr (std::is_same_v<T, A>) {
          row = xp + base;
        }
        const double lse = log_softmax ? row_logsumexp(row, C) : 0.0;
        const double wt_s = w.empty() ? 1.0 : w[static_cast<size_t>(t)];
        loss[static_cast<size_t>(s)] = -wt_s * (static_cast<double>(row[t]) - lse);
        wt[static_cast<size_t>(s)] = wt_s;
        if (eps > 0) {
          // PyTorch's smoothing term: -sum_c w_c log p_c = lse sum_c w_c - sum_c w_c x_c (zero
          // for ignored targets).
          double wx = 0;
          if (w.empty()) {
            wx = sum_span<double>(row, C);
          } else {
            for (int64_t c = 0; c < C; ++c)
              wx += w[static_cast<size_t>(c)] * static_cast<double>(row[c]);
          }
          smooth[static_cast<size_t>(s)] = (log_softmax ? lse * w_sum : 0.0) - wx;
        }
      }
    });
  });
  const double a = 1.0 - eps, b = C > 0 ? eps / static_cast<double>(C) : 0.0;
  if (reduction == Reduction::None) {
    visit_dtype_in<dtypes::kFloating>(out.dtype(), op, [&]<typename T>() {
      T* op_ = out.data_ptr<T>();
      for (int64_t s = 0; s < n; ++s) {
        const double v = eps > 0
                             ? a * loss[static_cast<size_t>(s)] + b * smooth[static_cast<size_t>(s)]
                             : loss[static_cast<size_t>(s)];
        op_[s] = static_cast<T>(v);
      }
    });
    return;
  }
  double lsum = 0, wsum = 0, ssum = 0;
  for (int64_t s = 0; s < n; ++s) {
    lsum += loss[static_cast<size_t>(s)];
    wsum += wt[static_cast<size_t>(s)];
    if (eps > 0) ssum += smooth[static_cast<size_t>(s)];
  }
  // Mean divides by the summed weight of the non-ignored targets (NaN when all are ignored),
  // for the smoothing term too, as PyTorch does.
  double v = finish(reduction, lsum, wsum);
  if (eps > 0) v = a * v + b * finish(reduction, ssum, wsum);
  write_scalar(out, v);
}

void cross_entropy_probs(const Tensor& input, const Tensor& target, const Tensor& weight,
                         Reduction reduction, double label_smoothing, int64_t outer, int64_t C,
                         int64_t inner, const Tensor& out) {
  const std::vector<double> w =
      weight.defined() ? weight.to_vector<double>() : std::vector<double>();
  const std::vector<double> tv = target.to_vector<double>();  // row-major, input's shape
  const int64_t n = outer * inner;
  const double eps = label_smoothing;
  const double smooth = C > 0 ? eps / static_cast<double>(C) : 0.0;
  std::vector<double> loss(static_cast<size_t>(n));
  const Tensor x = input.contiguous();
  visit_dtype_in<dtypes::kFloating>(x.dtype(), "cross_entropy", [&]<typename T>() {
    const T* xp = x.data_ptr<T>();
    parallel::parallel_for_if(n * C > kParallelGrain, 0, n, [&](int64_t s_begin, int64_t s_end) {
      std::vector<double> lp(static_cast<size_t>(C));
      for (int64_t s = s_begin; s < s_end; ++s) {
        const int64_t o = s / inner, d = s % inner;
        log_probs(xp + o * C * inner + d, C, inner, true, lp.data());
        double l = 0;
        for (int64_t c = 0; c < C; ++c) {
          const double t = tv[static_cast<size_t>((o * C + c) * inner + d)] * (1.0 - eps) + smooth;
          l -= (w.empty() ? 1.0 : w[static_cast<size_t>(c)]) * t * lp[static_cast<size_t>(c)];
        }
        loss[static_cast<size_t>(s)] = l;
      }
    });
  });
  if (reduction == Reduction::None) {
    visit_dtype_in<dtypes::kFloating>(out.dtype(), "cross_entropy", [&]<typename T>() {
      T* p = out.data_ptr<T>();
      for (int64_t s = 0; s < n; ++s) p[s] = static_cast<T>(loss[static_cast<size_t>(s)]);
    });
    return;
  }
  double sum = 0;
  for (double l : loss) sum += l;
  // Mean divides by the number of samples (input.numel() / C), whatever the weights.
  write_scalar(out,
               reduction == Reduction::Sum ? sum : (n == 0 ? kNaN : sum / static_cast<double>(n)));
}

namespace {

// Applies `f(i) -> double` to every element index and writes it (None) or reduces it.
template <typename F>
void elementwise_loss(const Tensor& out, Reduction reduction, int64_t n, std::string_view op,
                      const F& f) {
  if (reduction == Reduction::None) {
    visit_dtype_in<dtypes::kFloating>(out.dtype(), op, [&]<typename T>() {
      T* p = out.data_ptr<T>();
      parallel::parallel_for_if(n > kParallelGrain, 0, n, [&](int64_t i_begin, int64_t i_end) {
        for (int64_t i = i_begin; i < i_end; ++i) p[i] = static_cast<T>(f(i));
      });
    });
    return;
  }
  // Partial sums over pieces of a fixed length, added in order: the same sum whatever the thread
  // count (Note [The intra-op pool]).
  const int64_t pieces = std::max<int64_t>(1, (n + kParallelGrain - 1) / kParallelGrain);
  std::vector<double> partial(static_cast<size_t>(pieces), 0.0);
  parallel::parallel_for(0, pieces, 1, [&](int64_t piece_begin, int64_t piece_end) {
    for (int64_t k = piece_begin; k < piece_end; ++k) {
      double s = 0;
      for (int64_t i = k * kParallelGrain; i < std::min(n, (k + 1) * kParallelGrain); ++i)
        s += f(i);
      partial[static_cast<size_t>(k)] = s;
    }
  });
  double sum = 0;
  for (double s : partial) sum += s;
  write_scalar(out,
               reduction == Reduction::Sum ? sum : (n == 0 ? kNaN : sum / static_cast<double>(n)));
}

}  // namespace

void mse_loss(const Tensor& input, const Tensor& target, Reduction reduction, const Tensor& out) {
  const Tensor x = input.contiguous(), y = target.contiguous();
  const int64_t n = x.numel();
  visit_dtype_in<dtypes::kFloating>(x.dtype(), "mse_loss", [&]<typename T>() {
    const T* xp = x.data_ptr<T>();
    const T* yp = y.data_ptr<T>();
    elementwise_loss(out, reduction, n, "mse_loss", [&](int64_t i) {
      const double d = static_cast<double>(xp[i]) - static_cast<double>(yp[i]);
      return d * d;
    });
  });
}

void binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                      const Tensor& weight, const Tensor& pos_weight,
                                      Reduction reduction, const Tensor& out) {
  const Tensor x = input.contiguous(), y = target.contiguous();
  const Tensor w = weight.defined() ? weight.contiguous() : Tensor();
  const Tensor pw = pos_weight.defined() ? pos_weight.contiguous() : Tensor();
  const int64_t n = x.numel();
  visit_dtype_in<dtypes::kFloating>(
      x.dtype(), "binary_cross_entropy_with_logits", [&]<typename T>() {
        const T* xp = x.data_ptr<T>();
        const T* yp = y.data_ptr<T>();
        const T* wp = w.defined() ? w.data_ptr<T>() : nullptr;
        const T* pp = pw.defined() ? pw.data_ptr<T>() : nullptr;
        elementwise_loss(out, reduction, n, "binary_cross_entropy_with_logits", [&](int64_t i) {
          const double v = static_cast<double>(xp[i]), t = static_cast<double>(yp[i]);
          // log(sigmoid(v)) without overflow: min(v, 0) - log1p(exp(-|v|)).
          const double log_sig = std::min(v, 0.0) - std::log1p(std::exp(-std::fabs(v)));
          const double lw = pp != nullptr ? 1.0 + (static_cast<double>(pp[i]) - 1.0) * t : 1.0;
          const double l = (1.0 - t) * v - lw * log_sig;
          return wp != nullptr ? l * static_cast<double>(wp[i]) : l;
        });
      });
}

}  // namespace kiln::cpu
