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
#pragma once

#include <functional>
#include <span>

#include "src/aot/partition.h"
#include "src/capture/backend.h"

namespace kiln::aot {

// Compiles a graph that needs no gradients (the inference backend AOT autograd hands its forward
// and backward graphs to).
using CompileInference = std::function<capture::CompiledGraph(const graph::Graph& graph,
                                                              std::span<const Tensor> inputs)>;

// Builds the joint graph, partitions it and compiles both halves. NotImplementedError when the
// graph cannot be compiled this way (the caller runs it through the eager autograd engine).
capture::CompiledGraph aot_compile(const graph::Graph& captured, std::span<const Tensor> inputs,
                                   Partitioner partitioner, const CompileInference& compile);

}  // namespace kiln::aot
