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
// ShapeEnv (capture::current_trace_shape_env), and the joint graph is recorded with it active: a
// backward formula's size conditions (the broadcasting in add's backward, a sum_to_size) are
// decided by the symbols' value ranges and replacements where they can be, and otherwise by the
// hints, with a guard that the tracer adds to the compiled entry's guards. The partitioner weighs
// values at the hints (the sizes of the call being compiled). The compiled backward binds its
// symbols from the sizes and strides of its inputs, the saved values and the tangents; a backward
// that needs a symbol none of them has as a whole size or stride (only inside an expression)
// raises NotImplementedError, and the graph runs through the eager engine. A tangent that does
// not arrive (Note [Absent tangents]) is passed as zeros of its output's size at that call rather
// than through a specialized backward graph: dropping a tangent input could drop the only input
// a symbol is bound from.
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
