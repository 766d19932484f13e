// Simplification of index expressions with the ranges of loop variables (the generic simplifier
// in src/sym knows nothing of ranges). A loop variable v of a loop over [0, n) makes v // n zero
// and v % n equal to v; the unflatten-then-flatten of a reshape, x//k*k + x%k, is x again.
#pragma once

#include <optional>
#include <unordered_map>
#include <vector>

#include "src/sym/expr.h"

namespace kiln::lower {

// Loop variable -> its loop's size (the variable ranges over [0, size)).
using VarRanges = std::unordered_map<sym::ExprPtr, sym::ExprPtr>;

sym::ExprPtr simplify_index(sym::ExprPtr e, const VarRanges& ranges);

// The loop variables of a loop nest: i0, i1, ... (or r0, r1, ... for reduction loops).
std::vector<sym::ExprPtr> loop_vars(char prefix, size_t n);

// Coefficient of variable `v` in `e` when e is linear in v (a sum whose terms mention v only as
// c*v with c free of loop variables); nullopt otherwise. 0 when v does not occur.
std::optional<sym::ExprPtr> linear_coefficient(sym::ExprPtr e, sym::ExprPtr v);

// True when e >= 0 for every value of the loop variables and size symbols (sizes are >= 0).
bool is_nonnegative(sym::ExprPtr e, const VarRanges& ranges);

// e with every variable of `vars` set to 0.
sym::ExprPtr drop_vars(sym::ExprPtr e, const std::vector<sym::ExprPtr>& vars);

}  // namespace kiln::lower
