// Vector loops for the hot floating unary functions on contiguous float32/float64 data.
#pragma once

#include <cstdint>

#include "src/kernels/cpu/unary.h"

namespace kiln::cpu {

// True when `op` on `dtype` has a vector loop below.
bool has_vec_path(UnaryOp op, ScalarType dtype);
// out[i] = op(in[i]) for i in [0, n); in and out may be the same array. Only for ops where
// has_vec_path is true.
void vec_unary(UnaryOp op, const float* in, float* out, int64_t n);
void vec_unary(UnaryOp op, const double* in, double* out, int64_t n);

}  // namespace kiln::cpu
