// Reductions that are not a single associative combine: arg-reductions (max/min with indices),
// variance, logsumexp, norms; and the scans cumsum/cumprod. They compute in double (integers in
// uint64, modular) per output, parallel over outputs above the grain.

#include <cmath>
#include <limits>
#include <vector>

#include "src/core/cast.h"
#include "src/kernels/cpu/loops.h"
#include "src/kernels/cpu/reduce.h"
#include "src/kernels/cpu/tensor_iter.h"
#include "src/util/parallel.h"

namespace kiln::cpu {
namespace {

// [rows, n] contiguous: every output reduces one contiguous row (see Note [Reduction layout]).
ReducePlan rows_plan(const Tensor& x, uint64_t mask) {
  ReducePlan plan = make_reduce_plan(x, mask);
  if (plan.inner != 1) {
    plan.x = plan.x.view({plan.outer, plan.reduce, plan.inner}).permute({0, 2, 1}).contiguous();
    plan.outer *= plan.inner;
    plan.inner = 1;
  }
  return plan;
}

// out[row] = f(row pointer, n) for every row, T being x's floating type.
template <typename F>
void for_each_row_floating(const Tensor& out, const Tensor& x, uint64_t mask, const F& f) {
  visit_dtype_in<dtypes::kFloating>(x.dtype(), "reduction", [&]<typename T>() {
    T* o = out.data_ptr<T>();
    if (out.numel() == 0) return;
    if (x.numel() == 0) {
      for (int64_t i = 0; i < out.numel(); ++i)
        o[i] = static_cast<T>(f(static_cast<const T*>(nullptr), 0));
      return;
    }
    ReducePlan plan = rows_plan(x, mask);
    const T* p = plan.x.data_ptr<T>();
    const int64_t rows = plan.outer, n = plan.reduce;
    parallel::parallel_for_if(rows * n > kParallelGrain && rows > 1, 0, rows,
                              [&](int64_t r_begin, int64_t r_end) {
                                for (int64_t r = r_begin; r < r_end; ++r)
                                  o[r] = static_cast<T>(f(p + r * n, n));
                              });
  });
}

}  // namespace

void variance(const Tensor& out, const Tensor& x, uint64_t mask, double correction,
              bool take_sqrt) {
  for_each_row_floating(out, x, mask, [&]<typename T>(const T* p, int64_t n) {
    // Two passes: the mean, then the sum of squared deviations (stable, unlike E[x^2] - E[x]^2).
    double mean = 0;
    for (int64_t i = 0; i < n; ++i) mean += static_cast<double>(p[i]);
    mean /= static_cast<double>(n);
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(p[i]) - mean;
      ss += d * d;
    }
    const double v = ss / std::max(0.0, static_cast<double>(n) - correction);
    return take_sqrt ? std::sqrt(v) : v;
  });
}

void logsumexp(const Tensor& out, const Tensor& x, uint64_t mask) {
  for_each_row_floating(out, x, mask, [&]<typename T>(const T* p, int64_t n) {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < n; ++i) {
      const double v = static_cast<double>(p[i]);
      if (std::isnan(v)) return v;
      m = std::max(m, v);
    }
    if (std::isinf(m)) return m;  // all -inf (or empty) -> -inf; any +inf -> +inf
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += std::exp(static_cast<double>(p[i]) - m);
    return m + std::log(s);
  });
}

void norm(const Tensor& out, const Tensor& x, uint64_t mask, double p) {
  for_each_row_floating(out, x, mask, [&]<typename T>(const T* v, int64_t n) {
    double acc = 0;
    if (std::isinf(p)) {
      acc = p > 0 ? 0 : std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < n; ++i) {
        const double a = std::fabs(static_cast<double>(v[i]));
        if (std::isnan(a)) return a;
        acc = p > 0 ? std::max(acc, a) : std::min(acc, a);
      }
      return acc;
    }
    for (int64_t i = 0; i < n; ++i) {
      const double a = std::fabs(static_cast<double>(v[i]));
      if (p == 0)
        acc += a != 0 ? 1.0 : 0.0;
      else if (p == 1)
        acc += a;
      else if (p == 2)
        acc += a * a;
      else
        acc += std::pow(a, p);
    }
    if (p == 0 || p == 1) return acc;
    if (p == 2) return std::sqrt(acc);
    return std::pow(acc, 1.0 / p);
  });
}

void arg_reduce(bool is_max, const Tensor& values, const Tensor& indices, const Tensor& x,
                int64_t dim) {
  if (indices.numel() == 0) return;
  ReducePlan plan = make_reduce_plan(x, uint64_t{1} << dim);
  visit_dtype(x.dtype(), [&]<typename T>() {
    using acc_t = opmath_t<T>;
    const T* p = plan.x.data_ptr<T>();
    T* vals = values.defined() ? values.data_ptr<T>() : nullptr;
    int64_t* idx = indices.data_ptr<int64_t>();
    const int64_t outer = plan.outer, n = plan.reduce, inner = plan.inner;
    parallel::parallel_for_if(outer * n * inner > kParallelGrain, 0, outer * inner,
                              [&](int64_t oi_begin, int64_t oi_end) {
                                for (int64_t oi = oi_begin; oi < oi_end; ++oi) {
                                  const int64_t o = oi / inner, i = oi % inner;
                                  const T* base = p + o * n * inner + i;
                                  acc_t best = static_cast<acc_t>(base[0]);
                                  int64_t best_r = 0;
                                  for (int64_t r = 1; r < n; ++r) {
                                    const acc_t v = static_cast<acc_t>(base[r * inner]);
                                    bool better = is_max ? v > best : v < best;
                                    if constexpr (is_floating_v<T>) {
                                      if (best != best) break;  // the first NaN is final
                                      better = better || v != v;
                                    }
                                    if (better) best = v, best_r = r;
                                  }
                                  if (vals != nullptr) vals[oi] = base[best_r * inner];
                                  idx[oi] = best_r;
                                }
                              });
  });
}

void cumulative(bool is_prod, const Tensor& out, const Tensor& x, int64_t dim) {
  if (out.numel() == 0) return;
  ReducePlan plan = make_reduce_plan(x, x.dim() == 0 ? 0 : uint64_t{1} << dim);
  visit_dtype(x.dtype(), [&]<typename T>() {
    // float types scan in double (as PyTorch's CPU kernel), integers in uint64 (modular).
    using acc_t = std::conditional_t<is_floating_v<T>, double, uint64_t>;
    const T* p = plan.x.data_ptr<T>();
    T* o = out.data_ptr<T>();
    const int64_t outer = plan.outer, n = plan.reduce, inner = plan.inner;
    auto load = [](T v) -> acc_t {
      if constexpr (is_floating_v<T>)
        return static_cast<double>(v);
      else
        return static_cast<uint64_t>(v);
    };
    parallel::parallel_for_if(
        outer * n * inner > kParallelGrain && outer > 1, 0, outer,
        [&](int64_t k_begin, int64_t k_end) {
          for (int64_t k = k_begin; k < k_end; ++k) {
            std::vector<acc_t> acc(static_cast<size_t>(inner), is_prod ? acc_t(1) : acc_t(0));
            for (int64_t r = 0; r < n; ++r) {
              const T* src = p + (k * n + r) * inner;
              T* dst = o + (k * n + r) * inner;
              for (int64_t i = 0; i < inner; ++i) {
                acc[i] = is_prod ? acc[i] * load(src[i]) : acc[i] + load(src[i]);
                dst[i] = cast_value<T>(acc[i]);
              }
            }
          }
        });
  });
}

}  // namespace kiln::cpu
