// Kernels for shape ops: the separable gather behind flip/roll/repeat/pad/index_select, the
// triangle masks of tril/triu, and nonzero.
#pragma once

#include <vector>

#include "kiln/tensor.h"

namespace kiln::cpu {

// Marks an output position that has no source element (constant padding): it gets `fill`.
inline constexpr int64_t kOutside = INT64_MIN;

// Note [Separable gather]
// Many shape ops read, for output position (i0, ..., in), the source element whose offset is
// tables[0][i0] + ... + tables[n][in] (element offsets, source strides already folded in):
// flip, roll, repeat, pad and index_select all have this form. `out` must be contiguous and have
// src's dtype; tables[d] has out.size(d) entries. An entry kOutside writes `fill` instead.
void separable_gather(const Tensor& out, const Tensor& src,
                      const std::vector<std::vector<int64_t>>& tables, const Scalar& fill);

// out = src with the elements above (tril) or below (triu) diagonal `k` of the last two dims
// zeroed. out is contiguous with src's shape and dtype.
void triangle(const Tensor& out, const Tensor& src, int64_t k, bool lower);

// The [n, ndim] int64 coordinates of the nonzero elements of src, in row-major order.
Tensor nonzero(const Tensor& src);

// Element offsets (in elements, with the given strides) of every position of `sizes`, in
// row-major order.
std::vector<int64_t> offset_table(IntArrayRef sizes, IntArrayRef strides);

}  // namespace kiln::cpu
