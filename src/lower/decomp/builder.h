// What a decomposition writes against: graph::NodeRewriter (src/graph/node_rewriter.h), which
// emits the calls that replace one node.
#pragma once

#include "src/graph/node_rewriter.h"

namespace kiln::lower {

using graph::Value;
using DecompBuilder = graph::NodeRewriter;
using graph::dim_range;
using graph::opmath_dtype;

}  // namespace kiln::lower
