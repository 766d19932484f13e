#include "src/core/shape.h"
#include "src/sym/expr.h"

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

SymInt sym_checked_numel(std::string_view op, SymIntArrayRef sizes) {
  bool symbolic = false;
  for (SymInt s : sizes) symbolic |= s.is_symbolic();
  if (!symbolic)
    return checked_numel(op,
                         IntArrayRef(reinterpret_cast<const int64_t*>(sizes.data()), sizes.size()));
  SymInt n = 1;
  for (SymInt s : sizes) {
    KILN_CHECK(s.is_symbolic() || s.raw() >= 0, ValueError,
               "{}: negative size {} in shape {}; sizes must be >= 0", op, s, shape_str(sizes));
    n = n * s;
  }
  return n;
}

std::string shape_str(SymIntArrayRef sizes) { return fmt::format("[{}]", fmt::join(sizes, ", ")); }

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

// Note [Broadcasting symbolic sizes]
// A dim broadcasts when its size is 1. Under 0/1 specialization (src/sym/shape_env.h) a size
// symbol's range excludes 1, so `s0 == 1` is decided without a guard; a compound size such as
// (s0 + 1)//3, or any symbol with specialize_zero_one = false, can be 1, so `size == 1` is
// guarded for it. Two sizes that are
// the same expression match without a guard. Otherwise neither side is 1 and they must be equal:
// the comparison is guarded (Note [Guarding a symbolic value]), which fails with the usual
// ShapeError when the hints differ and otherwise records `a == b` (the ShapeEnv then treats the two
// symbols as one). The output takes the first operand's size.
SymDimVector sym_broadcast_shapes(std::string_view op, SymIntArrayRef a, SymIntArrayRef b) {
  const size_t n = std::max(a.size(), b.size());
  SymDimVector out(n);
  for (size_t i = 0; i < n; ++i) {
    const SymInt da = i < n - a.size() ? SymInt(1) : a[i - (n - a.size())];
    const SymInt db = i < n - b.size() ? SymInt(1) : b[i - (n - b.size())];
    // The ShapeEnv decides a bare symbol's `== 1` from its range without a guard under 0/1
    // specialization; without it (specialize_zero_one = false) the symbol may be 1 and is guarded.
    // A data-dependent size is not 1 here (Note [Size-oblivious reasoning]): if it is 1 when the
    // graph runs, the other side's size is the result all the same, or the check below fails.
    auto is_one = [](SymInt s) { return guard_size_oblivious(s == 1); };
    if (same(da, db) || is_one(db)) {
      out[i] = da;
    } else if (is_one(da)) {
      out[i] = db;
    } else {
      KILN_CHECK(da == db, ShapeError,
                 "{}: shapes {} and {} cannot be broadcast together (dim {} has sizes {} and {}); "
                 "sizes must match or be 1",
                 op, shape_str(a), shape_str(b), i, da, db);
      out[i] = da;
    }
  }
  return out;
}

}  // namespace kiln
