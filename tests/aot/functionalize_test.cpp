// Functionalization (src/aot/functionalize.h): no in-place op survives, the values are eager's,
// and mutated inputs come back as extra outputs.
#include <gtest/gtest.h>

#include <memory>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "src/aot/functionalize.h"
#include "src/capture/backend.h"
#include "tests/capture/compare.h"

namespace kiln::aot {
namespace {

using kiln::testing::expect_equal;

// Within 1e-4 relative: the compiled backward sums in another order than eager's.
void expect_close(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.sizes().vec(), b.sizes().vec());
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], 1e-5 + 1e-4 * std::abs(y[i])) << i;
}

bool has_inplace(const graph::Graph& g) {
  for (const graph::Node* n : g.calls())
    if (n->mutates()) return true;
  return false;
}

// Captures the graph kiln::compile traces for `fn` (a backend that keeps a copy, then runs it).
template <typename F, typename... Args>
graph::Graph capture_graph(F fn, Args&&... args) {
  static int counter = 0;
  auto holder = std::make_shared<graph::Graph>();
  const std::string name = fmt::format("functionalize_test_{}", counter++);
  capture::register_backend(name, [holder](const graph::Graph& g, std::span<const Tensor> in) {
    *holder = g.clone();
    return capture::lookup_backend("eager")(g, in, {});
  });
  auto f = compile(fn, CompileOptions{.backend = name, .dynamic = false});
  f(std::forward<Args>(args)...);
  return std::move(*holder);
}

TEST(Functionalize, InPlaceChainOnAnIntermediateBecomesFunctional) {
  graph::Graph g = graph::parse_graph(
      "%0 : f32[4] = placeholder(\"x\")\n"
      "%1 : f32[4] = placeholder(\"y\")\n"
      "%2 : f32[4] = mul(%0, %1)\n"
      "%3 : f32[4] = add_(%2, %1, alpha=2)\n"
      "%4 : f32[4] = relu_(%3)\n"
      "%5 : f32[4] = exp(%4)\n"
      "return (%5)\n");
  FunctionalGraph f = functionalize(g);
  EXPECT_FALSE(has_inplace(f.graph)) << graph::to_string(f.graph);
  EXPECT_TRUE(f.mutated_inputs.empty());
  EXPECT_EQ(f.num_outputs, 1);
  Tensor x = randn({4}), y = randn({4});
  expect_equal(graph::interpret(f.graph, std::vector<Tensor>{x, y})[0],
               graph::interpret(g, std::vector<Tensor>{x, y})[0]);
}

TEST(Functionalize, AMutatedInputComesBackAsAnExtraOutput) {
  graph::Graph g = graph::parse_graph(
      "%0 : f32[3] = placeholder(\"buf\")\n"
      "%1 : f32[3] = placeholder(\"x\")\n"
      "%2 : f32[3] = mul_(%0, %1)\n"
      "%3 : f32[3] = add_(%2, %1, alpha=1)\n"
      "%4 : f32[3] = sin(%3)\n"
      "return (%4)\n");
  FunctionalGraph f = functionalize(g);
  EXPECT_FALSE(has_inplace(f.graph)) << graph::to_string(f.graph);
  ASSERT_EQ(f.mutated_inputs, (std::vector<int>{0}));
  ASSERT_EQ(f.graph.outputs().size(), 2u);
  Tensor buf = randn({3}), x = randn({3});
  Tensor eager_buf = buf.clone();
  std::vector<Tensor> eager = graph::interpret(g, std::vector<Tensor>{eager_buf, x});
  std::vector<Tensor> functional = graph::interpret(f.graph, std::vector<Tensor>{buf, x});
  expect_equal(functional[0], eager[0]);
  expect_equal(functional[1], eager_buf);  // the final value of the input
  expect_equal(buf, buf.clone());          // and the input itself is untouched
}

TEST(Functionalize, CopyBroadcastsAndCastsLikeCopy_) {
  graph::Graph g = graph::parse_graph(
      "%0 : f64[2, 3] = placeholder(\"dst\")\n"
      "%1 : f32[3] = placeholder(\"src\")\n"
      "%2 : f64[2, 3] = copy_(%0, %1)\n"
      "return (%2)\n");
  FunctionalGraph f = functionalize(g);
  EXPECT_FALSE(has_inplace(f.graph)) << graph::to_string(f.graph);
  Tensor dst = zeros({2, 3}, kFloat64), src = randn({3});
  std::vector<Tensor> out = graph::interpret(f.graph, std::vector<Tensor>{dst, src});
  expect_equal(out[0], src.to(kFloat64).expand({2, 3}).contiguous());
  expect_equal(out[1], out[0]);  // dst's final value
}

