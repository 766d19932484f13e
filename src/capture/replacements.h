// The graph a backend compiles, with the trace's shape facts applied to its sizes.
#pragma once

#include "src/graph/graph.h"
#include "src/sym/shape_env.h"

namespace kiln::capture {

// Note [Replacements reach the backend]
// A guard can pin a symbol: expanding [s0, s1 + 1] to [s0, 4] guards s1 + 1 == 4, and the
// ShapeEnv from then on replaces s1 by 3. The metas and size arguments recorded before that
// guard still say s1 + 1, and the backend compiles without the ShapeEnv (Note [Decompositions
// never guard] in src/graph/decompose.cpp): it saw the expand of a size s1 + 1 to 4 and
// could not tell whether s1 + 1 had been guarded equal to 4 or to 1 (a broadcast). It guessed a
// broadcast and returned column 0 in every column (kiln-fuzz --dynamic --seed 3 --index 30).
// So the graph handed to a backend is a copy whose every symbolic size, stride, offset and
// size argument is simplified by the ShapeEnv: replacements applied (s1 -> 3, or s3 -> s1 - 3
// after a guard s3 == s1 - 3) and what the value ranges decide rewritten. The guards that made
// the replacements stay in the graph's guard set, so the simplified graph only runs on inputs
// where it means the same. (PyTorch's Dynamo likewise hands its backends graphs whose sizes
// have the ShapeEnv's replacements applied.)
graph::Graph simplified_for_backend(const graph::Graph& graph, const sym::ShapeEnv& env);

}  // namespace kiln::capture
