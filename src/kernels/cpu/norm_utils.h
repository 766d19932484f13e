// Row reductions shared by the normalization and loss kernels.
//
// Note [Vectorizable reductions]
// A plain `s += x[i]` loop does not vectorize without -ffast-math (the compiler may not reorder
// float additions). Keeping kLanes independent partial sums makes the reordering explicit: the
// fixed-length inner loop becomes a few vector adds per step, and the partials are summed at the
// end. The result differs from sequential summation only by rounding, and is usually closer.
#pragma once

#include <cstdint>

#include "kiln/dtype.h"

namespace kiln::cpu {

// 64 bytes of accumulators per lane group: 16 floats or 8 doubles, times 2 for latency hiding.
template <typename Acc>
inline constexpr int kLanes = 2 * 64 / static_cast<int>(sizeof(Acc));

// Sum of n values of T, accumulated in Acc.
template <typename Acc, typename T>
Acc sum_span(const T* x, int64_t n) {
  Acc acc[kLanes<Acc>] = {};
  int64_t i = 0;
  for (; i + kLanes<Acc> <= n; i += kLanes<Acc>)
    for (int j = 0; j < kLanes<Acc>; ++j) acc[j] += static_cast<Acc>(x[i + j]);
  Acc s = 0;
  for (int j = 0; j < kLanes<Acc>; ++j) s += acc[j];
  for (; i < n; ++i) s += static_cast<Acc>(x[i]);
  return s;
}

// Sum of (x - mean)^2 over n values of T, accumulated in Acc.
template <typename Acc, typename T>
Acc sum_sq_dev_span(const T* x, int64_t n, Acc mean) {
  Acc acc[kLanes<Acc>] = {};
  int64_t i = 0;
  for (; i + kLanes<Acc> <= n; i += kLanes<Acc>) {
    for (int j = 0; j < kLanes<Acc>; ++j) {
      const Acc d = static_cast<Acc>(x[i + j]) - mean;
      acc[j] += d * d;
    }
  }
  Acc s = 0;
  for (int j = 0; j < kLanes<Acc>; ++j) s += acc[j];
  for (; i < n; ++i) {
    const Acc d = static_cast<Acc>(x[i]) - mean;
    s += d * d;
  }
  return s;
}

// Converts n values between a storage type and its compute type.
template <typename T, typename A>
void widen(const T* x, A* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<A>(x[i]);
}
template <typename A, typename T>
void narrow_span(const A* x, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(x[i]);
}

}  // namespace kiln::cpu
