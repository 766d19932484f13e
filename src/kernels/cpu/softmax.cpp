// softmax / log_softmax.
//
// Along a contiguous last dim each row is one fused kernel: max, exp(x - max) and its sum,
// normalize, all while the row is in L1. float32 rows use Highway (hn::Exp) with static dispatch
// (the library is built for the build machine, -march=native). Other dims take the strided path:
// rows are [reduce, inner] blocks processed column-vectorized in opmath. NaN anywhere in a row
// makes the whole row NaN, as in PyTorch; so does a row of all -inf or one with +inf.
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "src/kernels/cpu/loops.h"
#include "src/kernels/cpu/nn_kernels.h"
#include "src/kernels/cpu/reduce.h"
#include "src/kernels/cpu/tensor_iter.h"
#include "src/util/parallel.h"

namespace kiln::cpu {

namespace hn = hwy::HWY_NAMESPACE;

float softmax_row_f32(const float* x, float* y, int64_t n, bool log) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  // Pass 1: the max, with two accumulators so loads overlap. A NaN anywhere in the row makes the
  // whole row NaN (as PyTorch); the vector max drops NaN, so the same pass looks for it.
  auto m0 = hn::Set(d, -std::numeric_limits<float>::infinity());
  auto m1 = m0;
  auto nan = hn::Zero(d);
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto v0 = hn::LoadU(d, x + i), v1 = hn::LoadU(d, x + i + lanes);
    m0 = hn::Max(m0, v0);
    m1 = hn::Max(m1, v1);
    nan = hn::Or(nan, hn::Or(hn::VecFromMask(d, hn::IsNaN(v0)), hn::VecFromMask(d, hn::IsNaN(v1))));
  }
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::LoadU(d, x + i);
    m0 = hn::Max(m0, v);
    nan = hn::Or(nan, hn::VecFromMask(d, hn::IsNaN(v)));
  }
  float m = hn::GetLane(hn::MaxOfLanes(d, hn::Max(m0, m1)));
  bool has_nan = !hn::AllFalse(d, hn::MaskFromVec(nan));
  for (; i < n; ++i) {
    m = std::max(m, x[i]);
    has_nan |= std::isnan(x[i]);
  }
  if (has_nan) {
    std::fill(y, y + n, std::numeric_limits<float>::quiet_NaN());
    return std::numeric_limits<float>::quiet_NaN();
  }
  if (m == -std::numeric_limits<float>::infinity()) {
    // Every element -inf (or an empty row): exp(x - m) would be NaN; the caller decides.
    std::fill(y, y + n, std::numeric_limits<float>::quiet_NaN());
    return m;
  }
  // Pass 2: e = exp(x - m) (stored for softmax) and its sum.
  const auto vm = hn::Set(d, m);
  auto s0 = hn::Zero(d);
  auto s1 = hn::Zero(d);
  i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto e0 = hn::Exp(d, hn::Sub(hn::LoadU(d, x + i), vm));
    const auto e1 = hn::Exp(d, hn::Sub(hn::LoadU(d, x + i + lanes), vm));
    if (!log) {
      hn::StoreU(e0, d, y + i);
      hn::StoreU(e1, d, y + i + lanes);
    }
    s0 = hn::Add(s0, e0);
    s1 = hn::Add(s1, e1);
  }
  for (; i + lanes <= n; i += lanes) {
    const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, x + i), vm));
    if (!log) hn::StoreU(e, d, y + i);
    s0 = hn::Add(s0, e);
  }
  float sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
  for (; i < n; ++i) {
    const float e = std::exp(x[i] - m);
    if (!log) y[i] = e;
    sum += e;
  }
  // Pass 3: normalize.
  if (log) {
    // (x - m) - log(sum), not x - (m + log(sum)): m may be so large that log(sum) is lost in it.
    const float lse = std::log(sum);
    const auto vl = hn::Set(d, lse);
    i = 0;
    for (; i + lanes <= n; i += lanes)
      hn::StoreU(hn::Sub(hn::Sub(hn::LoadU(d, x + i), vm), vl), d, y + i);
    for (; i < n; ++i) y[i] = (x[i] - m) - lse;
  } else {
    const float inv = 1.0f / sum;
    const auto vi = hn::Set(d, inv);
    i = 0;
    for (; i + lanes <= n; i += lanes) hn::StoreU(hn::Mul(hn::LoadU(d, y + i), vi), d, y + i);
    for (; i < n; ++i) y[i] *= inv;
  }
  return m;
}

namespace {

// Any floating T, one contiguous row, computed in acc_t (float for 16-bit types).
template <typename T>
void softmax_row(const T* x, T* y, int64_t n, bool log) {
  using acc_t = opmath_t<T>;
  acc_t m = -std::numeric_limits<acc_t>::infinity();
  for (int64_t i = 0; i < n; ++i) m = std::max(m, static_cast<acc_t>(x[i]));
  acc_t sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<acc_t>(x[i]) - m);
  const acc_t lse = std::log(sum), inv = acc_t(1) / sum;
  for (int64_t i = 0; i < n; ++i) {
    const acc_t v = static_cast<acc_t>(x[i]) - m;
    y[i] = static_cast<T>(log ? v - lse : std::exp(v) * inv);
  }
}

// One [n, inner] block: softmax down each column, vectorized along the columns.
template <typename T>
void softmax_cols(const T* x, T* y, int64_t n, int64_t inner, bool log) {
  using acc_t = opmath_t<T>;
  std::vector<acc_t> m(static_cast<size_t>(inner), -std::numeric_limits<acc_t>::infinity());
  std::vector<acc_t> s(static_cast<size_t>(inner), acc_t(0));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < inner; ++c) m[c] = std::max(m[c], static_cast<acc_t>(x[r * inner + c]));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < inner; ++c)
      s[c] += std::exp(static_cast<acc_t>(x[r * inner + c]) - m[c]);
  for (int64_t c = 0; c < inner; ++c) s[c] = log ? std::log(s[c]) : acc_t(1) / s[c];
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < inner; ++c) {
      const acc_t v = static_cast<acc_t>(x[r * inner + c]) - m[c];
      y[r * inner + c] = static_cast<T>(log ? v - s[c] : std::exp(v) * s[c]);
    }
}

}  // namespace

void softmax(const Tensor& out, const Tensor& x, int64_t dim, bool log) {
  if (out.numel() == 0) return;
  ReducePlan plan = make_reduce_plan(x, x.dim() == 0 ? 0 : uint64_t{1} << dim);
  visit_dtype_in<dtypes::kFloating>(x.dtype(), "softmax", [&]<typename T>() {
    const T* p = plan.x.data_ptr<T>();
    T* o = out.data_ptr<T>();
    const int64_t outer = plan.outer, n = plan.reduce, inner = plan.inner;
    const bool parallel = outer * n * inner > kParallelGrain && outer > 1;
    if (inner == 1) {
      parallel::parallel_for_if(parallel, 0, outer, [&](int64_t r_begin, int64_t r_end) {
        for (int64_t r = r_begin; r < r_end; ++r) {
          if constexpr (std::is_same_v<T, float>) {
            softmax_row_f32(p + r * n, o + r * n, n, log);
          } else {
            softmax_row(p + r * n, o + r * n, n, log);
          }
        }
      });
      return;
    }
    parallel::parallel_for_if(parallel, 0, outer, [&](int64_t r_begin, int64_t r_end) {
      for (int64_t r = r_begin; r < r_end; ++r)
        softmax_cols(p + r * n * inner, o + r * n * inner, n, inner, log);
    });
  });
}

}  // namespace kiln::cpu
