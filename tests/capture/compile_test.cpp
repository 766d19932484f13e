// kiln::compile mechanics: caching, guards and their recompile reasons, the shape policy
// (automatic dynamic, mark_dynamic, dynamic=true/false, duck sizing, 0/1 specialization),
// backends, the recompile limit.
#include <gtest/gtest.h>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "src/capture/backend.h"
#include "src/graph/graph.h"
#include "tests/capture/compare.h"

namespace kiln {
namespace {

using testing::error_message;
using testing::expect_close;
using testing::expect_equal;

Tensor pointwise(const Tensor& x) { return (x * 2 + 1).relu().sum({1}); }

TEST(Compile, FirstCallTracesLaterCallsHitTheCache) {
  int traced = 0;
  auto f = compile(
      [&](const Tensor& x) {
        ++traced;  // a C++ side effect runs only while tracing
        return pointwise(x);
      },
      {.verify = false});  // verify mode traces every call again (Note [Verify mode])
  Tensor x = randn({8, 4});
  expect_equal(f(x), pointwise(x));
  Tensor x2 = randn({8, 4});
  expect_equal(f(x2), pointwise(x2));
  EXPECT_EQ(traced, 1);
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_EQ(f.stats().cache_hits, 1);
}

TEST(Compile, AutomaticDynamicRecompilesOnceThenSizeOneSpecializes) {
  auto f = compile([](const Tensor& x) { return pointwise(x); });
  for (int64_t n : {8, 16, 32}) {
    Tensor x = randn({n, 4});
    expect_equal(f(x), pointwise(x));
  }
  EXPECT_EQ(f.stats().compiles, 2);
  ASSERT_EQ(f.stats().recompile_reasons.size(), 1u);
  EXPECT_EQ(f.stats().recompile_reasons[0], "size of arg0 dim 0 changed from 8 to 16");
  Tensor one = randn({1, 4});
  expect_equal(f(one), pointwise(one));
  EXPECT_EQ(f.stats().compiles, 3);
  Tensor x = randn({64, 4});
  expect_equal(f(x), pointwise(x));
  EXPECT_EQ(f.stats().compiles, 3);
}

TEST(Compile, DynamicFalseRecompilesEverySizeAndTrueNever) {
  auto fixed = compile([](const Tensor& x) { return pointwise(x); }, {.dynamic = false});
  auto dynamic = compile([](const Tensor& x) { return pointwise(x); }, {.dynamic = true});
  for (int64_t n : {8, 16, 32}) {
    Tensor x = randn({n, 4});
    expect_equal(fixed(x), pointwise(x));
    expect_equal(dynamic(x), pointwise(x));
  }
  EXPECT_EQ(fixed.stats().compiles, 3);
  EXPECT_EQ(dynamic.stats().compiles, 1);
}

TEST(Compile, MarkDynamicMakesTheFirstCompileSymbolic) {
  auto f = compile([](const Tensor& x) { return pointwise(x); });
  Tensor x = randn({8, 4});
  mark_dynamic(x, 0);
  expect_equal(f(x), pointwise(x));
  Tensor y = randn({12, 4});
  expect_equal(f(y), pointwise(y));
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_NE(f.describe().find("s0"), std::string::npos) << f.describe();
  EXPECT_THROW(mark_dynamic(x, 2), IndexError);
}

TEST(Compile, EqualSizesShareASymbolUnlessDuckSizingIsOff) {
  auto duck = compile([](const Tensor& a, const Tensor& b) { return a + b; }, {.dynamic = true});
  Tensor a = randn({8}), b = randn({8});
  expect_equal(duck(a, b), a + b);
  // One symbol: the graph's placeholders read f32[s0] twice.
  const std::string text = duck.describe();
  EXPECT_NE(text.find("f32[s0] = placeholder"), std::string::npos) << text;
  EXPECT_EQ(text.find("s1"), std::string::npos) << text;

  auto plain = compile([](const Tensor& a, const Tensor& b) { return a * b.sum(); },
                       {.dynamic = true, .duck_shape = false});
  Tensor c = randn({5});
  expect_equal(plain(a, c), a * c.sum());
  EXPECT_NE(plain.describe().find("s1"), std::string::npos) << plain.describe();
}

TEST(Compile, SizeBranchInCppCodeIsGuardedOnTheHint) {
  auto f =
      compile([](const Tensor& x) { return x.size(0) > 8 ? x * 2 : x - 1; }, {.dynamic = true});
  Tensor big = randn({16, 2}), big2 = randn({32, 2}), small = randn({4, 2});
  expect_equal(f(big), big * 2);
  expect_equal(f(big2), big2 * 2);
  EXPECT_EQ(f.stats().compiles, 1);
  expect_equal(f(small), small - 1);
  EXPECT_EQ(f.stats().compiles, 2);
  ASSERT_EQ(f.stats().recompile_reasons.size(), 1u);
  EXPECT_NE(f.stats().recompile_reasons[0].find("is false: s0 = 4"), std::string::npos)
      << f.stats().recompile_reasons[0];
}

TEST(Compile, GuardFailuresAreReportedInWords) {
  auto f = compile([](const Tensor& x, double scale) { return x * scale; });
  Tensor x = randn({4});
  f(x, 2.0);
  f(x.to(kFloat64), 2.0);
  f(x, 3.0);
  f(x.unsqueeze(0), 2.0);
  Tensor w = randn({4}).requires_grad_();
  f(w, 2.0);
  const auto reasons = f.stats().recompile_reasons;
  ASSERT_EQ(reasons.size(), 4u);
  EXPECT_NE(reasons[0].find("dtype of arg0 changed from float32 to float64"), std::string::npos)
      << reasons[0];
  EXPECT_NE(reasons[1].find("arg1 changed from 2 to 3"), std::string::npos) << reasons[1];
  EXPECT_NE(reasons[2].find("rank of arg0 changed from 1 to 2"), std::string::npos) << reasons[2];
  EXPECT_NE(reasons[3].find("requires_grad of arg0 changed from false to true"), std::string::npos)
      << reasons[3];
}

TEST(Compile, GradModeIsGuarded) {
  auto f = compile([](const Tensor& x) { return x * 3; });
  Tensor w = randn({3}).requires_grad_();
  Tensor y = f(w);
  EXPECT_TRUE(y.requires_grad());
  {
    NoGradGuard no_grad;
    Tensor z = f(w);
    EXPECT_FALSE(z.requires_grad());
  }
  EXPECT_EQ(f.stats().compiles, 2);
  EXPECT_NE(f.stats().recompile_reasons.at(0).find("grad mode changed"), std::string::npos);
}

TEST(Compile, NoGradGuardInsideTheFunctionHoldsWhenTheGraphRuns) {
  // An SGD-like update of a leaf that requires grad is only legal under NoGradGuard.
  auto f = compile([](const Tensor& w, const Tensor& g) {
    Tensor loss = (w * w).sum();
    {
      NoGradGuard no_grad;
      w.sub_(g * 0.5);
    }
    return loss;
  });
  Tensor w = ones({3}).requires_grad_(), g = full({3}, 2.0);
  Tensor loss = f(w, g);
  EXPECT_TRUE(loss.requires_grad());
  expect_equal(w.detach(), zeros({3}));
  EXPECT_NE(f.describe().find("# no_grad"), std::string::npos) << f.describe();
  f(w, g);  // the cache hit runs the update under no_grad too
  expect_equal(w.detach(), full({3}, -1.0));
}

TEST(Compile, GradientsFlowThroughTheEagerBackend) {
  nn::Linear fc(4, 3);
  auto f = compile([](nn::Module& m, const Tensor& x) { return m(x).tanh().sum(); });
  Tensor x = randn({5, 4});
  Tensor loss = f(fc, x);
  loss.backward();
  Tensor compiled_grad = fc.weight.grad().clone();
  fc.zero_grad();
  fc(x).tanh().sum().backward();
  expect_close(compiled_grad, fc.weight.grad(), 1e-6);
}

TEST(Compile, ModuleParametersAreGraphInputsWithDottedSources) {
  nn::Sequential model({std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::ReLU>(),
                        std::make_shared<nn::Linear>(8, 2)});
  auto f = compile([](nn::Module& m, const Tensor& x) { return m(x); });
  Tensor x = randn({3, 4});
  expect_equal(f(model, x), model(x));
  const std::string text = f.describe();
  for (const char* source : {"model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"})
    EXPECT_NE(text.find(source), std::string::npos) << source << "\n" << text;
}

TEST(Compile, ReplacingAParameterOrSwitchingToEvalRecompiles) {
  nn::Linear fc(4, 2);
  nn::Dropout drop(0.5);
  auto f = compile([](nn::Module& m, nn::Module& d, const Tensor& x) { return d(m(x)); });
  Tensor x = randn({3, 4});
  f(fc, drop, x);
  drop.eval();
  expect_equal(f(fc, drop, x), fc(x));
  EXPECT_EQ(f.stats().compiles, 2);
  EXPECT_NE(f.stats().recompile_reasons.at(0).find("training mode"), std::string::npos);
  fc.to(kFloat64);  // puts new tensors into the slots
  Tensor x64 = x.to(kFloat64);
  expect_equal(f(fc, drop, x64), fc(x64));
  EXPECT_EQ(f.stats().compiles, 3);
}

TEST(Compile, InPlaceUpdatesOfInputsAndBuffersMatchEager) {
  nn::BatchNorm1d bn_compiled(3), bn_eager(3);
  auto f = compile([](nn::Module& bn, const Tensor& x, const Tensor& acc) {
    acc.add_(x.sum({0}));
    return bn(x);
  });
  Tensor acc_c = zeros({3}), acc_e = zeros({3});
  for (int step = 0; step < 3; ++step) {
    Tensor x = randn({6, 3});
    expect_equal(f(bn_compiled, x, acc_c), bn_eager(x));
    acc_e.add_(x.sum({0}));
  }
  expect_equal(acc_c, acc_e);
  for (const auto& [name, t] : bn_eager.named_buffers()) {
    Tensor other;
    for (const auto& [n2, t2] : bn_compiled.named_buffers())
      if (n2 == name) other = t2;
    expect_equal(other, t);
  }
  EXPECT_EQ(f.stats().compiles, 1);
}

TEST(Compile, ReturnsTuplesVectorsAndNothing) {
  auto pair = compile([](const Tensor& x) { return std::make_tuple(x + 1, x * 2); });
  Tensor x = randn({3});
  auto [a, b] = pair(x);
  expect_equal(a, x + 1);
  expect_equal(b, x * 2);
  auto many = compile([](const Tensor& x) { return x.chunk(3); });
  std::vector<Tensor> parts = many(randn({6}));
  EXPECT_EQ(parts.size(), 3u);
  auto none = compile([](const Tensor& x) { x.mul_(2); });
  Tensor y = ones({2});
  none(y);
  expect_equal(y, full({2}, 2.0));
}

TEST(Compile, UnknownBackendAndBadOptionsAreErrors) {
  auto f = [](const Tensor& x) { return x; };
  EXPECT_NE(error_message([&] {
              compile(f, {.backend = "tensorrt"});
            }).find("unknown backend 'tensorrt'; registered backends: "),
            std::string::npos);
  EXPECT_THROW(compile(f, {.recompile_limit = 0}), ValueError);
  EXPECT_THROW(capture::register_backend("eager", capture::Backend{}), ValueError);
}

TEST(Compile, CustomBackendsSeeTheGraphAndExampleInputs) {
  static int seen_graphs = 0;
  static size_t seen_inputs = 0;
  capture::register_backend("test_custom", [](const graph::Graph& g, std::span<const Tensor> in) {
    seen_graphs += 1;
    seen_inputs = in.size();
    return capture::lookup_backend("eager")(g, in, {});
  });
  auto f = compile([](const Tensor& x, const Tensor& y) { return x.matmul(y); },
                   {.backend = "test_custom"});
  Tensor x = randn({2, 3}), y = randn({3, 4});
  expect_equal(f(x, y), x.matmul(y));
  EXPECT_EQ(seen_graphs, 1);
  EXPECT_EQ(seen_inputs, 2u);
}

TEST(Compile, CountBackendCountsGraphsAndOps) {
  capture::compile_counter() = {};
  auto f = compile([](const Tensor& x) { return (x + 1).relu(); }, {.backend = "count"});
  f(randn({4}));
  f(randn({4}));
  EXPECT_EQ(capture::compile_counter().graphs, 1);
  EXPECT_EQ(capture::compile_counter().ops, 2);
}

TEST(Compile, RecompileLimitFallsBackToEager) {
  auto f = compile([](const Tensor& x, int64_t k) { return x * k; }, {.recompile_limit = 2});
  Tensor x = randn({3});
  for (int64_t k = 1; k <= 5; ++k) expect_equal(f(x, k), x * k);
  EXPECT_EQ(f.stats().compiles, 2);
  EXPECT_TRUE(f.stats().fell_back_to_eager);
}

TEST(Compile, ErrorsInsideTheFunctionReachTheCallerAndLeaveNoTraceState) {
  auto f = compile([](const Tensor& x) { return x.matmul(x); });
  EXPECT_THROW(f(randn({2, 3})), ShapeError);
  // Eager code still works afterwards (the Trace key and hooks were removed).
  Tensor y = randn({2, 2});
  expect_equal(y.matmul(y), y.matmul(y));
  expect_equal(f(y), y.matmul(y));
}

}  // namespace
}  // namespace kiln
