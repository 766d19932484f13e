// CompileOptions::verify (Note [Verify mode] in src/capture/verify.h): state the guards do not see
// changing between calls, and a backend computing a wrong value, each raise VerifyError naming
// what differs; a function that is functional runs in this mode exactly as without it.
#include <gtest/gtest.h>

#include <cstdlib>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "src/capture/backend.h"
#include "src/graph/graph.h"
#include "tests/capture/compare.h"

namespace kiln {
namespace {

using testing::expect_equal;

CompileOptions verifying(const std::string& backend = "inductor") {
  CompileOptions o;
  o.backend = backend;
  o.verify = true;
  return o;
}

// The message of the VerifyError `f` throws; a test failure when it throws nothing or another
// error.
template <typename F>
std::string verify_error(F&& f) {
  try {
    f();
  } catch (const VerifyError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected VerifyError, got: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected VerifyError, got no error";
  return "(no error)";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Verify, AFunctionalFunctionRunsAsWithoutVerify) {
  for (const std::string backend : {"eager", "inductor"}) {
    auto f = compile([](const Tensor& a, const Tensor& b) { return (a * b).sum(1) + a.mean(); },
                     verifying(backend));
    for (int i = 0; i < 3; ++i) {
      Tensor a = randn({4, 5}), b = randn({4, 5});
      expect_equal(f(a, b), (a * b).sum(1) + a.mean());
    }
    EXPECT_EQ(f.stats().compiles, 1);
    EXPECT_EQ(f.stats().cache_hits, 2);
  }
}

TEST(Verify, EveryCacheHitRunsTheFunctionsCppAgain) {
  int runs = 0;
  auto f = compile(
      [&runs](const Tensor& x) {
        ++runs;
        return x + 1;
      },
      verifying());
  for (int i = 0; i < 3; ++i) f(ones({2}));
  EXPECT_EQ(runs, 3);  // one trace, and one retrace for each of the two cache hits
}

TEST(Verify, ACapturedFloatThatChangesIsAStaleGraph) {
  double scale = 2.0;
  auto f = compile([&scale](const Tensor& x) { return x * scale; }, verifying());
  Tensor x = ones({3});
  expect_equal(f(x), full({3}, 2.0));
  expect_equal(f(x), full({3}, 2.0));  // unchanged: the retrace records the same graph
  scale = 3.0;
  const std::string message = verify_error([&] { f(x); });
  EXPECT_TRUE(contains(message, "recorded a different graph than the cached one")) << message;
  EXPECT_TRUE(contains(message, "cached: ")) << message;
  EXPECT_TRUE(contains(message, "2")) << message;
  EXPECT_TRUE(contains(message, "3")) << message;
  EXPECT_TRUE(contains(message, "register_attribute")) << message;
}

TEST(Verify, ACapturedBoolThatPicksABranchIsAStaleGraph) {
  bool use_relu = false;
  auto f = compile([&use_relu](const Tensor& x) { return use_relu ? x.relu() : x.neg(); },
                   verifying("eager"));
  Tensor x = randn({4});
  expect_equal(f(x), x.neg());
  use_relu = true;
  const std::string message = verify_error([&] { f(x); });
  EXPECT_TRUE(contains(message, "relu")) << message;
  EXPECT_TRUE(contains(message, "neg")) << message;
  EXPECT_TRUE(contains(message, "verify_test.cpp")) << message;  // the user's line
}

TEST(Verify, ACapturedTensorVariableAssignedANewTensorIsNamed) {
  Tensor bias = ones({3});
  auto f = compile([&bias](const Tensor& x) { return x + bias; }, verifying());
  Tensor x = zeros({3});
  expect_equal(f(x), ones({3}));
  bias.fill_(5.0);  // an in-place change is read by the cached graph: no error
  expect_equal(f(x), full({3}, 5.0));
  bias = full({3}, 7.0);  // a new tensor: the cached graph still reads the old one
  const std::string message = verify_error([&] { f(x); });
  EXPECT_TRUE(contains(message, "is not the tensor the cached graph reads")) << message;
  EXPECT_TRUE(contains(message, "constant0")) << message;
}

TEST(Verify, AConstantTensorBuiltInsideTheFunctionIsTheSameConstantWhileItsValuesAre) {
  std::vector<float> values{1, 2, 3};
  auto f = compile([&values](const Tensor& x) { return x * from_vector(values); }, verifying());
  Tensor x = ones({3});
  expect_equal(f(x), from_vector(values));
  expect_equal(f(x), from_vector(values));  // a new tensor each trace, with the same values
  values[1] = 20;
  const std::string message = verify_error([&] { f(x); });
  EXPECT_TRUE(contains(message, "is not the tensor the cached graph reads")) << message;
}

struct ScaledLinear : nn::Module {
  ScaledLinear() : Module("ScaledLinear") {
    fc = register_module("fc", std::make_shared<nn::Linear>(4, 2));
  }
  Tensor forward(const Tensor& x) override { return fc->forward(x) * scale; }
  std::shared_ptr<nn::Linear> fc;
  double scale = 1.0;  // a plain member: not guarded (register_attribute would be)
};

TEST(Verify, APlainModuleMemberThatChangesIsAStaleGraph) {
  auto f = compile([](nn::Module& m, const Tensor& x) { return m(x); }, verifying());
  ScaledLinear m;
  Tensor x = randn({3, 4});
  expect_equal(f(m, x), m(x));
  m.scale = 0.5;
  EXPECT_THROW(f(m, x), VerifyError);
}

TEST(Verify, TrainingStepsWithAGraphBreakAndAnOptimizerVerifyCleanly) {
  manual_seed(7);
  nn::Sequential model(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Dropout>(0.25), std::make_shared<nn::Linear>(8, 1)});
  optim::SGD opt(model.parameters(), {.lr = 0.05, .momentum = 0.9});
  auto step = compile(
      [&opt](nn::Module& m, const Tensor& x, const Tensor& y) {
        opt.zero_grad();
        Tensor loss = mse_loss(m(x), y);
        loss.backward();
        opt.step();
        return loss.detach();
      },
      verifying());
  Tensor x = randn({16, 4}), y = randn({16, 1});
  double first = 0, last = 0;
  for (int i = 0; i < 6; ++i) {
    const double loss = step(model, x, y).item<double>();
    if (i == 0) first = loss;
    last = loss;
  }
  EXPECT_LT(last, first);
  EXPECT_GE(step.stats().cache_hits, 3);
}

TEST(Verify, AnItemBreakVerifiesEachBranch) {
  auto f = compile(
      [](const Tensor& x) {
        Tensor s = x.sum();
        return s.item<double>() > 0 ? x * 2 : x - 1;
      },
      verifying());
  for (double sign : {1.0, -1.0, 1.0, -1.0}) {
    Tensor x = full({3}, sign);
    expect_equal(f(x), sign > 0 ? x * 2 : x - 1);
  }
}

// Duck sizing gives equal sizes one symbol. An entry traced with [3, 4] ([s0, s1]) serves
// [5, 5] (no guard says s0 != s1), and the retrace of that call must give the sizes the cached
// entry's symbols, not [s0, s0]: otherwise verify mode reports a stale graph that is not, and a
// new branch under the entry reports a trace that is not deterministic.
TEST(Verify, EqualSizesOfACallServedByAnEntryWithDistinctSymbolsVerifyCleanly) {
  CompileOptions o = verifying();
  o.dynamic = true;
  auto rows_plus_cols = [](const Tensor& x) { return x.sum({0}).sum() + x.sum({1}).sum(); };
  auto f = compile(rows_plus_cols, o);
  for (const Tensor& x : {randn({3, 4}), randn({5, 5}), randn({2, 6}), randn({6, 6})})
    expect_equal(f(x), rows_plus_cols(x));
  EXPECT_EQ(f.stats().compiles, 1);
}

TEST(Verify, ANewBranchOfACallWithEqualSizesReplaysThePrefix) {
  CompileOptions o = verifying();
  o.dynamic = true;
  auto fn = [](const Tensor& x) {
    const Tensor y = x.sum({1});
    return y.sum().item<double>() > 0 ? y * 2 : y.narrow(0, 0, 1) - x.size(1);
  };
  for (bool verify : {true, false}) {
    o.verify = verify;
    auto f = compile(fn, o);
    const Tensor positive = ones({3, 4}), negative = -ones({5, 5});
    expect_equal(f(positive), fn(positive));
    expect_equal(f(negative), fn(negative));  // a new branch, traced with [5, 5]
    expect_equal(f(-ones({6, 2})), fn(-ones({6, 2})));
  }
}

// A backend that computes a wrong value: the first output of every graph is off by one.
const bool g_off_by_one_registered = [] {
  capture::register_backend(
      "verify_test_off_by_one", [](const graph::Graph& g, std::span<const Tensor> inputs) {
        capture::CompiledGraph right = capture::lookup_backend("eager")(g, inputs, {});
        return capture::CompiledGraph([right](std::span<const Tensor> in) {
          std::vector<Tensor> out = right(in);
          if (!out.empty() && is_floating(out[0].dtype())) out[0] = out[0] + 1;
          return out;
        });
      });
  return true;
}();

TEST(Verify, ABackendThatComputesAWrongValueIsCaughtOnTheFirstCall) {
  auto f =
      compile([](const Tensor& x) { return (x * 2).exp(); }, verifying("verify_test_off_by_one"));
  const std::string message = verify_error([&] { f(zeros({2, 3})); });
  EXPECT_TRUE(contains(message, "output 0 of segment 0 differs")) << message;
  EXPECT_TRUE(contains(message, "element [0, 0] is 2 where the interpreter gives 1")) << message;
  EXPECT_TRUE(contains(message, "exp(")) << message;
  EXPECT_TRUE(contains(message, "verify_test_off_by_one")) << message;
}

TEST(Verify, AWrongBackendWithoutVerifyIsNotChecked) {
  auto f = compile([](const Tensor& x) { return (x * 2).exp(); },
                   CompileOptions{.backend = "verify_test_off_by_one", .verify = false});
  expect_equal(f(zeros({2})), full({2}, 2.0));  // the wrong value, unchecked
}

TEST(Verify, InPlaceUpdatesOfAliasingInputsAreComparedOnAliasingCopies) {
  // A module buffer and a captured view of it are two graph inputs over one storage: the
  // interpreter's copies must alias as they do, or the update through one would not show in the
  // other and verify would report a difference that is not there.
  struct Holder : nn::Module {
    Holder() : Module("Holder") { register_buffer("w", zeros({6})); }
  };
  Holder h;
  Tensor w = h.named_buffers().at(0).second;
  Tensor tail = w.narrow(0, 2, 3);
  auto body = [&tail](nn::Module& m, const Tensor& x) {
    m.named_buffers().at(0).second.narrow(0, 0, 3).add_(x);
    return tail * 1;
  };
  auto f = compile(body, verifying());
  Tensor x = ones({3});
  expect_equal(f(h, x), tensor({1.f, 0.f, 0.f}));
  expect_equal(f(h, x), tensor({2.f, 0.f, 0.f}));
  expect_equal(w, tensor({2.f, 2.f, 2.f, 0.f, 0.f, 0.f}));
}

TEST(Verify, TheEnvironmentVariableTurnsItOn) {
  const char* was = std::getenv("KILN_COMPILE_VERIFY");
  const std::string saved = was != nullptr ? was : "";
  ::setenv("KILN_COMPILE_VERIFY", "1", 1);
  EXPECT_TRUE(CompileOptions{}.verify);
  ::setenv("KILN_COMPILE_VERIFY", "0", 1);
  EXPECT_FALSE(CompileOptions{}.verify);
  ::unsetenv("KILN_COMPILE_VERIFY");
  EXPECT_FALSE(CompileOptions{}.verify);
  if (was != nullptr) ::setenv("KILN_COMPILE_VERIFY", saved.c_str(), 1);
}

}  // namespace
}  // namespace kiln
