// Row-major GEMM overloaded by element type (float32 through oneDNN where it is faster, else
// OpenBLAS's cblas), for kernels that call BLAS on raw buffers
// (conv.cpp, conv_backward.cpp, attention.cpp, blas.cpp): c = alpha * op(a) op(b) + beta * c.
#pragma once

#include <cblas.h>

#include <cstring>
#include <type_traits>

#include "src/kernels/cpu/onednn_gemm.h"

namespace kiln::cpu {

// Note [Zeroing the output before BLAS]
// With beta == 0, OpenBLAS first runs its own scaling kernel over C (sgemm_beta), which is slower
// than memset: a product of [512, 64] x [64, 784] (an MLP's weight gradient) took 0.36 ms with
// beta = 0 and 0.31 ms as memset plus beta = 1 (0.5-15% on every shape measured; the beta kernel
// was 12% of an MLP training step's profile). The result is the same: BLAS with beta = 0 does
// not read C either, and accumulates into zeros.
template <typename T>
void zero_matrix(T* c, int m, int n, int ldc) {
  if (ldc == n) {
    std::memset(c, 0, sizeof(T) * static_cast<size_t>(m) * static_cast<size_t>(n));
    return;
  }
  for (int i = 0; i < m; ++i) std::memset(c + static_cast<size_t>(i) * ldc, 0, sizeof(T) * n);
}

template <typename T>
void blas_gemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, T alpha, const T* a,
               int lda, const T* b, int ldb, T beta, T* c, int ldc) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  if constexpr (std::is_same_v<T, float>) {
    if (onednn_sgemm_enabled()) {  // Note [oneDNN for float32 products]
      onednn_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
    }
  }
  if (beta == T(0) && k > 0) {  // Note [Zeroing the output before BLAS]
    zero_matrix(c, m, n, ldc);
    beta = T(1);
  }
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

template <typename T>
void blas_gemm(bool trans_a, bool trans_b, int m, int n, int k, const T* a, int lda, const T* b,
               int ldb, T beta, T* c, int ldc) {
  blas_gemm(trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, T(1),
            a, lda, b, ldb, beta, c, ldc);
}

}  // namespace kiln::cpu
