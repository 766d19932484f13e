// Backward graphs specialized for tangents that never arrive (DESIGN.md section 5, "aot").
//
// Note [Absent tangents]
// A compiled region's backward node receives one gradient per differentiable output, undefined
// for an output the loss does not use. Eager autograd never runs the backward of such an output's
// branch: its parameters keep no gradient, and NaN or inf in that branch (0 * inf) cannot leak
// into the others. Running the compiled backward with zeros in place of the missing tangents
// would do both: compute the dead branch, give its parameters zero gradients, and turn its
// non-finite values into NaN gradients elsewhere. (PyTorch's AOTAutograd did exactly that until it
// began specializing its backward the same way.)
//
// So the first backward with a given set of absent tangents builds, from the backward graph, a
// graph without them: an absent tangent is a symbolic zero, and zeros propagate through the ops
// that are linear in the argument that is zero (views, sums, casts, products, every
// `*_backward(grad_output, ...)` op); add/sub of a zero is its other operand; a gradient output
// that ends up zero is returned undefined, as eager autograd returns it. An op that is not known to
// be linear in its zero argument gets a real zeros tensor there, which is what the unspecialized
// backward computed. The specialized graph is compiled once per set and cached on the region.
#pragma once

#include <vector>

#include "src/graph/graph.h"

namespace kiln::aot {

struct SpecializedBackward {
  // Inputs: the saved values (all of them, in order), then the tangents that are present (all
  // of them with keep_absent_inputs).
  // Outputs: the gradients that are not structurally zero, in order.
  graph::Graph graph;
  // Per gradient output of the full backward graph: whether `graph` computes it.
  std::vector<bool> grad_defined;
};

// `backward`'s inputs are `num_saved` saved values then one tangent per entry of `absent`.
// `keep_absent_inputs`: the specialized graph keeps an (unread) input for each absent tangent,
// whose sizes bind the symbols of a graph with symbolic sizes (the caller passes zeros there).
SpecializedBackward specialize_for_absent_tangents(const graph::Graph& backward, int num_saved,
                                                   const std::vector<bool>& absent,
                                                   bool keep_absent_inputs = false);

}  // namespace kiln::aot
