// The backend API (DESIGN.md section 4): a backend turns a captured graph into a callable.
// `eager` runs the graph with the graph interpreter; `count` counts what it is given (for tests)
// and then runs it eagerly. The code-generating backend registers itself the same way.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "kiln/compile.h"
#include "kiln/tensor.h"
#include "src/capture/compile_context.h"

namespace kiln::graph {
class Graph;
}

namespace kiln::capture {

// Runs one compiled graph: inputs in placeholder order, outputs in the graph's output order.
using CompiledGraph = std::function<std::vector<Tensor>(std::span<const Tensor> inputs)>;
// `example_inputs` are the real tensors of the call being compiled (for backends that autotune);
// `context` the options, ShapeEnv and compile id of the compile (Note [Compile context]).
using Backend =
    std::function<CompiledGraph(const graph::Graph& graph, std::span<const Tensor> example_inputs,
                                const CompileContext& context)>;
// A backend that needs only the graph and the example inputs.
using SimpleBackend =
    std::function<CompiledGraph(const graph::Graph& graph, std::span<const Tensor> example_inputs)>;

// Registers `backend` under `name`; a second registration of a name is a ValueError.
void register_backend(const std::string& name, Backend backend);
void register_backend(const std::string& name, SimpleBackend backend);
// The backend called `name`; ValueError listing the registered names if there is none.
const Backend& lookup_backend(const std::string& name);
std::vector<std::string> backend_names();

// What the `count` backend has seen since the last reset (like PyTorch's CompileCounter).
struct CompileCounter {
  int graphs = 0;
  int ops = 0;
};
CompileCounter& compile_counter();

}  // namespace kiln::capture
