// The code-generating backend, "inductor" (DESIGN.md section 5): decompose, lower to the loop IR,
// schedule, generate C++, compile (or load from the code cache) and run with the executor.
//
// Note [Inductor pipeline]
// Each stage takes the previous stage's output type: Graph -> Graph (decompositions) ->
// GraphLowering (loop IR) -> Schedule -> GeneratedCode (source + Program) -> KernelLibrary ->
// Executor. The graph-level cache sits in front of the middle three: its key hashes the graph
// text (metas and symbolic sizes included), the codegen options and the compiler, so a warm start
// (a new process with the same graph) reads the Program back and loads the cached library
// without lowering anything. What the lowering cannot express (NotImplementedError) makes the
// backend run that graph with the eager interpreter and say why in the logs; a compiler failure
// is a CompileError.
#include <fmt/format.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "src/aot/aot_autograd.h"
#include "src/aot/functionalize.h"
#include "src/capture/backend.h"
#include "src/codegen/cpp/codegen.h"
#include "src/graph/graph.h"
#include "src/lower/decompositions.h"
#include "src/runtime/compiler.h"
#include "src/runtime/executor.h"
#include "src/runtime/program_json.h"
#include "src/trace/logs.h"
#include "src/trace/trace.h"

namespace kiln::runtime {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

bool cpu_has_avx2() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

codegen::CodegenOptions codegen_options(const CompilerOptions& copts) {
  codegen::CodegenOptions o;
  o.vectorize = copts.vectorize && cpu_has_avx2();
  return o;
}

CompilerOptions kernel_compiler_options() {
  CompilerOptions o = default_compiler_options();
  if (!cpu_has_avx2()) o.vectorize = false;
  // Signed integer arithmetic wraps in the eager kernels (two's complement); -fwrapv makes the
  // generated code's int64 overflow defined the same way.
  o.flags.push_back("-fwrapv");
  return o;
}

// The graph-level cache maps a graph to the Program this build of Kiln made for it; another
// build may lower it differently. So its key includes the identity of the library file holding
// this code (path, size, modification time): a rebuilt libkiln starts a fresh graph cache (the
// kernel libraries themselves are keyed by their source and stay valid).
const std::string& pipeline_identity() {
  static const std::string identity = [] {
    Dl_info info{};
    struct stat st {};
    if (dladdr(reinterpret_cast<void*>(&pipeline_identity), &info) == 0 ||
        info.dli_fname == nullptr || ::stat(info.dli_fname, &st) != 0) {
      return std::string("unknown build");
    }
    return fmt::format("{} {} {}", info.dli_fname, static_cast<long long>(st.st_size),
                       static_cast<long long>(st.st_mtime));
  }();
  return identity;
}

capture::CompiledGraph eager(const graph::Graph& g, std::span<const Tensor> inputs) {
  return capture::lookup_backend("eager")(g, inputs);
}

// Compiles a graph that needs no gradients: generated kernels record no autograd history.
capture::CompiledGraph compile_inference(const graph::Graph& captured,
                                         std::span<const Tensor> inputs) {
  const trace::CompileId id = trace::current_compile_id();
  const auto start = std::chrono::steady_clock::now();
  const CompilerOptions copts = kernel_compiler_options();
  const codegen::CodegenOptions gopts = codegen_options(copts);
  const std::string graph_text = graph::to_string(captured);
  const std::string key = source_hash(
      fmt::format("graph v1 {}\n{}\nvectorize={} threshold={} chunk={}\n", pipeline_identity(),
                  graph_text, gopts.vectorize, gopts.parallel_threshold, gopts.chunk),
      copts);

  if (std::optional<Program> cached = load_program(key)) {
    if (std::shared_ptr<const KernelLibrary> lib = load_cached(cached->source_hash)) {
      trace::log_artifact("inductor_cache", id, [&] {
        return nlohmann::json{
            {"graph_cache", "hit"}, {"key", key}, {"time_s", seconds_since(start)}};
      });
      auto exec = std::make_shared<Executor>(std::move(*cached), std::move(lib));
      return [exec](std::span<const Tensor> in) { return exec->run(in); };
    }
  }

  // Note [Copy-back inside the graph] (src/aot/functionalize.h); a graph it cannot
  // functionalize (mutation through views) keeps its in-place ops.
  graph::Graph g = [&] {
    bool mutates = false;
    for (const graph::Node* node : captured.calls()) mutates |= node->mutates();
    if (!mutates) return captured.clone();
    try {
      return aot::functionalize_with_copy_back(captured);
    } catch (const NotImplementedError&) {
      return captured.clone();
    }
  }();
  codegen::GeneratedCode code;
  double decompose_s = 0, lower_s = 0, schedule_s = 0, codegen_s = 0;
  try {
    auto t = std::chrono::steady_clock::now();
    // var and std stay whole: their lowering is one Welford pass (lowerings/reduction.cpp).
    static constexpr std::string_view kKeep[] = {"var", "std"};
    lower::decompose(g, kKeep);
    decompose_s = seconds_since(t);
    t = std::chrono::steady_clock::now();
    lower::GraphLowering lowering(g);
    lowering.run();
    lower_s = seconds_since(t);
    t = std::chrono::steady_clock::now();
    sched::Schedule schedule = sched::schedule(lowering);
    schedule_s = seconds_since(t);
    t = std::chrono::steady_clock::now();
    code = codegen::generate(lowering, schedule, gopts);
    codegen_s = seconds_since(t);
  } catch (const NotImplementedError& e) {
    const std::string why = fmt::format("inductor: running this graph eagerly: {}", e.what());
    trace::log_artifact("inductor_fallback", id, [&] { return why; });
    trace::log_readable(trace::LogCategory::output_code, why, id);
    return eager(captured, inputs);
  }
  trace::log_artifact("inductor_loop_ir", id, [&] { return code.loop_ir; });
  trace::log_artifact("inductor_output_code", id, [&] { return code.source; });
  trace::log_readable(
      trace::LogCategory::output_code,
      [&] {
        return code.loop_ir + "// (the prelude of src/codegen/cpp/prelude.cpp, then)\n" +
               code.kernels;
      },
      id);

  const auto compile_start = std::chrono::steady_clock::now();
  // On the background compile pool: graphs compiled from several threads at once proceed in
  // parallel (the tracer needs this graph's outputs next, so it waits for it).
  std::shared_ptr<const KernelLibrary> lib = compile_async(code.source, copts).get();
  const double compile_s = seconds_since(compile_start);
  code.program.source_hash = lib->hash();
  store_program(key, code.program);
  trace::log_artifact("inductor_compile_times", id, [&] {
    return nlohmann::json{{"graph_cache", "miss"},
                          {"decompose_s", decompose_s},
                          {"lower_s", lower_s},
                          {"schedule_s", schedule_s},
                          {"codegen_s", codegen_s},
                          {"cxx_compile_s", compile_s},
                          {"total_s", seconds_since(start)},
                          {"library", lib->path().string()}};
  });
  auto exec = std::make_shared<Executor>(std::move(code.program), std::move(lib));
  return [exec](std::span<const Tensor> in) { return exec->run(in); };
}

// A graph whose inputs require grad goes through AOT autograd (Note [Compiled autograd function]
// in src/aot/aot_autograd.h): a compiled forward and a compiled backward. One it cannot handle yet
// runs with the interpreter, through the eager autograd engine, and the reason is logged.
capture::CompiledGraph inductor_backend(const graph::Graph& captured,
                                        std::span<const Tensor> inputs) {
  bool needs_grad = false;
  for (const Tensor& t : inputs) needs_grad |= t.defined() && t.requires_grad();
  // A graph whose every op runs under no_grad (an optimizer step) records nothing for autograd,
  // whatever its inputs: it compiles for inference, and updates its inputs in place.
  bool records_grad = false;
  for (const graph::Node* node : captured.nodes()) {
    if (node->kind() != graph::NodeKind::Call) continue;
    const auto mode = node->grad_mode();
    records_grad |= mode == graph::Node::GradMode::Enabled ||
                    (mode == graph::Node::GradMode::Inherit && GradMode::is_enabled());
  }
  if (!needs_grad || !records_grad) return compile_inference(captured, inputs);
  const trace::CompileId id = trace::current_compile_id();
  try {
    return aot::aot_compile(captured, inputs,
                            aot::parse_partitioner(capture::current_compile_options().partitioner),
                            compile_inference);
  } catch (const NotImplementedError& e) {
    const std::string why = fmt::format("inductor: running this graph eagerly: {}", e.what());
    trace::log_artifact("inductor_fallback", id, [&] { return why; });
    trace::log_readable(trace::LogCategory::output_code, why, id);
    trace::log_readable(trace::LogCategory::aot, why, id);
    return eager(captured, inputs);
  }
}

// Registered at load time, like the eager and count backends.
const bool registered = [] {
  capture::register_backend("inductor", inductor_backend);
  return true;
}();

}  // namespace
}  // namespace kiln::runtime
