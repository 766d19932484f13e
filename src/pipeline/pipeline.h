// The compiler after capture, as one list of passes (Note [The pipeline] in pipeline.cpp). It is
// the composition root: the only place that knows every stage, and where the "inductor" backend
// is registered.
#pragma once

#include <span>

#include "kiln/tensor.h"
#include "src/capture/backend.h"
#include "src/capture/compile_context.h"

namespace kiln::graph {
class Graph;
}

namespace kiln::pipeline {

// Compiles a captured graph into a callable: through AOT autograd when its inputs require grad
// and its ops record gradients, otherwise for inference. What a stage cannot compile
// (NotImplementedError) runs with the graph interpreter instead, and the reason is logged; a C++
// compiler failure is a CompileError. PipelineStopped (pass.h) when the context's observer stops
// it.
capture::CompiledGraph compile_graph(const graph::Graph& captured,
                                     std::span<const Tensor> example_inputs,
                                     const capture::CompileContext& context);

// The inference path alone: functionalize (with copy-backs), decompose, post_grad, lower,
// schedule, codegen, compile, load. Generated kernels record no autograd history.
capture::CompiledGraph compile_inference(const graph::Graph& captured,
                                         std::span<const Tensor> example_inputs,
                                         const capture::CompileContext& context);

}  // namespace kiln::pipeline
