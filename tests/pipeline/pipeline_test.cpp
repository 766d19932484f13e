// The pass pipeline (Note [The pipeline] in src/pipeline/pipeline.cpp): every stage runs as a named
// pass in the table's order, on both paths; a test can stop after any pass; each pass's output is
// logged, traced and verified, and a broken output is reported with the pass that made it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "src/capture/backend.h"
#include "src/graph/decompose.h"
#include "src/graph/graph.h"
#include "src/lower/graph_lowering.h"
#include "src/pipeline/pass.h"
#include "src/pipeline/pipeline.h"
#include "src/pipeline/post_grad.h"
#include "src/sym/shape_env.h"
#include "src/trace/logs.h"
#include "src/trace/reader.h"
#include "src/trace/trace.h"
#include "tests/capture/compare.h"

namespace kiln {
namespace {

using ::testing::ElementsAreArray;
using testing::expect_equal;
using ::testing::HasSubstr;

const std::vector<std::string> kInferencePasses = {
    "functionalize", "decompose", "post_grad", "lower", "schedule", "codegen", "compile", "load"};
const std::vector<std::string> kHalfPasses = {"decompose", "post_grad", "lower", "schedule",
                                              "codegen",   "compile",   "load"};

// Sets an environment variable for the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    const char* old = std::getenv(name);
    if (old != nullptr) saved_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (saved_)
      ::setenv(name_, saved_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

// A fresh code and graph cache, so that every pass runs (a graph cache hit runs only `load`).
class FreshCache {
 public:
  explicit FreshCache(const std::string& name)
      : dir_(std::filesystem::temp_directory_path() / name),
        env_("KILN_CACHE_DIR", (dir_ / "cache").string()) {
    std::filesystem::remove_all(dir_ / "cache");
  }
  ~FreshCache() { std::filesystem::remove_all(dir_); }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  ScopedEnv env_;
};

// Records each pass's name and output; stops after `stop_after`.
struct Recorder final : capture::PassObserver {
  std::vector<std::string> names;
  std::vector<std::string> outputs;
  std::string stop_after;
  bool after_pass(std::string_view pass, const std::string& output) override {
    names.emplace_back(pass);
    outputs.push_back(output);
    return pass == stop_after;
  }
  const std::string& output_of(std::string_view pass) const {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == pass) return outputs[i];
    static const std::string none;
    return none;
  }
};

// The backend of these tests: the pipeline with a Recorder watching; a stopped pipeline leaves
// the graph to the interpreter, so the compiled function still returns the right values.
Recorder* g_recorder = nullptr;
capture::CompileContext g_last_context;
const bool registered = [] {
  capture::register_backend("pipeline_test",
                            [](const graph::Graph& g, std::span<const Tensor> inputs,
                               const capture::CompileContext& context) -> capture::CompiledGraph {
                              g_last_context = context;
                              capture::CompileContext watched = context;
                              watched.observer = g_recorder;
                              try {
                                return pipeline::compile_graph(g, inputs, watched);
                              } catch (const pipeline::PipelineStopped&) {
                                return capture::lookup_backend("eager")(g, inputs, context);
                              }
                            });
  return true;
}();

CompileOptions watched_options(bool dynamic = false) {
  CompileOptions o;
  o.backend = "pipeline_test";
  o.dynamic = dynamic;
  return o;
}

Tensor pointwise_then_sum(const Tensor& x) { return (x * x).tanh().sum({0}); }

TEST(PassTable, ListsEveryStageInPipelineOrder) {
  std::vector<std::string> names;
  for (const pipeline::PassInfo& p : pipeline::pass_table()) {
    names.emplace_back(p.name);
    EXPECT_FALSE(p.summary.empty()) << p.name;
    EXPECT_TRUE(
        std::filesystem::exists(std::filesystem::path(KILN_TEST_DATA_DIR) / ".." / ".." / p.file))
        << p.name << " names " << p.file;
  }
  EXPECT_THAT(names,
              ElementsAreArray({"functionalize", "joint_graph", "partition", "decompose",
                                "post_grad", "lower", "schedule", "codegen", "compile", "load"}));
  EXPECT_THAT([] { pipeline::pass_info("fuse"); },
              ::testing::ThrowsMessage<ValueError>(
                  HasSubstr("unknown pass 'fuse'; the passes are: functionalize, joint_graph")));
}

TEST(Pipeline, InferenceRunsEveryInferencePassInOrderAndTheGraphCacheOnlyLoads) {
  FreshCache cache("kiln_pipeline_inference_test");
  Recorder recorder;
  g_recorder = &recorder;
  Tensor x = randn({16, 8});
  auto f = compile(pointwise_then_sum, watched_options());
  expect_equal(f(x), pointwise_then_sum(x));
  EXPECT_THAT(recorder.names, ElementsAreArray(kInferencePasses));
  // Each pass's output is its stage's own printed form.
  EXPECT_THAT(recorder.output_of("decompose"), HasSubstr("tanh("));
  EXPECT_THAT(recorder.output_of("lower"), HasSubstr("ComputedBuffer Reduction sum"));
  EXPECT_THAT(recorder.output_of("lower"), HasSubstr("reads arg0[i0 + 8*r0]"));
  EXPECT_THAT(recorder.output_of("schedule"), HasSubstr("kernel kernel0 over"));
  EXPECT_THAT(recorder.output_of("codegen"), HasSubstr("extern \"C\" void kernel0"));
  EXPECT_THAT(recorder.output_of("load"), HasSubstr("program:"));
  // The context the tracer handed the backend (Note [Compile context]).
  EXPECT_EQ(g_last_context.options.backend, "pipeline_test");
  EXPECT_NE(g_last_context.shape_env, nullptr);
  EXPECT_TRUE(g_last_context.compile_id.has_value());

  // The same graph again (a new function object traces it again): the graph cache has its
  // program, so only `load` runs.
  recorder = Recorder{};
  auto again = compile(pointwise_then_sum, watched_options());
  expect_equal(again(x), pointwise_then_sum(x));
  EXPECT_THAT(recorder.names, ElementsAreArray({"load"}));
  g_recorder = nullptr;
}

TEST(Pipeline, TrainingRunsTheAutogradPassesThenBothHalves) {
  FreshCache cache("kiln_pipeline_training_test");
  Recorder recorder;
  g_recorder = &recorder;
  auto fn = [](const Tensor& x, const Tensor& w) { return (x * w).sin().sum(); };
  Tensor x = randn({4, 5});
  Tensor w = randn({4, 5}).requires_grad_(true);
  Tensor w_eager = w.detach().clone().requires_grad_(true);
  auto f = compile(fn, watched_options(/*dynamic=*/true));
  Tensor loss = f(x, w);
  loss.backward();
  Tensor expected = fn(x, w_eager);
  expected.backward();
  expect_equal(loss, expected);
  expect_equal(w.grad(), w_eager.grad());
  std::vector<std::string> expected_names = {"functionalize", "joint_graph", "partition"};
  for (int half = 0; half < 2; ++half)
    expected_names.insert(expected_names.end(), kHalfPasses.begin(), kHalfPasses.end());
  EXPECT_THAT(recorder.names, ElementsAreArray(expected_names));
  EXPECT_THAT(recorder.output_of("partition"), HasSubstr("backward graph:"));
  EXPECT_THAT(recorder.output_of("joint_graph"), HasSubstr("cos("));
  g_recorder = nullptr;
}

// Note [Weight gradients of a scan]: W's gradient (one product per step) is summed by one mm after
// the backward scan, U's (two products per step) in a carry of the backward scan. The joint
// graph shows it: the backward scan carries [2, 3] (h's gradient) and one [3, 3] (U's), and an
// mm of [3, 10] by [10, 3] (the five steps' rows, stacked) follows it.
TEST(Pipeline, AScanWeightsProductGradientIsOneProductAfterTheBackwardScan) {
  Recorder recorder;
  g_recorder = &recorder;
  auto fn = [](const Tensor& h0, const Tensor& xs, const Tensor& W, const Tensor& U) {
    ScanResult r = scan(
        [&](const std::vector<Tensor>& c, const std::vector<Tensor>& x) {
          Tensor h = (mm(c[0], W) + mm(c[0], U) + mm(x[0], U)).tanh();
          return std::pair{std::vector<Tensor>{h}, std::vector<Tensor>{h * 2}};
        },
        {h0}, {xs});
    return r.ys[0].sum();
  };
  const Tensor h0 = randn({2, 3}), xs = randn({5, 2, 3});
  const Tensor W = randn({3, 3}).requires_grad_(), U = randn({3, 3}).requires_grad_();
  auto f = compile(fn, watched_options());
  f(h0, xs, W, U).backward();
  const std::string joint = recorder.output_of("joint_graph");
  const size_t backward_scan = joint.find("], True)");
  ASSERT_NE(backward_scan, std::string::npos) << joint;
  const size_t line = joint.rfind('\n', backward_scan) + 1;
  const std::string outputs = joint.substr(line, joint.find(" = scan(", line) - line);
  EXPECT_EQ(outputs.find("f32[3, 3]"), outputs.rfind("f32[3, 3]")) << outputs;
  EXPECT_THAT(joint.substr(backward_scan), HasSubstr("f32[3, 3] = mm(")) << joint;
  Tensor W_eager = W.detach().requires_grad_(), U_eager = U.detach().requires_grad_();
  fn(h0, xs, W_eager, U_eager).backward();
  testing::expect_close(W.grad(), W_eager.grad(), 1e-5);
  testing::expect_close(U.grad(), U_eager.grad(), 1e-5);
  g_recorder = nullptr;
}

// Note [Residuals of a scan]: the forward scan also returns each step's product mm(h, W), one
// more stacked [5, 2, 3] output than the carries' history and the step outputs, for the backward
// scan to read; the gradients still equal eager's.
TEST(Pipeline, AScanSavesItsStepProductsForTheBackward) {
  Recorder recorder;
  g_recorder = &recorder;
  auto fn = [](const Tensor& h0, const Tensor& W) {
    ScanResult r = scan(
        [&](const std::vector<Tensor>& c, const std::vector<Tensor>&) {
          Tensor h = mm(c[0], W).tanh();
          return std::pair{std::vector<Tensor>{h}, std::vector<Tensor>{h}};
        },
        {h0}, {zeros({5, 1})});
    return r.ys[0].sum();
  };
  const Tensor h0 = randn({2, 3}).requires_grad_(), W = randn({3, 3}).requires_grad_();
  auto f = compile(fn, watched_options());
  f(h0, W).backward();
  const std::string joint = recorder.output_of("joint_graph");
  const size_t forward_scan = joint.find(" = scan(");
  ASSERT_NE(forward_scan, std::string::npos) << joint;
  const std::string outputs = joint.substr(joint.rfind('\n', forward_scan) + 1,
                                           forward_scan - joint.rfind('\n', forward_scan));
  EXPECT_EQ(testing::count_of(outputs, "f32[5, 2, 3]"), 3u) << joint;
  Tensor h0_eager = h0.detach().requires_grad_(), W_eager = W.detach().requires_grad_();
  fn(h0_eager, W_eager).backward();
  testing::expect_close(W.grad(), W_eager.grad(), 1e-5);
  testing::expect_close(h0.grad(), h0_eager.grad(), 1e-5);
  g_recorder = nullptr;
}

TEST(Pipeline, ATestCanStopAfterAnyPass) {
  FreshCache cache("kiln_pipeline_stop_test");
  Tensor x = randn({6, 3});
  for (size_t stop = 0; stop < kInferencePasses.size(); ++stop) {
    Recorder recorder;
    recorder.stop_after = kInferencePasses[stop];
    g_recorder = &recorder;
    auto f = compile(pointwise_then_sum, watched_options());
    expect_equal(f(x), pointwise_then_sum(x));
    const std::vector<std::string> prefix(kInferencePasses.begin(),
                                          kInferencePasses.begin() + stop + 1);
    EXPECT_THAT(recorder.names, ElementsAreArray(prefix)) << "stopping after " << prefix.back();
  }
  g_recorder = nullptr;
}

TEST(Pipeline, KilnLogsPassesPrintsEachPassAndTheTraceHasItsArtifact) {
  FreshCache cache("kiln_pipeline_logs_test");
  trace::set_directory_for_testing((cache.dir() / "trace").string());
  trace::set_logs_for_testing("passes");
  ::testing::internal::CaptureStderr();
  auto f = compile([](const Tensor& x) { return (x + 2).exp().mean({1}); },
                   CompileOptions{.backend = "inductor"});
  f(randn({3, 7}));
  const std::string err = ::testing::internal::GetCapturedStderr();
  trace::set_logs_for_testing(std::nullopt);
  trace::set_directory_for_testing(std::nullopt);
  for (const std::string& pass : kInferencePasses)
    EXPECT_THAT(err, HasSubstr("] after " + pass + " (")) << pass;
  std::set<std::string> artifacts;
  for (const std::string& file : trace::trace_files((cache.dir() / "trace").string()))
    for (const trace::Record& r : trace::read_trace(file))
      if (r.kind == "artifact") artifacts.insert(r.artifact_name());
  for (const std::string& pass : kInferencePasses)
    EXPECT_TRUE(artifacts.contains("pass_" + pass)) << pass;
}

TEST(Pipeline, AVerifiedPassThatBreaksItsOutputIsNamed) {
  ScopedEnv verify("KILN_VERIFY_PASSES", "1");
  ASSERT_TRUE(pipeline::verify_passes());
  capture::CompileContext context;
  // A graph whose node uses a value before it is defined.
  auto broken = [] {
    graph::Graph g = graph::parse_graph(
        "%0 : f32[3] = placeholder(\"x\")\n"
        "%1 : f32[3] = neg(%0)\n"
        "%2 : f32[3] = neg(%0)\n"
        "return (%1)\n");
    graph::Node* first = g.calls().front();
    first->set_arg(0, graph::Arg::value(g.calls().back()->outputs()[0]));
    return g;
  };
  EXPECT_THAT([&] { pipeline::run_pass(context, "post_grad", broken); },
              ::testing::ThrowsMessage<ValueError>(
                  HasSubstr("pass 'post_grad' produced an invalid graph: verify:")));
  // Without verification the same output goes through (what release builds do).
  ScopedEnv off("KILN_VERIFY_PASSES", "0");
  EXPECT_NO_THROW(pipeline::run_pass(context, "post_grad", broken));
  EXPECT_THROW(pipeline::run_pass(context, "fuse", broken), ValueError);
}

// Note [Loop IR invariants] (src/lower/graph_lowering.h).
TEST(LoopIrVerifier, RejectsAReadOfALaterBufferAndAnUnboundSymbol) {
  using namespace lower;
  const ExprPtr four = sym::integer(4);
  auto input = [&](std::string name, int index) {
    return std::make_unique<InputBuffer>(std::move(name), Layout::contiguous(kFloat32, {four}),
                                         index);
  };
  auto pointwise_reading = [&](std::string name, std::string reads, ExprPtr size) {
    Pointwise body{kFloat32, {size}, [reads](const Index& i) {
                     return load(BufferRef{reads, kFloat32}, i[0]);
                   }};
    return std::make_unique<ComputedBuffer>(std::move(name), Layout::contiguous(kFloat32, {size}),
                                            body);
  };
  {
    std::vector<std::unique_ptr<Buffer>> buffers;
    buffers.push_back(input("buf0", 0));
    buffers.push_back(pointwise_reading("buf1", "buf0", four));
    EXPECT_NO_THROW(verify_loop_ir(buffers, {}, {}));
    buffers.push_back(pointwise_reading("buf2", "buf3", four));
    buffers.push_back(input("buf3", 1));
    EXPECT_THAT([&] { verify_loop_ir(buffers, {}, {}); },
                ::testing::ThrowsMessage<ValueError>(
                    HasSubstr("buf2: reads buf3, which is not defined before it")));
  }
  {
    std::vector<std::unique_ptr<Buffer>> buffers;
    buffers.push_back(input("buf0", 0));
    buffers.push_back(pointwise_reading("buf1", "buf0", sym::symbol("s7")));
    EXPECT_THAT([&] { verify_loop_ir(buffers, {}, {}); },
                ::testing::ThrowsMessage<ValueError>(
                    HasSubstr("buf1: s7 mentions s7, which no input size or stride binds")));
  }
  {
    std::vector<std::unique_ptr<Buffer>> buffers;
    buffers.push_back(input("buf0", 0));
    buffers.push_back(input("buf0", 1));
    EXPECT_THAT([&] { verify_loop_ir(buffers, {}, {}); },
                ::testing::ThrowsMessage<ValueError>(HasSubstr("two buffers have this name")));
  }
}

// Note [Post-grad passes]: common subexpressions are computed once, but two returned values stay
// two tensors (an in-place update of one does not show in the other, as eagerly).
TEST(PostGrad, CommonSubexpressionsAreComputedOnceAndReturnedValuesStayTwo) {
  FreshCache cache("kiln_pipeline_cse_test");
  Recorder recorder;
  g_recorder = &recorder;
  auto fn = [](const Tensor& x) { return std::make_tuple(x.exp() + x.exp(), x.sin(), x.sin()); };
  Tensor x = randn({5, 3});
  auto f = compile(fn, watched_options());
  auto [sum, s1, s2] = f(x);
  auto [eager_sum, e1, e2] = fn(x);
  expect_equal(sum, eager_sum);
  expect_equal(s1, e1);
  expect_equal(s2, e2);
  EXPECT_THAT(recorder.output_of("post_grad"),
              HasSubstr("# common subexpression elimination: 1 changed"));
  s1.add_(1);
  expect_equal(s2, e2);
  g_recorder = nullptr;
}

const char* kDoubleNegation =
    "%0 : f32[] = placeholder(\"x\")\n"
    "%1 : f32[] = neg(%0)\n"
    "%2 : f32[] = neg(%1)\n"
    "return (%2)\n";
const char* kAbs =
    "%0 : f32[] = placeholder(\"x\")\n"
    "%1 : f32[] = abs(%0)\n"
    "return (%1)\n";

// A registered pattern rewrites every graph compiled while it is registered, and takes part in
// the graph cache's key. (The pattern is deliberately not exact, so that its effect shows.)
TEST(PostGrad, ARegisteredPatternRewritesCompiledGraphsAndKeysTheGraphCache) {
  FreshCache cache("kiln_pipeline_pattern_test");
  Recorder recorder;
  g_recorder = &recorder;
  auto fn = [](const Tensor& x) { return x.neg().neg() * 2; };
  Tensor x = randn({8});
  const int id =
      pipeline::register_post_grad_pattern("double negation to abs", kDoubleNegation, kAbs);
  auto rewritten = compile(fn, watched_options());
  expect_equal(rewritten(x), x.abs() * 2);
  EXPECT_THAT(recorder.output_of("post_grad"),
              HasSubstr("# pattern 'double negation to abs': 1 changed"));
  pipeline::unregister_post_grad_pattern(id);
  recorder = Recorder{};
  auto plain = compile(fn, watched_options());
  expect_equal(plain(x), fn(x));  // not the cached program of the rewritten graph
  EXPECT_THAT(recorder.names, ElementsAreArray(kInferencePasses));
  g_recorder = nullptr;
  EXPECT_THAT([] { pipeline::register_post_grad_pattern("bad", kDoubleNegation, "return ()\n"); },
              ::testing::ThrowsMessage<ValueError>(HasSubstr("the pattern has 1 inputs")));
}

// The decomposition table is filled at load time (src/lower/decompositions.cpp); a registration
// after it is in use would be silently missing from graphs already decomposed, so it raises.
TEST(DecompositionTable, IsFilledAtLoadAndRefusesLateRegistrations) {
  EXPECT_TRUE(graph::has_decomposition(op_id("softmax")));
  EXPECT_THAT([] { graph::add_decompositions([](graph::DecompositionTable&) {}); },
              ::testing::ThrowsMessage<ValueError>(HasSubstr("already in use")));
}

}  // namespace
}  // namespace kiln
