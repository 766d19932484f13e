// Helpers shared by the loss kernels (loss.cpp) and their backward kernels (loss_backward.cpp).
#pragma once

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "src/core/shape.h"
#include "src/kernels/cpu/loops.h"

namespace kiln::cpu {

// Class indices as int64 with -1 for ignored targets. Checked here, on one thread: IndexError for
// a target outside [0, C) that is not ignore_index (checked first, as PyTorch does).
inline std::vector<int64_t> class_indices(const Tensor& target, int64_t C, int64_t ignore_index,
                                          std::string_view op, IntArrayRef input_shape) {
  std::vector<int64_t> idx(static_cast<size_t>(target.numel()));
  visit_dtype_in<dtypes::kIntegral>(target.dtype(), op, [&]<typename I>() {
    const std::vector<I> raw = target.to_vector<I>();
    for (size_t i = 0; i < raw.size(); ++i) {
      const I v = raw[i];
      bool ignored, in_range;
      if constexpr (std::is_signed_v<I>) {
        ignored = static_cast<int64_t>(v) == ignore_index;
        in_range = v >= 0 && static_cast<int64_t>(v) < C;
      } else {
        ignored =
            ignore_index >= 0 && static_cast<uint64_t>(v) == static_cast<uint64_t>(ignore_index);
        in_range = static_cast<uint64_t>(v) < static_cast<uint64_t>(C);
      }
      KILN_CHECK(ignored || in_range, IndexError,
                 "{}: target {} (at position {} of target of shape {}) is out of range for {} "
                 "classes (input of shape {}); class indices must be in [0, {}) or equal "
                 "ignore_index ({})",
                 op, v, i, shape_str(target.sizes()), C, shape_str(input_shape), C, ignore_index);
      idx[i] = ignored ? -1 : static_cast<int64_t>(v);
    }
  });
  return idx;
}

// The max m of n contiguous values (A = float or double) and sum(exp(x - m)), vectorized
// (Highway, static dispatch: the library is built for the build machine). exp(x - m) is also
// stored to `exps` when it is not null. NaN inputs make the sum NaN.
template <typename A>
std::pair<A, A> max_and_exp_sum(const A* x, int64_t n, A* exps) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::ScalableTag<A> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  auto m0 = hn::Set(d, -std::numeric_limits<A>::infinity());
  auto m1 = m0;
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    m0 = hn::Max(m0, hn::LoadU(d, x + i));
    m1 = hn::Max(m1, hn::LoadU(d, x + i + lanes));
  }
  for (; i + lanes <= n; i += lanes) m0 = hn::Max(m0, hn::LoadU(d, x + i));
  A m = hn::GetLane(hn::MaxOfLanes(d, hn::Max(m0, m1)));
  for (; i < n; ++i) m = std::max(m, x[i]);
  const auto vm = hn::Set(d, m);
  auto s0 = hn::Zero(d);
  auto s1 = s0;
  i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto e0 = hn::Exp(d, hn::Sub(hn::LoadU(d, x + i), vm));
    const auto e1 = hn::Exp(d, hn::Sub(hn::LoadU(d, x + i + lanes), vm));
    if (exps != nullptr) {
      hn::StoreU(e0, d, exps + i);
      hn::StoreU(e1, d, exps + i + lanes);
    }
    s0 = hn::Add(s0, e0);
    s1 = hn::Add(s1, e1);
  }
  A sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
  for (; i < n; ++i) {
    const A e = std::exp(x[i] - m);
    if (exps != nullptr) exps[i] = e;
    sum += e;
  }
  return {m, sum};
}

}  // namespace kiln::cpu
