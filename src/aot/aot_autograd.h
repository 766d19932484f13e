// AOT autograd's entry (DESIGN.md section 5, "aot"): a captured graph whose inputs require grad
// becomes a compiled forward graph and a compiled backward graph, joined by one autograd node.
//
// Note [Compiled autograd function]
// A call runs the compiled forward, which returns the forward outputs and the saved values (the
// partitioner's choice, Note [Partitioning the joint graph]). When grad mode is on, one node,
// CompiledFunctionBackward, becomes the grad_fn of every differentiable output; its next edges
// are the gradient edges of the inputs that require grad. Its backward runs the compiled backward
// graph on the saved values and the incoming gradients; when some are undefined (outputs the loss
// does not use), a backward graph specialized for their absence (Note [Absent tangents] in
// absent_tangents.h). Saved values are freed after a backward without retain_graph; a second
// backward then raises. Double backward (create_graph=true) is not supported: the compiled
// backward records no history, so it raises instead of returning gradients that silently have
// none.
//
// Note [AOT autograd with symbolic sizes]
// A graph captured with symbolic sizes is differentiated over the same symbols, so that one
// compile serves every size its guards accept, forward and backward (PyTorch's AOTAutograd traces
// the joint graph inside Dynamo's ShapeEnv the same way). The tracer hands its backend the trace's
// ShapeEnv (CompileContext::shape_env, Note [Compile context]), and the joint graph is recorded
// with it active: a backward formula's size conditions (the broadcasting in add's backward, a
// sum_to_size) are decided by the symbols' value ranges and replacements where they can be, and
// otherwise by the hints, with a guard that the tracer adds to the compiled entry's guards. The
// partitioner weighs values at the hints (the sizes of the call being compiled). The compiled
// backward binds its symbols from the sizes and strides of its inputs, the saved values and the
// tangents; a backward that needs a symbol none of them has as a whole size or stride (only inside
// an expression) raises NotImplementedError, and the graph runs through the eager engine. A tangent
// that does not arrive (Note [Absent tangents]) is passed as zeros of its output's size at that
// call rather than through a specialized backward graph: dropping a tangent input could drop the
// only input a symbol is bound from.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "src/aot/functionalize.h"
#include "src/aot/partition.h"
#include "src/capture/backend.h"
#include "src/sym/shape_env.h"
#include "src/trace/trace.h"

namespace kiln::aot {

// Compiles a graph that needs no gradients (the inference pipeline AOT autograd hands its
// forward and backward graphs to).
using CompileInference = std::function<capture::CompiledGraph(const graph::Graph& graph,
                                                              std::span<const Tensor> inputs)>;

// The stages of the training path, in order; src/pipeline/pipeline.cpp runs them as passes. Each
// throws NotImplementedError for a graph that cannot be compiled this way (the caller runs it
// through the eager autograd engine).

// Which inputs require grad.
std::vector<bool> inputs_requiring_grad(std::span<const Tensor> inputs);
// `functionalize`, refusing a graph that mutates an input that requires grad.
FunctionalGraph functionalize_for_autograd(const graph::Graph& captured,
                                           const std::vector<bool>& requires_grad);
// The joint forward-backward graph, traced over the trace's ShapeEnv `env` when the graph has
// symbolic sizes; batch norm and its backward are decomposed (so min-cut sees their pointwise
// parts: Note [Batch norm's running statistics, functionalized] in functionalize.cpp).
JointGraph trace_joint_graph(const FunctionalGraph& functional,
                             const std::vector<bool>& requires_grad, sym::ShapeEnv* env);
// The forward and backward graphs (Note [Partitioning the joint graph]); writes the aot_*
// artifacts of the structured trace and the KILN_LOGS=aot lines.
Partition partition_joint_graph(const JointGraph& joint, Partitioner partitioner,
                                sym::ShapeEnv* env, const trace::CompileId& id);

// What the runtime wrapper is made of: the stages' outputs and the two compiled halves.
struct AutogradFunctionParts {
  const FunctionalGraph* functional = nullptr;
  const JointGraph* joint = nullptr;
  const Partition* partition = nullptr;
  capture::CompiledGraph forward;
  capture::CompiledGraph backward;
  // Compiles a backward specialized for absent tangents, on first use (Note [Absent tangents]).
  CompileInference compile_specialized_backward;
  // A graph with symbolic sizes: a frozen copy of the trace's ShapeEnv, under which the backward
  // is specialized and compiled after the trace ended (Note [A frozen ShapeEnv]).
  std::shared_ptr<sym::ShapeEnv> frozen_shape_env;
  trace::CompileId compile_id;
};
// The callable of Note [Compiled autograd function].
capture::CompiledGraph make_autograd_function(const AutogradFunctionParts& parts);

}  // namespace kiln::aot
