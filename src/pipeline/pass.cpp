#include "src/pipeline/pass.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cstdlib>
#include <cstring>

#include "src/trace/logs.h"
#include "src/trace/trace.h"

namespace kiln::pipeline {
namespace {

constexpr std::array<PassInfo, 10> kPasses = {{
    {"functionalize", "captured graph", "functional graph", "src/aot/functionalize.cpp",
     "in-place ops become out-of-place ones; a mutated input becomes an extra output (training) "
     "or a copy-back at the graph's end (inference)"},
    {"joint_graph", "functional graph", "joint graph", "src/aot/joint_graph.cpp",
     "training only: traces the forward with autograd into one forward-backward graph; batch norm "
     "decomposed"},
    {"partition", "joint graph", "forward graph, backward graph", "src/aot/partition.cpp",
     "training only: splits the joint graph, choosing what the forward saves (min-cut)"},
    {"decompose", "graph", "graph of primitive ops", "src/graph/decompose.cpp",
     "replaces composite ops by the primitives the lowering knows (var and std stay whole)"},
    {"post_grad", "graph", "graph", "src/pipeline/post_grad.cpp",
     "graph rewrites after autograd: common subexpressions, registered patterns, dead code"},
    {"lower", "graph", "loop IR", "src/lower/graph_lowering.cpp",
     "each op becomes loop bodies over buffers (pointwise, reduction) or an extern kernel call"},
    {"schedule", "loop IR", "schedule", "src/sched/scheduler.cpp",
     "groups buffers into fused kernels and extern calls, in execution order"},
    {"codegen", "loop IR, schedule", "C++ source and program", "src/codegen/cpp/codegen.cpp",
     "prints each kernel as C++ and the program that runs kernels and extern calls"},
    {"compile", "C++ source", "kernel library", "src/runtime/compiler.cpp",
     "compiles the source into a shared library, or takes it from the code cache"},
    {"load", "program, kernel library", "runnable graph", "src/runtime/executor.cpp",
     "resolves the kernels and makes the callable that runs the program"},
}};

}  // namespace

std::span<const PassInfo> pass_table() { return kPasses; }

const PassInfo& pass_info(std::string_view name) {
  for (const PassInfo& p : kPasses)
    if (p.name == name) return p;
  std::vector<std::string_view> names;
  for (const PassInfo& p : kPasses) names.push_back(p.name);
  throw ValueError(
      fmt::format("pipeline: unknown pass '{}'; the passes are: {}", name, fmt::join(names, ", ")));
}

bool verify_passes() {
  // Read at each pass (a few per compile), so that a test can turn it on and off.
  const char* env = std::getenv("KILN_VERIFY_PASSES");
  if (env != nullptr && env[0] != '\0') return std::strcmp(env, "0") != 0;
#ifdef NDEBUG
  return false;
#else
  return true;
#endif
}

namespace detail {

void after_pass(const capture::CompileContext& context, const PassInfo& pass, double seconds,
                const std::function<std::string()>& print, const std::function<void()>& verify) {
  if (verify_passes()) verify();
  const bool logging = trace::log_enabled(trace::LogCategory::passes);
  const bool tracing = trace::enabled();
  if (!logging && !tracing && context.observer == nullptr) return;
  const std::string output = print();
  const std::string title = context.part.empty() ? std::string(pass.name)
                                                 : fmt::format("{} ({})", pass.name, context.part);
  if (logging)
    trace::log_readable(trace::LogCategory::passes,
                        fmt::format("after {} ({:.3f} ms):\n{}", title, seconds * 1e3, output),
                        context.compile_id);
  trace::log_artifact(fmt::format("pass_{}", pass.name), context.compile_id, [&] {
    return context.part.empty() ? output : fmt::format("// {}\n{}", context.part, output);
  });
  if (context.observer != nullptr && context.observer->after_pass(pass.name, output))
    throw PipelineStopped{std::string(pass.name)};
}

}  // namespace detail
}  // namespace kiln::pipeline
