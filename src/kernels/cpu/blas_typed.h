// Row-major cblas GEMM overloaded by element type, for kernels that call BLAS on raw buffers
// (conv.cpp, conv_backward.cpp): c = alpha * op(a) op(b) + beta * c.
#pragma once

#include <cblas.h>

namespace kiln::cpu {

inline void blas_gemm(bool trans_a, bool trans_b, int m, int n, int k, const float* a, int lda,
                      const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}
inline void blas_gemm(bool trans_a, bool trans_b, int m, int n, int k, const double* a, int lda,
                      const double* b, int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace kiln::cpu
