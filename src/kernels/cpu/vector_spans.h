// Vector loops over short rows with Highway (pool.cpp, pool_backward.cpp).
#pragma once

#include <hwy/highway.h>

#include <cstdint>

namespace kiln::cpu {

// Note [Short pooled rows]
// Runs body(d, at) for vectors of d's lanes covering [ox, n): full-width vectors first, then
// 4-lane ones, advancing ox past them. The demo CNN's pooled rows are 14 and 7 wide: with 8-lane
// (AVX2) vectors alone, 6 of 14 and all 7 of 7 elements went to the scalar loop, and max_pool's
// backward was 8% of a CNN training step.
//
// The last partial span then runs as one more 4-lane vector ending at n, overlapping elements
// already done, when the row has at least 4: the body must write each element from inputs it
// does not modify (pooling's stores are), so doing an element twice gives the same result.
// Only rows shorter than 4 are left to the scalar loop.
template <typename T, typename Body>
void for_each_vector_span(int64_t n, int64_t& ox, const Body& body) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::ScalableTag<T> full;
  const int64_t full_lanes = static_cast<int64_t>(hn::Lanes(full));
  for (; ox + full_lanes <= n; ox += full_lanes) body(full, ox);
  const hn::CappedTag<T, 4> quarter;
  const int64_t quarter_lanes = static_cast<int64_t>(hn::Lanes(quarter));
  if (quarter_lanes < full_lanes) {
    for (; ox + quarter_lanes <= n; ox += quarter_lanes) body(quarter, ox);
  }
  if (ox < n && n >= quarter_lanes) {
    body(quarter, n - quarter_lanes);
    ox = n;
  }
}

}  // namespace kiln::cpu
