// The joint forward+backward graph of a captured graph (DESIGN.md section 5, "aot").
//
// Note [Joint graph]
// AOT autograd differentiates a captured graph by running it, on fake (Meta) tensors, through
// the eager autograd engine, and recording every op that runs into a new graph: the forward ops
// as the interpreter calls them, then the backward formulas as kiln::grad runs them. The
// recording happens at the Record dispatch key, which sits *below* Autograd (the capture tracer's
// Trace key sits above it): autograd sees each forward op first, records its backward node on the
// fakes and redispatches, and only then is the op recorded; in the backward, the formulas' ops
// are recorded the same way. The formulas are the eager ones (src/autograd/formulas), so the
// joint graph's gradients are eager's by construction.
//
// The joint graph's inputs are the primals (the captured graph's inputs, in order) followed by
// the tangents (one per differentiable forward output: the gradient flowing into it). Its outputs
// are the forward outputs followed by one gradient per primal that requires grad and that the
// outputs depend on. Inputs that do not require grad get no gradient computation: autograd never
// records backward nodes for them.
#pragma once

#include <vector>

#include "src/graph/graph.h"

namespace kiln::aot {

struct JointGraph {
  graph::Graph graph;
  int num_primals = 0;
  int num_tangents = 0;
  int num_forward_outputs = 0;
  // Per forward output: the index of its tangent among the tangents, or -1 (not differentiable:
  // an integer output, or one that does not depend on an input that requires grad).
  std::vector<int> tangent_of_output;
  // The primals that get a gradient, in the order of the gradient outputs.
  std::vector<int> grad_primals;
};

// Traces `forward` (a captured graph) with autograd. `requires_grad[i]` says whether primal i
// needs a gradient. Symbolic sizes need the trace's ShapeEnv active (Note [AOT autograd with
// symbolic sizes] in aot_autograd.h). NotImplementedError when the graph cannot be differentiated
// this way yet (symbolic sizes without a ShapeEnv, an op without a derivative formula, a real
// tensor created outside the ops).
// Only the first `num_differentiable_outputs` outputs (all when -1) may get tangents: the rest are
// the final values of mutated inputs (Note [Functionalization]), which carry no gradient.
JointGraph build_joint_graph(const graph::Graph& forward, const std::vector<bool>& requires_grad,
                             int num_differentiable_outputs = -1);

// The backward of a higher-order op's body (Note [Higher-order ops in AOT autograd] in
// joint_graph.cpp): inputs are the body's inputs, then one gradient per floating output; outputs
// are one gradient per input that `requires_grad` flags (zeros where the outputs do not depend
// on it). The body's forward is recomputed inside.
graph::Graph build_vjp_graph(const graph::Graph& body, const std::vector<bool>& requires_grad);

}  // namespace kiln::aot
