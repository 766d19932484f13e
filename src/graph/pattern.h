// Subgraph pattern matching and replacement (like torch.fx's subgraph_rewriter).
//
// Note [Graph patterns]
// A pattern is a small Graph, usually parsed from text. Its placeholders are wildcards: each
// matches any one value (the same wildcard used twice must match the same value); their metas are
// ignored. Its calls must match calls of the same op with equal constants, argument by argument,
// and its returned values are the match's outputs. A match is kept only if every value it computes
// that is not an output has no user outside the match (otherwise replacing the match would leave
// that user reading a deleted value), if it shares no node with an earlier match, and if every
// user of its outputs comes after its last node (where the replacement is inserted).
#pragma once

#include <functional>
#include <vector>

#include "src/graph/graph.h"

namespace kiln::graph {

struct Match {
  std::vector<Value*> wildcards;  // the value each pattern placeholder matched, in order
  std::vector<Value*> outputs;    // the value each pattern output matched, in order
  std::vector<Node*> nodes;       // the matched calls, in program order of `g`
};

// Finds non-overlapping matches of `pattern` in `g`, in program order of their last node.
// Throws ValueError for a pattern with no outputs or with calls that reach no output.
std::vector<Match> match(const Graph& pattern, Graph& g);

// Builds the replacement of one match (new calls are inserted before the match's last node) and
// returns the values that replace match.outputs, one each.
using ReplacementBuilder = std::function<std::vector<Value*>(Graph& g, const Match& m)>;
// Replaces every match; returns how many were replaced.
int replace(Graph& g, const Graph& pattern, const ReplacementBuilder& build);
// `replacement` has as many placeholders as the pattern (bound to the same wildcards, by position)
// and as many outputs. Its calls are copied in; a copied value that replaces a match output takes
// that output's meta, the others take metas computed by the op's meta function when the sizes are
// concrete, else the replacement's own metas.
int replace(Graph& g, const Graph& pattern, const Graph& replacement);

}  // namespace kiln::graph
