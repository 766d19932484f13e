#include "src/core/shape.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace kiln {

int64_t checked_numel(std::string_view op, IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    KILN_CHECK(s >= 0, ValueError, "{}: negative size {} in shape {}; sizes must be >= 0", op, s,
               shape_str(sizes));
    KILN_CHECK(!__builtin_mul_overflow(n, s, &n), ValueError,
               "{}: shape {} has more elements than fit in int64", op, shape_str(sizes));
  }
  return n;
}

int64_t wrap_dim(std::string_view op, int64_t dim, int64_t ndim) {
  const int64_t n = ndim == 0 ? 1 : ndim;
  KILN_CHECK(dim >= -n && dim < n, IndexError,
             "{}: dimension {} is out of range for a tensor with {} dims (expected in [{}, {}])",
             op, dim, ndim, -n, n - 1);
  return dim < 0 ? dim + n : dim;
}

std::string shape_str(IntArrayRef sizes) { return fmt::format("[{}]", fmt::join(sizes, ", ")); }

DimVector broadcast_shapes(std::string_view op, IntArrayRef a, IntArrayRef b) {
  const size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    KILN_CHECK(da == db || da == 1 || db == 1, ShapeError,
               "{}: shapes {} and {} cannot be broadcast together (dim {} has sizes {} and {}); "
               "sizes must match or be 1",
               op, shape_str(a), shape_str(b), i, da, db);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace kiln
