// Decompositions of composite ops into primitives: the functions in decomp/ fill graph's
// decomposition table (src/graph/decompose.h, Note [What a decomposition keeps]); the pass itself
// is graph::decompose.
#pragma once

#include "src/graph/decompose.h"

namespace kiln::lower {

using graph::decompose;
using graph::decomposed_op_names;
using graph::has_decomposition;

}  // namespace kiln::lower
