// Matrix products with a short side, as vector loops instead of BLAS calls (conv.cpp,
// conv_backward.cpp).
#pragma once

#include <hwy/highway.h>

#include <cstdint>
#include <type_traits>

namespace kiln::cpu {

// Note [Shallow products]
// A first convolution layer (one input channel, a 3x3 kernel) unrolls to a depth of 9: its
// forward is [O, 9] x [9, oH*oW] and its weight gradient [O, oH*oW] x [oH*oW, 9]. OpenBLAS runs
// such products at a fifth of its large-matrix rate (packing both operands for a depth-9 product,
// a 9-wide output), so the demo CNN's first convolution took 1.5 ms forward and 3 ms backward for
// 58 MFLOP each. Written directly, both are a few vector instructions per output vector:
//   shallow_product:    c[i, :] = init[i] + sum_t a[i, t] b[t, :], four rows of c and two vectors
//                       of columns at a time (eight accumulators; each b vector loaded once for
//                       four rows).
//   shallow_product_nt: c[i, t] += sum_j a[i, j] b[t, j] (dot products along the long side), one
//                       row of a against up to kTapBlock rows of b at a time; it can also sum each
//                       row of a (a convolution's bias gradient) in the same pass.
// kMaxShallowDepth bounds the short side where these are used instead of BLAS.
inline constexpr int64_t kMaxShallowDepth = 16;

// c[i, j] = (init ? init[i] : 0) + sum_{t < k} a[i * lda + t] * b[t * ldb + j], for i < m, j < n.
template <typename T>
void shallow_product(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
                     int64_t ldb, const T* init, T* c, int64_t ldc) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  constexpr int64_t kRows = 4;
  auto row_block = [&](int64_t i0, auto rows_tag) {
    constexpr int64_t R = decltype(rows_tag)::value;
    T start[R];
    for (int64_t r = 0; r < R; ++r) start[r] = init != nullptr ? init[i0 + r] : T(0);
    int64_t j = 0;
    for (; j + 2 * lanes <= n; j += 2 * lanes) {
      V lo[R], hi[R];
      for (int64_t r = 0; r < R; ++r) lo[r] = hi[r] = hn::Set(d, start[r]);
      for (int64_t t = 0; t < k; ++t) {
        const V b_lo = hn::LoadU(d, b + t * ldb + j), b_hi = hn::LoadU(d, b + t * ldb + j + lanes);
        for (int64_t r = 0; r < R; ++r) {
          const V w = hn::Set(d, a[(i0 + r) * lda + t]);
          lo[r] = hn::MulAdd(w, b_lo, lo[r]);
          hi[r] = hn::MulAdd(w, b_hi, hi[r]);
        }
      }
      for (int64_t r = 0; r < R; ++r) {
        hn::StoreU(lo[r], d, c + (i0 + r) * ldc + j);
        hn::StoreU(hi[r], d, c + (i0 + r) * ldc + j + lanes);
      }
    }
    for (; j < n; ++j) {
      for (int64_t r = 0; r < R; ++r) {
        T sum = start[r];
        for (int64_t t = 0; t < k; ++t) sum += a[(i0 + r) * lda + t] * b[t * ldb + j];
        c[(i0 + r) * ldc + j] = sum;
      }
    }
  };
  int64_t i = 0;
  for (; i + kRows <= m; i += kRows) row_block(i, std::integral_constant<int64_t, kRows>());
  for (; i < m; ++i) row_block(i, std::integral_constant<int64_t, 1>());
}

// One row of a against kTaps rows of b: c[t] += sum_j a[j] * b[t * ldb + j], and *row_sum +=
// sum_j a[j] where row_sum is not null. kTaps is a template argument so that the accumulators
// stay in registers.
template <int kTaps, typename T>
void shallow_dot_block(int64_t n, const T* a, const T* b, int64_t ldb, T* c, T* row_sum) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  V acc[kTaps];
  for (int t = 0; t < kTaps; ++t) acc[t] = hn::Zero(d);
  V sum = hn::Zero(d);
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    const V x = hn::LoadU(d, a + j);
    if (row_sum != nullptr) sum = hn::Add(sum, x);
    for (int t = 0; t < kTaps; ++t) acc[t] = hn::MulAdd(x, hn::LoadU(d, b + t * ldb + j), acc[t]);
  }
  T tail[kTaps] = {};
  T tail_sum = 0;
  for (; j < n; ++j) {
    tail_sum += a[j];
    for (int t = 0; t < kTaps; ++t) tail[t] += a[j] * b[t * ldb + j];
  }
  for (int t = 0; t < kTaps; ++t) c[t] += hn::GetLane(hn::SumOfLanes(d, acc[t])) + tail[t];
  if (row_sum != nullptr) *row_sum += hn::GetLane(hn::SumOfLanes(d, sum)) + tail_sum;
}

// c[i * ldc + t] += sum_{j < n} a[i * lda + j] * b[t * ldb + j], for i < m, t < k; and, where
// row_sums is not null, row_sums[i] += sum_j a[i * lda + j].
template <typename T>
void shallow_product_nt(int64_t m, int64_t k, int64_t n, const T* a, int64_t lda, const T* b,
                        int64_t ldb, T* c, int64_t ldc, T* row_sums) {
  constexpr int64_t kTapBlock = 8;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t t0 = 0; t0 < k; t0 += kTapBlock) {
      const T* a_row = a + i * lda;
      const T* b_rows = b + t0 * ldb;
      T* c_row = c + i * ldc + t0;
      T* sum = row_sums != nullptr && t0 == 0 ? row_sums + i : nullptr;
      switch (k - t0 < kTapBlock ? k - t0 : kTapBlock) {
        case 1:
          shallow_dot_block<1>(n, a_row, b_rows, ldb, c_row, sum);
          break;
        case 2:
          shallow_dot_block<2>(n, a_row, b_rows, ldb, c_row, sum);
          break;
        case 3:
          shallow_dot_block<3>(n, a_row, b_rows, ldb, c_row, sum);
          break;
        case 4:
          shallow_dot_block<4>(n, a_row, b_rows, ldb, c_row, sum);
          break;
        case 5:
          shallow_dot_block<5>(n, a_row, b_rows, ldb, c_row, sum);
          break;
        case 6:
          shallow_dot_block<6>(n, a_row, b_rows, ldb, c_row, sum);
          break;
        case 7:
          shallow_dot_block<7>(n, a_row, b_rows, ldb, c_row, sum);
          break;
        default:
          shallow_dot_block<8>(n, a_row, b_rows, ldb, c_row, sum);
          break;
      }
    }
  }
}

}  // namespace kiln::cpu
