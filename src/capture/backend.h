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

namespace kiln::graph {
class Graph;
}
namespace kiln::sym {
class ShapeEnv;
}

namespace kiln::capture {

// Runs one compiled graph: inputs in placeholder order, outputs in the graph's output order.
using CompiledGraph = std::function<std::vector<Tensor>(std::span<const Tensor> inputs)>;
// `example_inputs` are the real tensors of the call being compiled (for backends that autotune).
using Backend =
    std::function<CompiledGraph(const graph::Graph& graph, std::span<const Tensor> example_inputs)>;

// Registers `backend` under `name`; a second registration of a name is a ValueError.
void register_backend(const std::string& name, Backend backend);
// The backend called `name`; ValueError listing the registered names if there is none.
const Backend& lookup_backend(const std::string& name);
std::vector<std::string> backend_names();

// The options of the kiln::compile whose backend is running on this thread (what a backend reads
// beyond the graph: the partitioner); the defaults when no compile is running.
const CompileOptions& current_compile_options();
// Sets them for the lifetime of the scope (the tracer, around each backend call).
class CompileOptionsScope {
 public:
  explicit CompileOptionsScope(const CompileOptions& options);
  ~CompileOptionsScope();
  CompileOptionsScope(const CompileOptionsScope&) = delete;
  CompileOptionsScope& operator=(const CompileOptionsScope&) = delete;

 private:
  const CompileOptions* saved_;
};

// The ShapeEnv of the trace whose graph a backend is compiling on this thread, or null. A backend
// that traces further over the graph's symbolic sizes (AOT autograd's joint graph) evaluates its
// size conditions there; the guards it adds join the compiled entry's guards (Note [AOT autograd
// with symbolic sizes] in src/aot/aot_autograd.h). The tracer sets it around each backend call.
sym::ShapeEnv* current_trace_shape_env();
class TraceShapeEnvScope {
 public:
  explicit TraceShapeEnvScope(sym::ShapeEnv* env);
  ~TraceShapeEnvScope();
  TraceShapeEnvScope(const TraceShapeEnvScope&) = delete;
  TraceShapeEnvScope& operator=(const TraceShapeEnvScope&) = delete;

 private:
  sym::ShapeEnv* saved_;
};

// What the `count` backend has seen since the last reset (like PyTorch's CompileCounter).
struct CompileCounter {
  int graphs = 0;
  int ops = 0;
};
CompileCounter& compile_counter();

}  // namespace kiln::capture
