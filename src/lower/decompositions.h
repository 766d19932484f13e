// Decompositions of composite ops into primitives (DESIGN.md section 5, issue 5 "Lowering"): the
// first lowering pass. It rewrites a captured graph so that the loop-IR lowering only has to
// handle primitive ops: pointwise ops, sum/prod/amax/amin/argmax/argmin/all/any, views, cat,
// full/arange, copies, and the extern kernels (mm, bmm, conv, pool, sort, index ops).
//
// Note [What a decomposition keeps]
// A decomposition replaces one call by calls of other ops inserted where it was, and every use of
// its outputs by the new values. It keeps: the outputs' metas exactly (dtype, sizes, strides,
// symbolic sizes included; a mismatch is a bug in the decomposition and raises), the node's grad
// mode (copied to every new node), requires_grad of the replaced outputs, program order of
// mutations (an op that writes an argument, like native_batch_norm's running stats, becomes
// `copy_` into that argument at the same place), and the errors eager raises at run time for bad
// values (e.g. an out-of-range class index is still an IndexError, raised by `gather`). Numerics
// match eager within float rounding; normalizations and reductions of float16/bfloat16 compute in
// float32 as the eager kernels do.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/graph/graph.h"

namespace kiln::lower {

// Replaces every call of an op with a registered decomposition, recursively, until only ops
// without one remain. Nodes the decompositions create and leave unused are removed; the rest of
// the graph is untouched.
void decompose(graph::Graph& g);
// The same, leaving the ops named in `keep` as they are (a backend that lowers them better
// itself: the code generator computes var/std with Welford's algorithm in one pass).
void decompose(graph::Graph& g, std::span<const std::string_view> keep);
// True when `op` has a decomposition (also recorded as OpDef::has_decomposition).
bool has_decomposition(OpId op);
// The names of every op with a decomposition, sorted (for docs and tests).
std::vector<std::string> decomposed_op_names();

}  // namespace kiln::lower
