// Higher-order ops in a graph: which subgraphs each one takes, what they must accept and return,
// and how the interpreter runs them (Note [Subgraphs of a higher-order op] in graph.h).
//
//   cond(pred, [operands...])   subgraphs true_fn, false_fn: each takes the operands (same
//                               dtypes and sizes) and returns the node's outputs; pred is a bool
//                               tensor with one element.
//   while_loop([carried...], [additional_inputs...])
//                               subgraphs cond_fn, body_fn: both take the carries, then the
//                               additional inputs (what the bodies closed over, the same on
//                               every iteration); cond_fn returns one bool tensor with one
//                               element, body_fn the next carries, each with the dtype and sizes
//                               of the one it replaces. The node's outputs are the final
//                               carries.
//   while_loop_with_history([carried...], [additional_inputs...])
//                               as while_loop, returning the final carries, then the number of
//                               iterations (i64[]), then each carry's value before every
//                               iteration, stacked ([iterations, *carry sizes]): the forward of
//                               a differentiated while_loop (Note [A while_loop's history] in
//                               src/aot/joint_graph.cpp).
//   scan([init...], [xs...], [additional_inputs...], reverse)
//                               subgraph combine_fn: takes the carries, one slice of each xs
//                               along dim 0 (all xs have the same nonzero length n), then the
//                               additional inputs; returns the next carries (each with the
//                               dtype and sizes of the one it replaces), then the step's
//                               outputs. Steps run i = 0 .. n-1, or n-1 .. 0 when `reverse`.
//                               The node's outputs are the final carries, then each step
//                               output stacked along a new dim 0 in the order of xs ([n, ...]).
//                               kiln::map and kiln::scan over any dim are traced as one.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "src/graph/graph.h"

namespace kiln::graph {

bool is_higher_order(const Node& node);
// The roles of the op's subgraphs, in order ("true_fn", "false_fn").
std::vector<std::string> subgraph_roles(const OpDef& op);

// Checks a higher-order call against the contract above (each subgraph verified too); throws
// ValueError naming the node, the subgraph and the value. Called by verify().
void verify_higher_order(const Node& node);

// Runs subgraph `index` of a higher-order call on `inputs`.
using RunBody = std::function<std::vector<Tensor>(size_t index, std::span<const Tensor> inputs)>;

// Runs a higher-order call on its boxed arguments (its tensors as the node's args list them),
// interpreting the subgraph(s) it picks; or, with `run_body`, running them that way (the
// executor runs compiled bodies, Note [Higher-order ops in a program] in src/runtime/program.h).
std::vector<Tensor> run_higher_order(const Node& node, const Stack& args);
std::vector<Tensor> run_higher_order(const Node& node, const Stack& args, const RunBody& run_body);

// Note [Body inputs keep their traced layout]
// Generated code indexes a body's inputs with the strides its placeholders were traced with. An
// operand of another layout (a gradient expanded from a sum, a carry that the previous iteration
// made contiguous) is copied into that layout before a compiled body runs; an input that already
// has it is passed as is. Symbolic strides that are not contiguous ones are the body's own
// symbols, read from the input at run time, so such an input is passed as is too.
std::vector<Tensor> inputs_in_traced_layout(const Graph& body, std::span<const Tensor> inputs);

// A body may neither write to nor return what it receives. The placeholder that `v` is (or is a
// view of, through ops tagged kTagView), or nullptr.
const Value* input_viewed_by(const Value* v);
// The first call of `body` that writes to one of its placeholders (or a view of one), with that
// placeholder; {nullptr, nullptr} when there is none.
std::pair<const Node*, const Value*> first_write_to_an_input(const Graph& body);

}  // namespace kiln::graph
