// Note [The pipeline]
// Every stage from a captured graph to a runnable one, in order, each a named pass (Note [Running
// a pass] in pass.h; `kiln passes` lists them):
//
//   training (inputs require grad and ops record it):
//     functionalize -> joint_graph -> partition -> { inference stages } for forward and backward
//     -> the autograd function of Note [Compiled autograd function] (src/aot/aot_autograd.h)
//   inference:
//     functionalize -> decompose -> post_grad -> lower -> schedule -> codegen -> compile -> load
//
// The graph-level cache sits in front of the inference stages: its key hashes the graph text
// (metas and symbolic sizes included), the codegen options and the compiler, so a warm start (a
// new process with the same graph) reads the Program back and loads the cached kernel library
// without lowering anything (only `load` runs). What a stage cannot express (NotImplementedError)
// makes the graph run with the eager interpreter, and the logs say why; a compiler failure is a
// CompileError. Options, ShapeEnv and compile id come in the CompileContext (Note [Compile
// context]).
#include "src/pipeline/pipeline.h"

#include <fmt/format.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <chrono>
#include <map>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "src/aot/aot_autograd.h"
#include "src/aot/functionalize.h"
#include "src/codegen/cpp/codegen.h"
#include "src/graph/graph.h"
#include "src/lower/decompositions.h"
#include "src/pipeline/pass.h"
#include "src/pipeline/post_grad.h"
#include "src/runtime/compiler.h"
#include "src/runtime/executor.h"
#include "src/runtime/program_json.h"
#include "src/trace/logs.h"
#include "src/trace/trace.h"

