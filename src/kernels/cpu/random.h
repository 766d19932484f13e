// Random kernels over Philox (Note [Counter-based random numbers] in kiln/generator.h). Element i
// of `out` (row-major; out is contiguous) uses counter offset + i.
#pragma once

#include "kiln/tensor.h"

namespace kiln::cpu {

void uniform_fill(const Tensor& out, uint64_t seed, uint64_t offset);
void normal_fill(const Tensor& out, uint64_t seed, uint64_t offset);
// Integers in [low, low + range) with range in [1, 2^64] (range == 0 means 2^64).
void randint_fill(const Tensor& out, __int128 low, unsigned __int128 range, uint64_t seed,
                  uint64_t offset);
// out = x with elements zeroed with probability p, the rest scaled by 1/(1-p).
void dropout(const Tensor& out, const Tensor& x, double p, uint64_t seed, uint64_t offset);

}  // namespace kiln::cpu