TEST(Functionalize, TrainingBatchNormUpdatesRunningStatisticsThroughCopyBacks) {
  nn::BatchNorm2d bn(3);
  bn.train();
  Tensor x = randn({4, 3, 5, 5});
  graph::Graph g = capture_graph([](nn::Module& m, const Tensor& x) { return m(x); }, bn, x);
  FunctionalGraph f = functionalize(g);
  EXPECT_FALSE(has_inplace(f.graph)) << graph::to_string(f.graph);
  EXPECT_EQ(f.mutated_inputs.size(), 3u);  // running_mean, running_var, num_batches_tracked
  // Note [Batch norm's running statistics, functionalized]: the op stays whole, without running
  // statistics (so autograd records native_batch_norm_backward's closed form), and the update is
  // computed from its saved statistics.
  int batch_norms = 0;
  for (const graph::Node* n : f.graph.calls()) {
    if (n->op_def().name != "native_batch_norm") continue;
    ++batch_norms;
    EXPECT_TRUE(n->args()[3].is_constant() && n->args()[4].is_constant()) << graph::to_string(*n);
    EXPECT_FALSE(n->mutates());
  }
  EXPECT_EQ(batch_norms, 1) << graph::to_string(f.graph);
  // Against eager on a fresh module with the same statistics.
  nn::BatchNorm2d eager_bn(3);
  eager_bn.train();
  Tensor expected = eager_bn.forward(x);
  std::vector<Tensor> inputs;
  for (const graph::Value* p : f.graph.placeholders()) {
    const std::string& src = p->producer()->source();
    if (src.find("running_mean") != std::string::npos)
      inputs.push_back(zeros({3}));
    else if (src.find("running_var") != std::string::npos)
      inputs.push_back(ones({3}));
    else if (src.find("num_batches") != std::string::npos)
      inputs.push_back(zeros({}, kInt64));
    else if (src.find("weight") != std::string::npos)
      inputs.push_back(ones({3}));
    else if (src.find("bias") != std::string::npos)
      inputs.push_back(zeros({3}));
    else
      inputs.push_back(x);
  }
  std::vector<Tensor> out = graph::interpret(f.graph, inputs);
  expect_equal(out[0], expected);
  for (size_t k = 0; k < f.mutated_inputs.size(); ++k) {
    const std::string& src = f.graph.placeholders()[f.mutated_inputs[k]]->producer()->source();
    if (src.find("running_mean") != std::string::npos)
      expect_equal(out[1 + k], eager_bn.running_mean);
    if (src.find("running_var") != std::string::npos)
      expect_equal(out[1 + k], eager_bn.running_var);
  }
}

TEST(Functionalize, MutationThroughAViewIsNotImplementedYet) {
  graph::Graph g = graph::parse_graph(
      "%0 : f32[6] = placeholder(\"x\")\n"
      "%1 : f32[6] = exp(%0)\n"
      "%2 : f32[2, 3] = view(%1, [2, 3])\n"
      "%3 : f32[2, 3] = mul_.Scalar(%2, 2)\n"
      "return (%3, %1)\n");
  EXPECT_THROW(functionalize(g), NotImplementedError);
}

// End to end: a compiled training-mode BatchNorm block whose parameters require grad goes
// through AOT autograd (functionalized), with eager's gradients and running statistics.
TEST(Functionalize, CompiledBatchNormTrainingMatchesEager) {
  auto make = [] {
    manual_seed(3);
    return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Conv2d>(2, 3, 3), std::make_shared<nn::BatchNorm2d>(3),
        std::make_shared<nn::ReLU>()});
  };
  auto compiled_model = make(), eager_model = make();
  compiled_model->train();
  eager_model->train();
  auto fn = [](nn::Module& m, const Tensor& x) {
    Tensor y = m(x);
    return (y * y).mean();
  };
  auto f = compile(fn, CompileOptions{.backend = "inductor", .dynamic = false});
  Tensor x = randn({4, 2, 6, 6});
  for (int step = 0; step < 2; ++step) {
    compiled_model->zero_grad();
    eager_model->zero_grad();
    Tensor a = f(*compiled_model, x);
    Tensor b = fn(*eager_model, x);
    a.backward();
    b.backward();
    expect_equal(a.detach(), b.detach());
    const auto pa = compiled_model->named_parameters(), pb = eager_model->named_parameters();
    for (size_t i = 0; i < pa.size(); ++i) {
      SCOPED_TRACE(pa[i].first);
      ASSERT_TRUE(pa[i].second.grad().defined());
      expect_close(pa[i].second.grad(), pb[i].second.grad());
    }
    const auto ba = compiled_model->named_buffers(), bb = eager_model->named_buffers();
    for (size_t i = 0; i < ba.size(); ++i) {
      SCOPED_TRACE(ba[i].first);
      expect_close(ba[i].second.to(kFloat64), bb[i].second.to(kFloat64));
    }
  }
}

}  // namespace
}  // namespace kiln::aot