namespace kiln::pipeline {
namespace {

using capture::CompileContext;
using capture::CompiledGraph;

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

codegen::CodegenOptions codegen_options(const runtime::CompilerOptions& copts) {
  codegen::CodegenOptions o;
  o.vectorize = copts.vectorize && cpu_has_avx2();
  return o;
}

runtime::CompilerOptions kernel_compiler_options() {
  runtime::CompilerOptions o = runtime::default_compiler_options();
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

CompiledGraph eager(const graph::Graph& g, std::span<const Tensor> inputs,
                    const CompileContext& context) {
  return capture::lookup_backend("eager")(g, inputs, context);
}

void log_fallback(const CompileContext& context, const NotImplementedError& e, bool training) {
  const std::string why = fmt::format("inductor: running this graph eagerly: {}", e.what());
  trace::log_artifact("inductor_fallback", context.compile_id, [&] { return why; });
  trace::log_readable(trace::LogCategory::output_code, why, context.compile_id);
  if (training) trace::log_readable(trace::LogCategory::aot, why, context.compile_id);
}

LoadedProgram load(runtime::Program program, std::shared_ptr<const runtime::KernelLibrary> lib) {
  auto exec = std::make_shared<runtime::Executor>(std::move(program), std::move(lib));
  return {[exec](std::span<const Tensor> in) { return exec->run(in); },
          fmt::format("program: {} buffers, {} steps", exec->program().buffers.size(),
                      exec->program().steps.size())};
}

// Note [Copy-back inside the graph] (src/aot/functionalize.h); a graph it cannot functionalize
// (mutation through views) keeps its in-place ops.
graph::Graph functionalized_for_inference(const graph::Graph& captured) {
  bool mutates = false;
  for (const graph::Node* node : captured.calls()) mutates |= node->mutates();
  if (!mutates) return captured.clone();
  try {
    return aot::functionalize_with_copy_back(captured);
  } catch (const NotImplementedError&) {
    return captured.clone();
  }
}

// var and std stay whole: their lowering is one Welford pass (lowerings/reduction.cpp).
constexpr std::string_view kKeepWhole[] = {"var", "std"};

codegen::GeneratedCode generate_body(const graph::Graph& body,
                                     const codegen::CodegenOptions& options);

// The stages decompose .. codegen of a functional graph, written once for a captured graph and
// for the bodies of its higher-order ops. `stage(name, fn)` runs stage `name` as fn(): for a
// captured graph through run_pass (timed, logged, verified), for a body inline.
template <typename Stage>
codegen::GeneratedCode generate_code(graph::Graph g, const codegen::CodegenOptions& options,
                                     Stage&& stage) {
  g = stage("decompose", [&] {
    lower::decompose(g, kKeepWhole);
    return std::move(g);
  });
  g = stage("post_grad", [&] { return run_post_grad_passes(std::move(g)); }).graph;
  const LoweredGraph lowered = stage("lower", [&] {
    LoweredGraph l{std::make_unique<graph::Graph>(std::move(g)), nullptr};
    l.lowering = std::make_unique<lower::GraphLowering>(*l.graph);
    l.lowering->run();
    return l;
  });
  const sched::Schedule schedule =
      stage("schedule", [&] { return sched::schedule(*lowered.lowering); });
  return stage("codegen", [&] {
    return codegen::generate(*lowered.lowering, schedule, options, generate_body);
  });
}

// Note [Higher-order ops in a program] (src/runtime/program.h): a body of a cond, while_loop or
// scan goes through the stages of the graph around it, decompose .. codegen, into the same
// translation unit (its own bodies too, recursively). They are not separate passes: the
// trace shows a body's loop IR inside its graph's.
codegen::GeneratedCode generate_body(const graph::Graph& body,
                                     const codegen::CodegenOptions& options) {
  return generate_code(functionalized_for_inference(body), options,
                       [](std::string_view, auto&& fn) { return fn(); });
}

// The inference stages after the graph cache: functionalize (unless `graph` is already
// functional: AOT autograd's forward and backward), decompose .. load.
CompiledGraph compile_for_inference(const graph::Graph& captured, bool functional,
                                    std::span<const Tensor> inputs, const CompileContext& context) {
  const trace::CompileId& id = context.compile_id;
  const auto start = std::chrono::steady_clock::now();
  const runtime::CompilerOptions copts = kernel_compiler_options();
  const codegen::CodegenOptions gopts = codegen_options(copts);
  const std::string key = runtime::source_hash(
      fmt::format("graph v1 {}\n{}\nvectorize={} threshold={} chunk={}\n{}", pipeline_identity(),
                  graph::to_string(captured), gopts.vectorize, gopts.parallel_threshold,
                  gopts.chunk, post_grad_fingerprint()),
      copts);

  if (std::optional<runtime::Program> cached = runtime::load_program(key)) {
    if (auto lib = runtime::load_cached(cached->source_hash)) {
      trace::log_artifact("inductor_cache", id, [&] {
        return nlohmann::json{
            {"graph_cache", "hit"}, {"key", key}, {"time_s", seconds_since(start)}};
      });
      return run_pass(context, "load", [&] { return load(std::move(*cached), std::move(lib)); })
          .run;
    }
  }

  graph::Graph g = functional ? captured.clone() : run_pass(context, "functionalize", [&] {
    return functionalized_for_inference(captured);
  });
  codegen::GeneratedCode code;
  std::map<std::string, double, std::less<>> stage_s;  // decompose includes post_grad
  try {
    code = generate_code(std::move(g), gopts, [&](std::string_view name, auto&& fn) {
      const auto t = std::chrono::steady_clock::now();
      auto output = run_pass(context, name, fn);
      stage_s[name == "post_grad" ? "decompose" : std::string(name)] += seconds_since(t);
      return output;
    });
  } catch (const NotImplementedError& e) {
    log_fallback(context, e, false);
    return eager(captured, inputs, context);
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
  std::shared_ptr<const runtime::KernelLibrary> lib = run_pass(
      context, "compile", [&] { return runtime::compile_async(code.source, copts).get(); });
  const double compile_s = seconds_since(compile_start);
  code.program.source_hash = lib->hash();
  runtime::store_program(key, code.program);
  trace::log_artifact("inductor_compile_times", id, [&] {
    return nlohmann::json{{"graph_cache", "miss"},           {"decompose_s", stage_s["decompose"]},
                          {"lower_s", stage_s["lower"]},     {"schedule_s", stage_s["schedule"]},
                          {"codegen_s", stage_s["codegen"]}, {"cxx_compile_s", compile_s},
                          {"total_s", seconds_since(start)}, {"library", lib->path().string()}};
  });
  return run_pass(context, "load", [&] { return load(std::move(code.program), lib); }).run;
}

// See Note [Compiled autograd function] (src/aot/aot_autograd.h).
CompiledGraph compile_training(const graph::Graph& captured, std::span<const Tensor> inputs,
                               const CompileContext& context) {
  const std::vector<bool> requires_grad = aot::inputs_requiring_grad(inputs);
  const aot::FunctionalGraph functional = run_pass(context, "functionalize", [&] {
    return aot::functionalize_for_autograd(captured, requires_grad);
  });
  const aot::JointGraph joint = run_pass(context, "joint_graph", [&] {
    return aot::trace_joint_graph(functional, requires_grad, context.shape_env);
  });
  const aot::Partition part = run_pass(context, "partition", [&] {
    return aot::partition_joint_graph(joint, aot::parse_partitioner(context.options.partitioner),
                                      context.shape_env, context.compile_id);
  });
  CompileContext forward_context = context;
  forward_context.part = "forward";
  CompileContext backward_context = context;
  backward_context.part = "backward";
  // A backward specialized for absent tangents is made and compiled at backward time, after the
  // trace (and its ShapeEnv) is gone (Note [Absent tangents]): a frozen copy of the ShapeEnv
  // answers what it needs of the symbols (Note [A frozen ShapeEnv]).
  std::shared_ptr<sym::ShapeEnv> frozen_env;
  if (context.shape_env != nullptr)
    frozen_env = context.shape_env->frozen_copy(
        fmt::format("the backward of compiled region {} specialized for absent gradients",
                    context.compile_id.to_string()));
  CompileContext later_context = backward_context;
  later_context.shape_env = frozen_env.get();
  later_context.observer = nullptr;
  return aot::make_autograd_function({
      .functional = &functional,
      .joint = &joint,
      .partition = &part,
      .forward = compile_for_inference(part.forward, true, inputs, forward_context),
      .backward = compile_for_inference(part.backward, true, {}, backward_context),
      .compile_specialized_backward =
          [later_context, frozen_env](const graph::Graph& g, std::span<const Tensor> in) {
            return compile_for_inference(g, true, in, later_context);
          },
      .frozen_shape_env = frozen_env,
      .compile_id = context.compile_id,
  });
}

bool records_gradients(const graph::Graph& captured, std::span<const Tensor> inputs) {
  bool needs_grad = false;
  for (const Tensor& t : inputs) needs_grad |= t.defined() && t.requires_grad();
  if (!needs_grad) return false;
  // A graph whose every op runs under no_grad (an optimizer step) records nothing for autograd,
  // whatever its inputs: it compiles for inference, and updates its inputs in place.
  for (const graph::Node* node : captured.calls()) {
    const auto mode = node->grad_mode();
    if (mode == graph::Node::GradMode::Enabled ||
        (mode == graph::Node::GradMode::Inherit && GradMode::is_enabled()))
      return true;
  }
  return false;
}

}  // namespace

CompiledGraph compile_inference(const graph::Graph& captured, std::span<const Tensor> inputs,
                                const CompileContext& context) {
  return compile_for_inference(captured, false, inputs, context);
}

CompiledGraph compile_graph(const graph::Graph& captured, std::span<const Tensor> inputs,
                            const CompileContext& context) {
  if (!records_gradients(captured, inputs)) return compile_inference(captured, inputs, context);
  try {
    return compile_training(captured, inputs, context);
  } catch (const NotImplementedError& e) {
    // A graph AOT autograd cannot handle yet runs with the interpreter, through the eager
    // autograd engine.
    log_fallback(context, e, true);
    return eager(captured, inputs, context);
  }
}

namespace {
// Registered at load time, like the eager and count backends.
const bool registered = [] {
  capture::register_backend("inductor", compile_graph);
  return true;
}();
}  // namespace

}  // namespace kiln::pipeline
