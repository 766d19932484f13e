// float32 matrix products through oneDNN's GEMM, where it is the faster library (Note [oneDNN for
// float32 products] in onednn_gemm.cpp). blas_gemm (blas_typed.h) asks first, then calls it.
#pragma once

#include <cblas.h>

namespace kiln::cpu {

// True when float32 GEMMs go to oneDNN: decided once per process, from the CPU it runs on and
// KILN_GEMM (`openblas` or `onednn` forces one library).
bool onednn_sgemm_enabled();

// Row-major c = alpha * op(a) op(b) + beta * c, as cblas_sgemm; with beta == 0, c is not read.
void onednn_sgemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha,
                  const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc);

}  // namespace kiln::cpu
