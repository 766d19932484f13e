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

// The element count of possibly symbolic sizes (sizes are checked >= 0 where concrete).
SymInt sym_checked_numel(std::string_view op, SymIntArrayRef sizes);

// The broadcast shape of two shapes (ShapeError naming `op` on mismatch).
DimVector broadcast_shapes(std::string_view op, IntArrayRef a, IntArrayRef b);
// The same for possibly symbolic shapes (Note [Broadcasting symbolic sizes]).
SymDimVector sym_broadcast_shapes(std::string_view op, SymIntArrayRef a, SymIntArrayRef b);

// Structural equality of two shapes: the same integers or the same size expressions; never
// guards (ArrayRef's == compares SymInts, which guards on symbolic elements).
inline bool same_shape(SymIntArrayRef a, SymIntArrayRef b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i])) return false;
  return true;
}

// Equality of two sizes that guards only when the expressions differ (identical expressions are
// equal for every input; Note [Guarding a symbolic value]).
inline bool sizes_equal(SymInt a, SymInt b) { return same(a, b) || static_cast<bool>(a == b); }
// Equal shapes, elementwise by sizes_equal.
inline bool shapes_equal(SymIntArrayRef a, SymIntArrayRef b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!sizes_equal(a[i], b[i])) return false;
  return true;
}

// "[2, 3]", "[s0, 4]" (symbolic sizes print as expressions, unguarded). Integer shapes pass as is.
std::string shape_str(SymIntArrayRef sizes);

}  // namespace kiln
