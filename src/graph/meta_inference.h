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

// Like infer_output_metas, but symbolic input metas and constants are kept: the meta function
// runs on Meta tensors with the symbolic sizes, strides and offsets (Note [Symbolic meta
// inference]). Used by passes that create nodes in graphs with symbolic sizes (src/lower
// decompositions). nullopt only for ops whose output shape depends on data or whose output is
// undefined. Throws the meta function's error, including a kiln::Error when it would have to
// guard on a symbolic size and no ShapeEnv is active on this thread.
std::optional<std::vector<TensorMeta>> infer_symbolic_output_metas(OpId op,
                                                                   const std::vector<Arg>& args);

// A Meta tensor with exactly `meta`'s sizes, strides and offset (symbolic ones kept).
Tensor fake_tensor(const TensorMeta& meta);

}  // namespace kiln::graph
