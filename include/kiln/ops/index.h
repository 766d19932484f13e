// Indexing as free functions, as in LibTorch (torch.index, torch.index_put_, F.one_hot). Most
// code uses the Tensor methods instead: t.index({Slice(1, None), mask}), t.gather(dim, idx).
#pragma once

#include <optional>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

// Advanced indexing: one optional index tensor per leading dim (undefined Tensor = whole dim).
// Integer tensors of any integer dtype (unsigned included) or bool masks.
Tensor index(const Tensor& self, const std::vector<Tensor>& indices);
// self[indices] = values (broadcast), or += with accumulate (duplicate indices add up).
const Tensor& index_put_(const Tensor& self, const std::vector<Tensor>& indices,
                         const Tensor& values, bool accumulate = false);
// The elements of `self` where the bool `mask` (broadcast with it) is true, as a 1-D tensor.
Tensor masked_select(const Tensor& self, const Tensor& mask);
// [..., num_classes] int64 with a 1 at each value of `self` (an integer tensor). num_classes=-1
// infers max(self) + 1 (CPU only: Meta tensors have no values).
Tensor one_hot(const Tensor& self, int64_t num_classes = -1);

// The distinct values of `self` (flattened), sorted ascending (NaNs last, each NaN its own
// value, as PyTorch); `inverse` has self's shape and holds each element's index into `values`;
// `counts` how often each value occurs. The length of `values` depends on the data: an unbacked
// size under kiln::compile with capture_dynamic_output_shape_ops.
struct UniqueResult {
  Tensor values, inverse, counts;
};
UniqueResult unique(const Tensor& self);

// repeat_interleave(repeats): [sum(repeats)], index i repeated repeats[i] times (1-D integer
// repeats, none negative; the result has their dtype). Its length depends on the data unless
// `output_size` gives it (checked).
Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size = std::nullopt);
// Each slice of `self` along `dim` (of the flattened self when dim is absent) repeated
// repeats[i] times; `repeats` has one element per slice, or one element for all.
Tensor repeat_interleave(const Tensor& self, const Tensor& repeats,
                         std::optional<int64_t> dim = std::nullopt,
                         std::optional<int64_t> output_size = std::nullopt);
Tensor repeat_interleave(const Tensor& self, int64_t repeats,
                         std::optional<int64_t> dim = std::nullopt);

}  // namespace kiln
