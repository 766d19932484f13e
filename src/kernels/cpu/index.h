// Kernels for gather/scatter and advanced indexing. Indices arrive already read, range-checked
// and turned into element offsets by the ops (src/ops/index.cpp), so these loops never see an
// out-of-bounds index and never fail halfway through a write.
#pragma once

#include <vector>

#include "kiln/tensor.h"

namespace kiln::cpu {

// out[p] = src[src_offsets[p]] for every p (out contiguous, src's dtype).
void gather_offsets(const Tensor& out, const Tensor& src, const std::vector<int64_t>& src_offsets);

// dst[dst_offsets[p]] = values[p] (values contiguous with dst's dtype), or += with `accumulate`
// (duplicates accumulate; integer sums wrap, Half/BFloat16 add in float, bool ORs).
void scatter_offsets(const Tensor& dst, const std::vector<int64_t>& dst_offsets,
                     const Tensor& values, bool accumulate);

// The offsets of an advanced-indexing result laid out as [B, K, A]: element (b, k, a) lives at
// before[b] + index[k] + after[a] in the indexed tensor.
struct AdvancedOffsets {
  std::vector<int64_t> before, index, after;
  std::vector<int64_t> flatten() const;
  // True when `after` is 0, 1, 2, ... (two or more): each (b, k) then names a contiguous row of
  // after.size() elements (x[rows] and x[rows] = v on a row-major x), which gather_rows and
  // scatter_rows copy whole.
  bool rows_are_contiguous() const;
};

// gather_offsets and scatter_offsets (without accumulate) for offsets whose rows are contiguous:
// the same result, one memcpy per row. Rows are written in (b, k) order, so where two rows
// overlap the later one wins, as element by element.
void gather_rows(const Tensor& out, const Tensor& src, const AdvancedOffsets& offsets);
void scatter_rows(const Tensor& dst, const AdvancedOffsets& offsets, const Tensor& values);

}  // namespace kiln::cpu
