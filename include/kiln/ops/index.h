// Indexing as free functions, as in LibTorch (torch.index, torch.index_put_, F.one_hot). Most
// code uses the Tensor methods instead: t.index({Slice(1, None), mask}), t.gather(dim, idx).
#pragma once

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

}  // namespace kiln
