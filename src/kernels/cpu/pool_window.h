// The window scan of max pooling, shared by the forward (pool.cpp) and the gradient that rescans
// instead of storing indices (pool_backward.cpp), so both pick the same element: the first
// largest one in row-major window order, or the last NaN (NaN propagates, as in PyTorch).
//
// One output row at a time, taps outermost: for each window tap, one pass over the row's output
// columns updates their running maxima. The columns are independent, so the updates overlap in
// the pipeline, and they are branch-free selects: a compare-and-branch on random data mispredicts
// about every other element, which made a per-window scan ten times slower than this.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "src/kernels/cpu/conv.h"
#include "src/kernels/cpu/im2col.h"
#include "src/kernels/cpu/loops.h"

namespace kiln::cpu {

// In-bounds positions begin, begin + dilation, ... (< end) of the window of output position o
// along one dim; begin >= end when every tap lies in the padding.
struct WindowRange {
  int64_t begin, end;
};
inline WindowRange window_range(int64_t o, int64_t stride, int64_t pad, int64_t kernel,
                                int64_t dilation, int64_t in) {
  int64_t begin = o * stride - pad;
  const int64_t end = std::min(begin + (kernel - 1) * dilation + 1, in);
  if (begin < 0) begin += (-begin + dilation - 1) / dilation * dilation;
  return {begin, end};
}

// take ? a : b without a branch (compilers turn the plain ternary into one here).
template <typename A>
inline A select_if(bool take, A a, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    using Bits = std::conditional_t<sizeof(A) == 4, uint32_t, uint64_t>;
    const Bits mask = Bits(0) - static_cast<Bits>(take);
    return std::bit_cast<A>(
        static_cast<Bits>((std::bit_cast<Bits>(a) & mask) | (std::bit_cast<Bits>(b) & ~mask)));
  } else {
    using Bits = std::make_unsigned_t<A>;
    const Bits mask = Bits(0) - static_cast<Bits>(take);
    return static_cast<A>((static_cast<Bits>(a) & mask) | (static_cast<Bits>(b) & ~mask));
  }
}

// One window tap (kernel row at input row `row`, column offset dx) for output columns [lo, hi):
// a larger value (or a NaN) replaces the running maximum. kStride > 0 fixes stride_w at compile
// time so the strided loads vectorize; 0 reads it from `stride`.
template <int kStride, bool kIndex, typename T, typename Acc>
inline void max_pool_tap(const T* row, int64_t row_offset, int64_t dx, int64_t stride, int64_t lo,
                         int64_t hi, Acc* best, int64_t* index) {
  const int64_t s = kStride > 0 ? kStride : stride;
  for (int64_t ox = lo; ox < hi; ++ox) {
    const int64_t x = ox * s + dx;
    const Acc v = static_cast<Acc>(row[x]);
    bool take = v > best[ox];
    if constexpr (std::is_floating_point_v<Acc>) take = take | (v != v);
    best[ox] = select_if(take, v, best[ox]);
    if constexpr (kIndex) index[ox] = select_if(take, row_offset + x, index[ox]);
  }
}

// For output row oy of `plane` ([in_h, in_w]): best[ox] = the maximum of window ox and, when
// kIndex, index[ox] = its flat position (y * in_w + x), for every ox < out_w. A window with every
// tap in the padding keeps its first position and the lowest value.
template <bool kIndex, typename T>
void max_pool_row(const T* plane, const PoolGeometry& g, int64_t oy, opmath_t<T>* best,
                  int64_t* index) {
  using Acc = opmath_t<T>;
  Acc lowest = std::numeric_limits<Acc>::lowest();
  if constexpr (std::is_floating_point_v<Acc>) lowest = -std::numeric_limits<Acc>::infinity();
  const WindowRange ys = window_range(oy, g.stride_h, g.pad_h, g.kernel_h, g.dilation_h, g.in_h);
  std::fill(best, best + g.out_w, lowest);
  if constexpr (kIndex) {
    for (int64_t ox = 0; ox < g.out_w; ++ox) {
      const WindowRange xs =
          window_range(ox, g.stride_w, g.pad_w, g.kernel_w, g.dilation_w, g.in_w);
      index[ox] = ys.begin * g.in_w + xs.begin;
    }
  }
  for (int64_t y = ys.begin; y < ys.end; y += g.dilation_h) {
    const T* row = plane + y * g.in_w;
    for (int64_t j = 0; j < g.kernel_w; ++j) {
      const int64_t dx = j * g.dilation_w - g.pad_w;
      const ValidRange xs = valid_range(dx, g.stride_w, g.in_w, g.out_w);
      const int64_t offset = y * g.in_w;
      if (g.stride_w == 1) {
        max_pool_tap<1, kIndex>(row, offset, dx, 1, xs.lo, xs.hi, best, index);
      } else if (g.stride_w == 2) {
        max_pool_tap<2, kIndex>(row, offset, dx, 2, xs.lo, xs.hi, best, index);
      } else {
        max_pool_tap<0, kIndex>(row, offset, dx, g.stride_w, xs.lo, xs.hi, best, index);
      }
    }
  }
}

}  // namespace kiln::cpu
