// Output metas of a call, computed by running the op's meta function on Meta tensors built from
// the argument values' metas. Used by the verifier (do the recorded metas match the op?) and by
// the pattern rewriter (metas of replacement nodes).
#pragma once

#include <optional>
#include <vector>

#include "src/graph/graph.h"

namespace kiln::graph {

// nullopt when the metas cannot be computed without running the op: a symbolic input meta or
// constant, or an op whose output shape depends on data (kTagDynamicOutput). Throws the meta
// function's error when it rejects the arguments.
std::optional<std::vector<TensorMeta>> infer_output_metas(OpId op, const std::vector<Arg>& args);

}  // namespace kiln::graph
