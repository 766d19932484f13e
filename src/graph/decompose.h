// The decomposition pass: rewrites a graph so that only ops without a registered decomposition
// remain (the loop-IR lowering handles those: pointwise ops, basic reductions, views, copies and
// extern kernels). The table is filled by the layer that writes decompositions (src/lower/decomp)
// and used by every layer that decomposes: functionalization and AOT autograd (batch norm), and
// the pipeline's `decompose` pass.
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
#include <utility>
#include <vector>

#include "src/graph/graph.h"
#include "src/graph/node_rewriter.h"

namespace kiln::graph {

// Emits the replacement of b.node() and returns one value per output of the node.
using DecompositionFn = std::vector<Value*> (*)(NodeRewriter& b);

class DecompositionTable {
 public:
  void add(std::string_view op, DecompositionFn fn);
  DecompositionFn find(OpId op) const;
  const std::vector<std::pair<OpId, DecompositionFn>>& entries() const { return entries_; }

 private:
  std::vector<DecompositionFn> by_id_;
  std::vector<std::pair<OpId, DecompositionFn>> entries_;
};

// Registers a function that fills the table; called from a static initializer of the layer that
// writes decompositions. The table is built from every registered function at the first use of
// the functions below; a registration after that is a ValueError.
void add_decompositions(void (*fill)(DecompositionTable& table));

// Replaces every call of an op with a registered decomposition, recursively, until only ops
// without one remain. Nodes the decompositions create and leave unused are removed; the rest of
// the graph is untouched.
void decompose(Graph& g);
// The same, leaving the ops named in `keep` as they are (a backend that lowers them better
// itself: the code generator computes var/std with Welford's algorithm in one pass).
void decompose(Graph& g, std::span<const std::string_view> keep);
// True when `op` has a decomposition (also recorded as OpDef::has_decomposition).
bool has_decomposition(OpId op);
// The names of every op with a decomposition, sorted (for docs and tests).
std::vector<std::string> decomposed_op_names();

}  // namespace kiln::graph
