#include "src/autograd/formulas/grad_utils.h"

#include <algorithm>

namespace kiln::autograd {

DimVector reduced_dims(IntArrayRef dims, int64_t rank) {
  DimVector out;
  // A 0-dim tensor has no dims to reduce; `dims` may still name dim 0 (or -1), as PyTorch allows.
  if (rank == 0) return out;
  if (dims.empty()) {
    for (int64_t d = 0; d < rank; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : dims) out.push_back(wrap_dim("backward", d, rank));
  std::sort(out.begin(), out.end());
  return out;
}

Tensor unsqueeze_reduced(const Tensor& grad, IntArrayRef dims, int64_t rank, bool keepdim) {
  if (keepdim || rank == 0) return grad;
  Tensor g = grad;
  for (int64_t d : reduced_dims(dims, rank)) g = g.unsqueeze(d);
  return g;
}

Tensor expand_reduced(const Tensor& grad, IntArrayRef dims, SymIntArrayRef input_sizes,
                      bool keepdim) {
  return unsqueeze_reduced(grad, dims, static_cast<int64_t>(input_sizes.size()), keepdim)
      .expand(input_sizes);
}

}  // namespace kiln::autograd
