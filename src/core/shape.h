// Shape arithmetic shared by meta functions and kernels.
#pragma once

#include <string>
#include <string_view>

#include "kiln/tensor_impl.h"

namespace kiln {

// Checks that sizes are non-negative (ValueError naming `op` otherwise) and returns the element
// count, failing on overflow.
int64_t checked_numel(std::string_view op, IntArrayRef sizes);

// Wraps a possibly negative dim into [0, ndim) (IndexError naming `op` otherwise). A 0-dim
// tensor accepts dims -1 and 0, as PyTorch does.
int64_t wrap_dim(std::string_view op, int64_t dim, int64_t ndim);

// The broadcast shape of two shapes (ShapeError naming `op` on mismatch).
DimVector broadcast_shapes(std::string_view op, IntArrayRef a, IntArrayRef b);

// "[2, 3]"
std::string shape_str(IntArrayRef sizes);

}  // namespace kiln
