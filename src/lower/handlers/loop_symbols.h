// The symbols that stand for loop variables when a handler runs a body over a whole iteration
// space: i0, i1, ... for the output (pointwise) loops and r0, r1, ... for the reduction loops.
#pragma once

#include <string>
#include <vector>

#include "src/sym/expr.h"

namespace kiln::lower {

// `n` symbols named prefix0, prefix1, ... ("i" gives i0, i1).
inline std::vector<sym::ExprPtr> loop_symbols(std::string_view prefix, size_t n) {
  std::vector<sym::ExprPtr> vars;
  vars.reserve(n);
  for (size_t d = 0; d < n; ++d)
    vars.push_back(sym::symbol(std::string(prefix) + std::to_string(d)));
  return vars;
}

}  // namespace kiln::lower
