// Matrix products for the linalg ops (src/ops/linalg.cpp): BLAS for floating dtypes (blas.cpp),
// an own blocked kernel for integer dtypes (matmul_int.cpp).
//
// Operands are 2-D [M, K] / [K, N] or 3-D batched [B, M, K] / [B, K, N] tensors with any strides
// (a batch stride of 0, from expand, is fine); `out` is a fresh contiguous [M, N] / [B, M, N].
// Both compute out = beta * out + alpha * (a @ b); when beta is 0 the old contents of out are
// ignored (never read, so uninitialized NaNs do not leak), as BLAS specifies.
#pragma once

#include "kiln/tensor.h"

namespace kiln::cpu {

// float16, bfloat16 (through float32), float32, float64.
void gemm_floating(const Tensor& a, const Tensor& b, const Tensor& out, const Scalar& alpha,
                   const Scalar& beta);
// Every integer dtype; modular (wrap-around) arithmetic as the unsigned type of the same width.
void gemm_integral(const Tensor& a, const Tensor& b, const Tensor& out, const Scalar& alpha,
                   const Scalar& beta);

// The dtypes the two kernels cover together.
inline constexpr DTypeSet kGemmDTypes = dtypes::kNumeric;

}  // namespace kiln::cpu
