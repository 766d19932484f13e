// Functionalization (DESIGN.md section 5, "aot"): a captured graph with in-place ops becomes one
// with none, plus copy-backs of the inputs it mutated.
//
// Note [Functionalization]
// The tracer already gives every in-place op's result a new graph value and rebinds the tensor to
// it (later reads use the result), so an in-place node `%5 = add_(%2, %3)` means the same as the
// functional `%5 = add(%2, %3)` cast back to %2's dtype, as long as nothing else still sees %2's
// memory. `copy_(dst, src)` becomes src broadcast to dst's shape and cast to its dtype, `fill_`
// a `full`. Ops that mutate an argument through their schema (batch_norm's running statistics)
// are first decomposed, which turns the mutation into a `copy_`.
//
// A mutated graph input cannot be rewritten away: the functional graph returns its final value
// as an extra output, and the caller copies it into the input after the graph runs (the
// copy-back), as eager would have written it.
//
// Not functionalized yet (NotImplementedError, so the graph runs through the eager engine): a
// mutation of a view or of a value some view aliases (it would need the view replayed onto its
// base), and index_put_.
#pragma once

#include <vector>

#include "src/graph/graph.h"

namespace kiln::aot {

struct FunctionalGraph {
  // Same inputs; outputs: the original outputs, then one per mutated input (its final value).
  graph::Graph graph;
  int num_outputs = 0;              // the original outputs
  std::vector<int> mutated_inputs;  // placeholder index of each extra output
};

FunctionalGraph functionalize(const graph::Graph& g);

// Note [Copy-back inside the graph]
// For a graph compiled without autograd: functionalized, then each mutated input gets one
// `copy_(input, final value)` at the end, which the lowering stores straight into the input
// (Note [Mutation lowering]). A chain of in-place updates (an optimizer's buf.mul_(m).add_(g),
// then p.sub_(lr * buf)) then fuses into one pass that loads each input once and stores each
// mutated input once, instead of storing and reloading every intermediate. An output that was
// the mutated input stays that input (the copy_'s result). Throws NotImplementedError where
// functionalize() does.
graph::Graph functionalize_with_copy_back(const graph::Graph& g);

}  // namespace kiln::aot
