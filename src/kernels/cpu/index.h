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
};

}  // namespace kiln::cpu
