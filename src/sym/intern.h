// Internal to src/sym: building interned nodes (Note [Interned expressions] in expr.h).
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "src/sym/expr.h"

namespace kiln::sym::detail {

// The unique node with these fields. Callers pass canonical fields (Note [Canonical form] in
// simplify.cpp); intern() itself does not simplify.
ExprPtr intern(ExprKind kind, int64_t value, std::string_view name, std::vector<ExprPtr> args);

// Rebuilds a node of `kind` from (possibly new) arguments through the simplifying factories.
ExprPtr rebuild(ExprKind kind, std::span<const ExprPtr> args);

}  // namespace kiln::sym::detail
