// A compiled function returns what the same code returns eagerly, or raises (issue 19): each test
// here is a case where kiln::compile once returned a different answer with no error.
#include <gtest/gtest.h>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "src/capture/tracer.h"
#include "tests/capture/compare.h"

namespace kiln {
namespace {

using testing::error_message;
using testing::expect_equal;

CompileOptions with_backend(const std::string& backend) {
  CompileOptions o;
  o.backend = backend;
  return o;
}

// ---- modules (Note [Module guards]) ----

class ModuleGuards : public ::testing::TestWithParam<std::string> {};

TEST_P(ModuleGuards, TwoModulesThroughOneFunctionEachGetTheirOwnParameters) {
  auto f = compile([](nn::Module& m, const Tensor& x) { return m(x); }, with_backend(GetParam()));
  nn::Linear a(4, 3), b(4, 3);
  Tensor x = randn({2, 4});
  expect_equal(f(a, x), a(x));
  expect_equal(f(b, x), b(x));
  expect_equal(f(a, x), a(x));
  ASSERT_FALSE(f.stats().recompile_reasons.empty());
  EXPECT_NE(f.stats().recompile_reasons[0].find("model is a different module than when traced"),
            std::string::npos)
      << f.stats().recompile_reasons[0];
}

TEST_P(ModuleGuards, AModuleBuiltWhereADestroyedOneWasIsNotTheTracedModule) {
  auto f = compile([](nn::Module& m, const Tensor& x) { return m(x); }, with_backend(GetParam()));
  Tensor x = randn({2, 4});
  for (int i = 0; i < 3; ++i) {
    auto m = std::make_unique<nn::Linear>(4, 3);  // often at the address the last one had
    expect_equal(f(*m, x), (*m)(x));
  }
  EXPECT_EQ(f.stats().compiles, 3);
}

struct TwoLayers : nn::Module {
  TwoLayers() : Module("TwoLayers") {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 4));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(4, 2));
    register_attribute("scale", 2.0);
    register_attribute("use_relu", true);
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = fc1->forward(x) * attribute_as<double>("scale");
    if (attribute_as<bool>("use_relu")) h = h.relu();
    return fc2->forward(h);
  }
  std::shared_ptr<nn::Linear> fc1, fc2;
};

TEST_P(ModuleGuards, AReplacedSubmoduleRecompiles) {
  auto f = compile([](nn::Module& m, const Tensor& x) { return m(x); }, with_backend(GetParam()));
  TwoLayers net;
  Tensor x = randn({3, 4});
  expect_equal(f(net, x), net(x));
  net.fc2 = net.replace_module("fc2", std::make_shared<nn::Linear>(4, 2));
  expect_equal(f(net, x), net(x));
  ASSERT_EQ(f.stats().recompile_reasons.size(), 1u);
  EXPECT_NE(f.stats().recompile_reasons[0].find("model (TwoLayers) changed since it was traced: "
                                                "submodule \"fc2\" replaced"),
            std::string::npos)
      << f.stats().recompile_reasons[0];
}

TEST_P(ModuleGuards, AttributesAreGuardedByValue) {
  auto f = compile([](nn::Module& m, const Tensor& x) { return m(x); }, with_backend(GetParam()));
  TwoLayers net;
  Tensor x = randn({3, 4});
  expect_equal(f(net, x), net(x));
  net.set_attribute("scale", 3.0);
  expect_equal(f(net, x), net(x));
  net.set_attribute("use_relu", false);
  expect_equal(f(net, x), net(x));
  ASSERT_EQ(f.stats().recompile_reasons.size(), 2u);
  EXPECT_NE(f.stats().recompile_reasons[0].find("attribute model.scale changed from 2 to 3"),
            std::string::npos)
      << f.stats().recompile_reasons[0];
  net.set_attribute("scale", 2.0);
  net.set_attribute("use_relu", true);
  expect_equal(f(net, x), net(x));
  EXPECT_EQ(f.stats().compiles, 3);  // the first entry is reused
}

TEST_P(ModuleGuards, ANewParameterOrTrainingModeRecompiles) {
  auto f = compile([](nn::Module& m, const Tensor& x) { return m(x); }, with_backend(GetParam()));
  TwoLayers net;
  Tensor x = randn({3, 4});
  expect_equal(f(net, x), net(x));
  net.fc1->register_parameter("extra", zeros({1}));
  expect_equal(f(net, x), net(x));
  net.eval();
  expect_equal(f(net, x), net(x));
  ASSERT_EQ(f.stats().recompile_reasons.size(), 2u);
  EXPECT_NE(f.stats().recompile_reasons[0].find("model.fc1 (Linear) changed since it was traced: "
                                                "parameter \"extra\" registered"),
            std::string::npos)
      << f.stats().recompile_reasons[0];
  EXPECT_NE(f.stats().recompile_reasons[1].find("model's training mode changed from train to eval"),
            std::string::npos)
      << f.stats().recompile_reasons[1];
}

TEST_P(ModuleGuards, AParameterAssignedANewTensorIsRead) {
  auto f = compile([](nn::Module& m, const Tensor& x) { return m(x); }, with_backend(GetParam()));
  nn::Linear lin(4, 3);
  Tensor x = randn({2, 4});
  expect_equal(f(lin, x), lin(x));
  lin.weight = randn({3, 4}).requires_grad_();
  expect_equal(f(lin, x), lin(x));
  lin.weight = randn({3, 4}, kFloat64).requires_grad_();
  lin.bias = randn({3}, kFloat64).requires_grad_();
  Tensor x64 = x.to(kFloat64);
  expect_equal(f(lin, x64), lin(x64));
}

INSTANTIATE_TEST_SUITE_P(Backends, ModuleGuards, ::testing::Values("eager", "inductor"));

TEST(ModuleAttributes, BadUseRaisesNamingTheModuleAndAttribute) {
  TwoLayers net;
  EXPECT_NE(error_message([&] {
              net.set_attribute("scale", int64_t{3});
            }).find("set_attribute(\"scale\"): the attribute holds a double, not a int64"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              net.attribute("missing");
            }).find("TwoLayers: no attribute named \"missing\""),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              net.register_attribute("fc1", 1.0);
            }).find("cannot register attribute \"fc1\""),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              net.attribute_as<int64_t>("scale");
            }).find("attribute \"scale\" holds a double"),
            std::string::npos);
  EXPECT_NE(error_message([&] {
              net.replace_module("fc3", std::make_shared<nn::ReLU>());
            }).find("replace_module(\"fc3\"): there is no submodule of that name"),
            std::string::npos);
}

// ---- random numbers (Note [Random ops under a trace]) ----

class RandomOps : public ::testing::TestWithParam<std::string> {};

// Runs `fn` once per seed, eagerly and compiled, each from the same generator state: the values
// must be the very ones eager code draws, and the generator must end where eager leaves it.
template <typename F>
void expect_eager_numbers(F fn, const CompileOptions& options, const Tensor& x) {
  auto f = compile(fn, options);
  for (uint64_t seed : {999u, 123u, 999u}) {
    manual_seed(seed);
    Tensor expected = fn(x);
    Tensor expected_next = fn(x);
    const uint64_t expected_offset = default_generator().offset();
    manual_seed(seed);
    Tensor actual = f(x);
    Tensor actual_next = f(x);  // a cache hit draws fresh numbers
    EXPECT_EQ(default_generator().offset(), expected_offset);
    expect_equal(actual, expected);
    expect_equal(actual_next, expected_next);
    EXPECT_NE(actual.to(kFloat64).to_vector<double>(),
              actual_next.to(kFloat64).to_vector<double>());
  }
  EXPECT_EQ(f.stats().compiles, 1);
}

TEST_P(RandomOps, DrawTheNumbersEagerDrawsAndAdvanceTheGenerator) {
  const CompileOptions options = with_backend(GetParam());
  Tensor x = randn({4, 8});
  expect_eager_numbers([](const Tensor& t) { return dropout(t, 0.5, true) * 2; }, options, x);
  expect_eager_numbers([](const Tensor& t) { return rand_like(t) + t; }, options, x);
  expect_eager_numbers([](const Tensor& t) { return t + randn({4, 8}) + randn({8}); }, options, x);
  expect_eager_numbers(
      [](const Tensor& t) {
        return t + randint(0, 10, {4, 8}, TensorOptions(kInt64));
      },
      options, x);
  nn::Dropout drop(0.3);
  expect_eager_numbers([&](const Tensor& t) { return drop(t); }, options, x);
}

TEST_P(RandomOps, ACapturedGeneratorAdvances) {
  Generator gen(7);
  auto body = [&](const Tensor& t) { return dropout(t, 0.5, true, gen); };
  auto f = compile(body, with_backend(GetParam()));
  Tensor x = ones({64});
  gen.manual_seed(7);
  Tensor e1 = body(x), e2 = body(x);
  gen.manual_seed(7);
  expect_equal(f(x), e1);
  expect_equal(f(x), e2);
}

TEST_P(RandomOps, ATrainingStepWithDropoutMatchesEager) {
  auto make_model = [] {
    manual_seed(5);
    return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Linear>(6, 16), std::make_shared<nn::Dropout>(0.5),
        std::make_shared<nn::Linear>(16, 3)});
  };
  auto eager_model = make_model(), compiled_model = make_model();
  optim::SGD eager_opt(eager_model->parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::SGD compiled_opt(compiled_model->parameters(), {.lr = 0.1, .momentum = 0.9});
  auto step_of = [](nn::Module& model, optim::SGD& opt) {
    return [&model, &opt](const Tensor& x, const Tensor& y) {
      opt.zero_grad();
      Tensor loss = cross_entropy(model(x), y);
      loss.backward();
      opt.step();
      return loss.detach();
    };
  };
  auto eager_step = step_of(*eager_model, eager_opt);
  auto compiled_step = compile(step_of(*compiled_model, compiled_opt), with_backend(GetParam()));
  manual_seed(11);
  Tensor x = randn({8, 6}), y = randint(0, 3, {8});
  for (int i = 0; i < 4; ++i) {
    manual_seed(100 + i);
    Tensor expected = eager_step(x, y);
    manual_seed(100 + i);
    Tensor actual = compiled_step(x, y);
    EXPECT_NEAR(actual.item<float>(), expected.item<float>(), 1e-5) << "step " << i;
  }
  const auto e = eager_model->parameters(), c = compiled_model->parameters();
  for (size_t i = 0; i < e.size(); ++i) {
    const std::vector<float> ev = e[i].to_vector<float>(), cv = c[i].to_vector<float>();
    for (size_t k = 0; k < ev.size(); ++k) EXPECT_NEAR(cv[k], ev[k], 1e-4) << "parameter " << i;
  }
}

TEST(OptimizerState, ADirectLearningRateWriteTakesEffect) {
  for (const bool momentum : {false, true}) {
    manual_seed(1);
    nn::Linear lin(3, 2);
    optim::SGD opt(lin.parameters(), {.lr = 0.1, .momentum = momentum ? 0.9 : 0.0});
    auto step = compile([&](const Tensor& x) {
      opt.zero_grad();
      Tensor y = lin(x);
      Tensor loss = (y * y).sum();
      loss.backward();
      opt.step();
      return loss.detach();
    });
    Tensor x = randn({4, 3});
    for (int i = 0; i < 3; ++i) step(x);  // eager first step, then the compiled update
    opt.param_groups()[0].lr = 0;
    const std::vector<float> before = lin.weight.to_vector<float>();
    step(x);
    EXPECT_EQ(lin.weight.to_vector<float>(), before) << "compiled, momentum " << momentum;
    opt.step();
    EXPECT_EQ(lin.weight.to_vector<float>(), before) << "eager, momentum " << momentum;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, RandomOps, ::testing::Values("eager", "inductor"));

// ---- runtime checks (Note [Runtime errors in generated code]) ----

class IntegerDivisionByZero : public ::testing::TestWithParam<std::string> {};

TEST_P(IntegerDivisionByZero, RaisesAsEagerDoes) {
  const CompileOptions options = with_backend(GetParam());
  auto floor =
      compile([](const Tensor& a, const Tensor& b) { return a.div(b, "floor") + 1; }, options);
  auto rem = compile([](const Tensor& a, const Tensor& b) { return a.remainder(b) * 2; }, options);
  auto trunc =
      compile([](const Tensor& a, const Tensor& b) { return a.div(b, "trunc") - 1; }, options);
  Tensor a = tensor({5, 7, 9}, kInt64), good = tensor({1, 2, 3}, kInt64);
  Tensor zero = tensor({1, 0, 3}, kInt64);
  expect_equal(floor(a, good), a.div(good, "floor") + 1);
  expect_equal(rem(a, good), a.remainder(good) * 2);
  Tensor a32 = a.to(kInt32), good32 = good.to(kInt32), zero32 = zero.to(kInt32);
  expect_equal(trunc(a32, good32), a32.div(good32, "trunc") - 1);
  EXPECT_THROW(a.div(zero, "floor"), ValueError);  // eager
  for (int i = 0; i < 2; ++i) {  // the error does not stick: the next good call works
    const std::string message = error_message([&] { floor(a, zero); });
    EXPECT_NE(message.find("integer division by zero"), std::string::npos) << message;
    EXPECT_THROW(rem(a, zero), ValueError);
    EXPECT_THROW(trunc(a32, zero32), ValueError);
    expect_equal(floor(a, good), a.div(good, "floor") + 1);
    expect_equal(trunc(a32, good32), a32.div(good32, "trunc") - 1);
  }
  EXPECT_EQ(floor.stats().compiles, 1);
}

// Note [Checks in dead code]
TEST_P(IntegerDivisionByZero, AnUnusedDivisionStillRaises) {
  auto body = [](const Tensor& a, const Tensor& b) {
    Tensor unused = a.remainder(b);
    Tensor also_unused = a.index_select(0, b);
    (void)unused;
    (void)also_unused;
    return a + 1;
  };
  auto f = compile(body, with_backend(GetParam()));
  Tensor a = tensor({5, 7, 9}, kInt64);
  expect_equal(f(a, tensor({1, 2, 2}, kInt64)), a + 1);
  const std::string eager = error_message([&] { body(a, tensor({1, 0, 2}, kInt64)); });
  EXPECT_NE(eager.find("division by zero"), std::string::npos) << eager;
  const std::string compiled = error_message([&] { f(a, tensor({1, 0, 2}, kInt64)); });
  EXPECT_NE(compiled.find("division by zero"), std::string::npos) << compiled;
  const std::string out_of_range = error_message([&] { body(a, tensor({1, 7, 2}, kInt64)); });
  EXPECT_NE(error_message([&] { f(a, tensor({1, 7, 2}, kInt64)); }), "(no error)") << out_of_range;
}

// Note [Division by zero in an empty result] (kiln-fuzz --dynamic --grad --random seed 20261206
// index 391: eager raised for fmod of an [7, 0] tensor by a 0-dim zero, compiled code did not).
TEST_P(IntegerDivisionByZero, AnEmptyResultDividesNothingAndRaisesNothing) {
  auto body = [](const Tensor& a, const Tensor& b) {
    return std::make_tuple(a.fmod(b), a.div(b, "floor"), a.remainder(b) + 1);
  };
  auto f = compile(body, with_backend(GetParam()));
  Tensor empty = zeros({7, 0}, kInt64), zero = scalar_tensor(0, kInt64);
  for (const Tensor& divisor : {scalar_tensor(3, kInt64), zero, zeros({0}, kInt64)}) {
    auto [e_fmod, e_floor, e_rem] = body(empty, divisor);  // eager: no error
    auto [c_fmod, c_floor, c_rem] = f(empty, divisor);
    expect_equal(c_fmod, e_fmod);
    expect_equal(c_floor, e_floor);
    expect_equal(c_rem, e_rem);
  }
  // A [3] divisor with a zero against [0, 3]: no element is divided.
  Tensor rows = zeros({0, 3}, kInt64), with_zero = tensor({1, 0, 2}, kInt64);
  auto [e_fmod, e_floor, e_rem] = body(rows, with_zero);
  auto [c_fmod, c_floor, c_rem] = f(rows, with_zero);
  expect_equal(c_fmod, e_fmod);
  expect_equal(c_rem, e_rem);
  // A non-empty result still raises, eagerly and compiled.
  Tensor a = tensor({5, 7, 9}, kInt64);
  EXPECT_THROW(body(a, zero), ValueError);
  EXPECT_THROW(f(a, zero), ValueError);
}

// kiln-fuzz --dynamic seed 20261207 index 479: an unused division was kept only when nothing at
// all read it; a division read only by views that are dropped too was skipped.
TEST_P(IntegerDivisionByZero, ADivisionReadOnlyByDeadOpsStillRaises) {
  auto body = [](const Tensor& a, const Tensor& b) {
    Tensor quotient = a.le(Scalar(2)).div(b, "floor");
    Tensor dropped = quotient.slice(0, 0, 2).select(1, 0);
    Tensor also_dropped = a.remainder(b).neg().flatten().narrow(0, 1, 2);
    (void)dropped;
    (void)also_dropped;
    return a + 1;
  };
  CompileOptions options = with_backend(GetParam());
  options.dynamic = true;
  auto f = compile(body, options);
  Tensor a = tensor({1, 2, 3, 4}, kUInt8).view({4, 1});
  Tensor good = tensor({1, 2, 3, 1}, kUInt16).view({4, 1});
  Tensor zero = tensor({1, 0, 3, 1}, kUInt16).view({4, 1});
  expect_equal(f(a, good), body(a, good));
  EXPECT_THROW(body(a, zero), ValueError);
  const std::string message = error_message([&] { f(a, zero); });
  EXPECT_NE(message.find("division by zero"), std::string::npos) << message;
}

// kiln-fuzz --dynamic --grad --random seed 20261216 index 433: a reduction over a dim whose
// symbolic size is an expression (a slice of s0) that is 0 at a later call raises as eager does.
TEST(EmptyReductions, ADimThatBecomesEmptyAtALaterCallRaises) {
  auto body = [](const Tensor& x) { return x.slice(0, 2, 7, 3).amin({0}) + 1; };
  auto argmax_body = [](const Tensor& x) { return x.narrow(0, 0, x.size(0) - 3).argmax() + 1; };
  auto f = compile(body, {.dynamic = true});
  auto g = compile(argmax_body, {.dynamic = true});
  Tensor big = randn({8, 3}), small = randn({2, 3});
  Tensor rows = randn({5, 2}), three = randn({3, 2});
  expect_equal(f(big), body(big));
  expect_equal(g(rows), argmax_body(rows));
  EXPECT_THROW(body(small), IndexError);  // eager: the slice is [0, 3]
  EXPECT_THROW(f(small), IndexError);
  EXPECT_THROW(argmax_body(three), IndexError);
  EXPECT_THROW(g(three), IndexError);
  expect_equal(f(big), body(big));
}

// A value compared with a reduction of itself (a one-hot of the max): the compiled code computes
// the value once for the comparison and again inside the reduction, and both must give the same
// bits, or a row has no maximum (Note [One value per expression] in src/codegen/cpp/prelude.cpp).
TEST(Recomputation, AValueEqualsItsOwnMaximumAsEagerly) {
  using Fn = Tensor (*)(const Tensor&);
  const std::vector<Fn> values = {[](const Tensor& x) { return cos(x); },
                                  [](const Tensor& x) { return exp(x); },
                                  [](const Tensor& x) { return x / 7.0; },
                                  [](const Tensor& x) { return x / x.sum({1}, true); }};
  manual_seed(0);
  for (bool dynamic : {false, true})
    for (int64_t dim : {0, 1})
      for (size_t v = 0; v < values.size(); ++v) {
        SCOPED_TRACE(fmt::format("dynamic {} dim {} value {}", dynamic, dim, v));
        const Fn value = values[v];
        auto body = [value, dim](const Tensor& x) {
          Tensor y = value(x);
          return (y == y.amax({dim}, true)).sum({dim});
        };
        CompileOptions options;
        options.dynamic = dynamic;
        options.recompile_limit = 64;
        auto f = compile(body, options);
        for (int64_t rows : {3, 5, 9})
          for (int64_t cols : {13, 37}) {
            Tensor x = randn({rows, cols}) * 3;
            SCOPED_TRACE(fmt::format("{}x{}", rows, cols));
            testing::expect_equal(f(x), body(x));
          }
      }
}

// The backward's saved select of y [1, s1] is [1] with stride s1, and the tangent of y.unsqueeze
// is [1, 1, s1]. A size-1 dim's stride addresses nothing, and the saved tensor came back with
// stride 0 there: the backward read s1 from it and divided by zero (SIGFPE; kiln-fuzz --seed
// 5550004 --index 224 --dynamic --grad). See Note [Where a symbol is read].
class SymbolFromAStride : public ::testing::TestWithParam<std::string> {};

TEST_P(SymbolFromAStride, IsNeverReadThroughADimOfSizeOne) {
  auto body = [](const Tensor& x, const Tensor& b) {
    Tensor y = addcmul(x, b, b);
    return std::make_tuple(y.select(1, 2).atan(), y.unsqueeze(-3));
  };
  CompileOptions options = with_backend(GetParam());
  options.dynamic = true;
  auto f = compile(body, options);
  manual_seed(0);
  for (int64_t n : {4, 3, 6}) {
    SCOPED_TRACE(fmt::format("n = {}", n));
    Tensor x = randn({1, n}).requires_grad_(true);
    Tensor b = randn({1, n}) > 0;
    auto [y, z] = f(x, b);
    const Tensor grad = kiln::grad({y.sum() + (z * 3).sum()}, {x})[0];
    Tensor x_eager = x.detach().requires_grad_(true);
    auto [y_eager, z_eager] = body(x_eager, b);
    expect_equal(y, y_eager);
    expect_equal(grad, kiln::grad({y_eager.sum() + (z_eager * 3).sum()}, {x_eager})[0]);
  }
}

// The backward of an empty slice of [1, 1, s0, 1] needs s0 for its gradient's size; its only
// input with s0 whole has it as the stride of a size-1 dim, which is never read (above), so the
// check that every symbol is bound must not count it either: the generated backward used an
// undeclared s0 and the C++ compiler failed (kiln-fuzz --seed 5580001 --index 163 --dynamic
// --grad). Now the backward runs through the eager engine.
TEST(SymbolFromAStride, DoesNotCountAsBoundForTheBackward) {
  auto body = [](const Tensor& x) { return x.slice(2, -2, 1).atan(); };
  CompileOptions options;
  options.dynamic = true;
  auto f = compile(body, options);
  for (int64_t n : {3, 5}) {
    SCOPED_TRACE(fmt::format("n = {}", n));
    Tensor x = randn({1, 1, n, 1}).requires_grad_(true);
    Tensor y = f(x);
    const Tensor grad = kiln::grad({(y * 2).sum()}, {x})[0];
    Tensor x_eager = x.detach().requires_grad_(true);
    Tensor y_eager = body(x_eager);
    expect_equal(y, y_eager);
    expect_equal(grad, kiln::grad({(y_eager * 2).sum()}, {x_eager})[0]);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, SymbolFromAStride, ::testing::Values("eager", "inductor"));

// The backward specialized for an absent gradient (Note [Absent tangents]) is made at backward
// time, after the trace: with symbolic sizes it asks whether s0 broadcasts against the 0-dim
// integer tensor, which raised "used outside a trace" (kiln-fuzz --seed 5550004 --index 376
// --dynamic --grad). A frozen copy of the trace's ShapeEnv answers (Note [A frozen ShapeEnv]).
TEST(AbsentGradient, TheSpecializedBackwardDecidesBroadcastsOfSymbolicSizes) {
  auto body = [](const Tensor& x, const Tensor& s) {
    const Tensor e = exp2(x);
    return std::make_tuple(addcmul(e, s, e, 0.5),
                           x.mean({}, false).reshape({1, 1}).expand({4, -1}));
  };
  for (bool specialize_zero_one : {true, false}) {
    CompileOptions options;
    options.dynamic = true;
    options.specialize_zero_one = specialize_zero_one;
    auto f = compile(body, options);
    for (int64_t n : {3, 5}) {
      SCOPED_TRACE(fmt::format("n = {}, specialize_zero_one = {}", n, specialize_zero_one));
      Tensor x = randn({2, n}).requires_grad_(true);
      const Tensor s = tensor({3}, kInt64).reshape({});
      auto [y, m] = f(x, s);
      const Tensor grad = kiln::grad({y.sum()}, {x})[0];  // m's gradient is absent
      Tensor x_eager = x.detach().requires_grad_(true);
      auto [y_eager, m_eager] = body(x_eager, s);
      expect_equal(grad, kiln::grad({y_eager.sum()}, {x_eager})[0]);
    }
  }
}

// var and std compute in float64, as eagerly: in float32 the squared deviations of values near
// 1e19 sum past the float32 range to inf where eager's std is finite (kiln-fuzz --seed 5560001
// --index 67 --dynamic --grad).
TEST(Variance, OfValuesNear1e19IsFiniteAsEagerly) {
  for (ScalarType dtype : {kFloat32, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = (randn({3, 6, 8}) * 9e18).to(dtype);
    auto f = compile([](const Tensor& t) {
      return std::make_tuple(t.std({0, 1, 2}, 0, true), t.var({1}, 1, false));
    });
    auto [s, v] = f(x);
    ASSERT_TRUE(std::isfinite(x.std({0, 1, 2}, 0, true).to(kFloat64).item<double>()));
    testing::expect_close(s, x.std({0, 1, 2}, 0, true), 1e-2);
    testing::expect_close(v, x.var({1}, 1, false), 1e-2);
  }
}

TEST(IntegerPow, ANegativeScalarExponentRaisesWhenCompiled) {
  auto f = compile([](const Tensor& t) { return t.pow(-2) + 1; });
  Tensor i = tensor({1, 2, 3}, kInt64);
  EXPECT_THROW(i.pow(-2), ValueError);  // eager
  const std::string message = error_message([&] { f(i); });
  EXPECT_NE(message.find("integers to negative integer powers are not allowed"), std::string::npos)
      << message;
  Tensor x = tensor({1.0, 2.0, 4.0});
  expect_equal(f(x), x.pow(-2) + 1);
}

TEST(PowerOfOneHalf, IsASquareRootCompiledAsEagerly) {
  auto f = compile([](const Tensor& t) { return std::make_tuple(t.pow(0.5), t.pow(-0.5) * 2); });
  Tensor x = tensor({-INFINITY, 4.0, 9.0, INFINITY, 0.25, 1.0, 16.0, 2.0, -1.0});
  const auto [half, inverse] = f(x);
  expect_equal(half, x.pow(0.5));
  expect_equal(inverse, x.pow(-0.5) * 2);
}

TEST(Overflow, ANormWhoseSquaresOverflowFloat32StaysFinite) {
  auto f = compile([](const Tensor& x) { return std::make_tuple(x.norm(), x.norm(3.0)); });
  Tensor x = tensor({1e30, 1e30, 3.0});
  auto [two, three] = f(x);
  expect_equal(two, x.norm());
  expect_equal(three, x.norm(3.0));
  EXPECT_TRUE(std::isfinite(two.item<double>()));
}

TEST(Overflow, SinhAndCoshStayFiniteWhereEagerIs) {
  auto f = compile([](const Tensor& t) { return std::make_tuple(t.sinh(), t.cosh()); });
  Tensor x = tensor({88.8f, -88.8f, 89.0f, -89.3f, 89.5f, 1.0f, -3.0f, 0.0f, 87.5f, NAN});
  const auto [s, c] = f(x);
  expect_equal(s, x.sinh());
  expect_equal(c, x.cosh());
}

INSTANTIATE_TEST_SUITE_P(Backends, IntegerDivisionByZero, ::testing::Values("eager", "inductor"));

// ---- symbolic sizes that may be 1 ----

TEST(SymbolicSizeOne, SqueezeOfAnExpressionThatIsOneDropsTheDim) {
  auto f = compile([](const Tensor& x) { return x.slice(0, 0, 5, 3).cumsum(-1).squeeze(); },
                   {.dynamic = true});
  for (int64_t n : {3, 7, 3, 2}) {
    Tensor x = randn({n});
    Tensor expected = x.slice(0, 0, 5, 3).cumsum(-1).squeeze();
    Tensor actual = f(x);
    EXPECT_EQ(actual.sizes().vec(), expected.sizes().vec()) << "n = " << n;
    expect_equal(actual, expected);
  }
}

TEST(SymbolicSizeOne, NarrowThenSqueezeDim) {
  auto f = compile([](const Tensor& x) { return x.narrow(0, 0, x.size(0) - 2).squeeze(0) * 2; },
                   {.dynamic = true});
  for (int64_t n : {5, 3, 6, 3}) {
    Tensor x = randn({n, 2});
    Tensor expected = x.narrow(0, 0, n - 2).squeeze(0) * 2;
    Tensor actual = f(x);
    EXPECT_EQ(actual.sizes().vec(), expected.sizes().vec()) << "n = " << n;
    expect_equal(actual, expected);
  }
}

// A view of a strided slice whose symbolic size, (n + 1) // 2, is 1: a size-1 dim may have any
// stride, as eager's view knows for the concrete sizes (kiln-fuzz --dynamic seed 31340 index 185
// raised "view: shape ... is not compatible").
TEST(SymbolicSizeOne, AViewOfAStridedSliceWhoseSizeIsOne) {
  auto body = [](const Tensor& x) { return x.slice(1, 0, std::nullopt, 2).view({1, -1}) + 1; };
  auto f = compile(body, {.dynamic = true});
  for (int64_t n : {2, 1, 5, 2}) {
    SCOPED_TRACE(n);
    Tensor x = randn({n, 1}).t();  // [1, n] with strides [1, 1]
    expect_equal(f(x), body(x));
  }
}

// A slice whose symbolic size is 0 at the hint (6 - s1) viewed as [0]: eager views any empty
// tensor as any shape of no elements; the trace must too (kiln-fuzz --dynamic seed 993002 index
// 280), and a later call where the slice is not empty must not reuse that decision.
TEST(SymbolicSizeZero, AViewOfAnEmptyNonContiguousSlice) {
  auto f =
      compile([](const Tensor& x) { return x.slice(2, -1, 5).view({-1}) + 1; }, {.dynamic = true});
  for (int64_t n : {6, 5, 9, 6, 4}) {  // slice sizes 0, 1, 0, 0, 1
    Tensor x = randn({1, 2, n});
    Tensor expected;
    std::string eager_error;
    try {
      expected = x.slice(2, -1, 5).view({-1}) + 1;
    } catch (const ShapeError& e) {
      eager_error = e.what();
    }
    if (!eager_error.empty()) {
      EXPECT_THROW(f(x), ShapeError) << "n = " << n;
      continue;
    }
    Tensor actual = f(x);
    EXPECT_EQ(actual.sizes().vec(), expected.sizes().vec()) << "n = " << n;
    expect_equal(actual, expected);
  }
}

TEST(SymbolicSizeOne, WithoutZeroOneSpecializationSizeOneSqueezesAndBroadcasts) {
  CompileOptions options{.dynamic = true, .specialize_zero_one = false};
  auto squeeze = compile([](const Tensor& x) { return x.squeeze(1) + 1; }, options);
  auto add = compile([](const Tensor& a, const Tensor& b) { return a + b; }, options);
  for (int64_t n : {1, 3, 1}) {
    Tensor x = randn({4, n});
    Tensor expected = x.squeeze(1) + 1;
    Tensor actual = squeeze(x);
    EXPECT_EQ(actual.sizes().vec(), expected.sizes().vec()) << "n = " << n;
    expect_equal(actual, expected);
  }
  Tensor a = randn({4, 1}), b = randn({4, 3});
  expect_equal(add(a, b), a + b);
  expect_equal(add(b, a), b + a);
}

// ---- gradients with symbolic sizes ----

// cat's backward slices a gradient whose size s0 + s3 + 1 a backward formula (mean's) read as
// the integer 6: the expand from [s0, s0 + s3 + 1, 1, s2] to [2, 6, 5, 4] is no broadcast, and
// the lowering once read that dim at index 0 (every input's gradient was channel 0's).
TEST(SymbolicGradients, CatThenMeanMatchEager) {
  auto body = [](const Tensor& b, const Tensor& a) {
    return std::make_tuple(cat({a, b}, 1).mean({2}), b * 1);
  };
  auto f = compile(body, {.dynamic = true});
  for (int64_t channels : {2, 6}) {
    manual_seed(3);
    Tensor a = randn({2, channels, 5, 4}, kFloat64).requires_grad_();
    Tensor b = randn({2, 3, 5, 4}, kFloat64).requires_grad_();
    Tensor ea = a.detach().requires_grad_(), eb = b.detach().requires_grad_();
    auto [out0, out1] = f(b, a);
    auto [e0, e1] = body(eb, ea);
    expect_equal(out0.detach(), e0.detach());
    Tensor w0 = randn(e0.sizes().vec(), kFloat64), w1 = randn(e1.sizes().vec(), kFloat64);
    ((out0 * w0).sum() + (out1 * w1).sum()).backward();
    ((e0 * w0).sum() + (e1 * w1).sum()).backward();
    expect_equal(a.grad(), ea.grad());
    expect_equal(b.grad(), eb.grad());
  }
}

// ---- overlapping inputs (Note [Input aliasing]) ----

TEST(InputAliasing, OverlappingViewsRunAsEagerDoes) {
  auto body = [](const Tensor& a, const Tensor& b) {
    a.copy_(b * 10);
    return a + b;
  };
  auto f = compile(body);
  {
    Tensor a = arange(3, kInt64), b = arange(3, kInt64) + 1;
    expect_equal(f(a, b), (b * 10) + b);
  }
  auto run = [&](auto&& fn) {
    Tensor base = arange(6, kInt64) - 3;
    Tensor out = fn(base.narrow(0, 0, 3), base.narrow(0, 2, 3));
    return std::make_pair(out, base);
  };
  auto [expected, expected_base] = run(body);
  auto [actual, actual_base] = run(f);
  expect_equal(actual, expected);
  expect_equal(actual_base, expected_base);
  Tensor x = arange(3, kInt64);
  Tensor x_eager = x.clone();
  expect_equal(f(x, x), body(x_eager, x_eager));  // the same tensor twice
  expect_equal(x, x_eager);
  ASSERT_GE(f.stats().recompile_reasons.size(), 1u);
  EXPECT_NE(f.stats().recompile_reasons[0].find("arg0 and arg1 now share memory"),
            std::string::npos)
      << f.stats().recompile_reasons[0];
  Tensor a = arange(3, kInt64), b = arange(3, kInt64) + 1;
  expect_equal(f(a, b), (b * 10) + b);
  EXPECT_EQ(f.stats().compiles, 2);  // one traced entry, one eager entry for overlapping inputs
}

// ---- graph-break branches and recursion ----

TEST(GraphBreakBranches, CountTowardTheRecompileLimit) {
  auto body = [](const Tensor& x) { return x * x.sum().item<double>(); };
  auto f = compile(body, {.recompile_limit = 4});
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 40; ++i) {
    Tensor x = full({3}, static_cast<double>(i));
    expect_equal(f(x), body(x));
  }
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(f.stats().fell_back_to_eager);
  EXPECT_LE(f.stats().compiles, 4);
  EXPECT_NE(warning.find("hit the recompile limit (4) with 3 graph-break branches"),
            std::string::npos)
      << warning;
}

TEST(GraphBreakBranches, ALargeValueIsKeyedByItsDigest) {
  Tensor big = arange(1000, kInt64);
  const std::string key = capture::value_key_of(big);
  EXPECT_LT(key.size(), 80u) << key;
  Tensor other = big.clone();
  other.narrow(0, 999, 1).fill_(5);
  EXPECT_NE(capture::value_key_of(other), key);
  EXPECT_EQ(capture::value_key_of(big.clone()), key);
}

TEST(Recursion, ACompiledFunctionCallingItselfRaises) {
  std::function<Tensor(const Tensor&)> recurse;
  auto f = compile([&](const Tensor& x) { return recurse(x) + 1; });
  recurse = [&](const Tensor& x) { return f(x); };
  const std::string message = error_message([&] { f(ones({2})); });
  EXPECT_NE(message.find("the compiled function called itself"), std::string::npos) << message;
  // The failed call released the function: a call that does not recurse works afterwards.
  auto g = compile([](const Tensor& x) { return x + 1; });
  expect_equal(g(ones({2})), full({2}, 2.0));
}

// ---- scalars on the left of an operator ----

TEST(WrappedNumbers, PromoteAsScalarsWhenCompiled) {
  auto sub = compile([](const Tensor& t) { return 2.5 - t; });
  auto div = compile([](const Tensor& t) { return 2.5 / t; });
  Tensor i = tensor({1, 2, 4}, kInt32);
  expect_equal(sub(i), 2.5 - i);  // float32, as eager and PyTorch
  expect_equal(div(i), 2.5 / i);
  EXPECT_EQ(sub(i).dtype(), kFloat32);
  // The scalar is rounded to the tensor's type first: 1e5 is inf in float16.
  auto big = compile([](const Tensor& t) { return 1e5 / t; });
  Tensor h = tensor({2.0, 4.0}).to(kFloat16);
  expect_equal(big(h), 1e5 / h);
}

// ---- calls and indexing the tracer once failed on ----

TEST(NestedCompile, ACompiledFunctionCalledWhileTracingIsInlined) {
  auto inner = compile([](const Tensor& x) { return x.relu() * 2; });
  auto outer = compile([&](const Tensor& x) { return inner(x + 1).sum({0}); });
  Tensor x = randn({3, 4});
  expect_equal(outer(x), ((x + 1).relu() * 2).sum({0}));
  expect_equal(outer(x), ((x + 1).relu() * 2).sum({0}));
  EXPECT_EQ(inner.stats().compiles, 0);
  EXPECT_EQ(outer.stats().compiles, 1);
  expect_equal(inner(x), x.relu() * 2);  // and on its own it compiles as usual
  EXPECT_EQ(inner.stats().compiles, 1);
}

TEST(AdvancedIndexing, SliceNoneAndEllipsisNextToATensorIndex) {
  using indexing::Ellipsis;
  using indexing::None;
  using indexing::Slice;
  Tensor x = randn({4, 5, 6}), i = tensor({0, 2}, kInt64);
  auto body = [](const Tensor& t, const Tensor& idx) {
    return std::make_tuple(t.index({Slice(), idx}) + 1, t.index({Ellipsis, idx}) * 2,
                           t.index({None, Slice(1, 3), idx}));
  };
  auto f = compile(body);
  const auto [a, b, c] = f(x, i);
  const auto [ea, eb, ec] = body(x, i);
  expect_equal(a, ea);
  expect_equal(b, eb);
  expect_equal(c, ec);
  auto put = [](const Tensor& t, const Tensor& idx, const Tensor& v) {
    Tensor y = t.clone();
    y.index_put_({Slice(), idx}, v);
    return y;
  };
  Tensor v = randn({4, 2, 6});
  expect_equal(compile(put)(x, i, v), put(x, i, v));
}

TEST(AdvancedIndexing, IndexPutOfAScalarThroughAMask) {
  auto body = [](const Tensor& t) {
    Tensor y = t.clone();
    y.index_put_({t > 0}, Scalar(0.0));
    return y;
  };
  Tensor x = randn({3, 4});
  expect_equal(compile(body)(x), body(x));
}

// ---- a saved input mutated later (item 7) ----

class SavedInputMutated : public ::testing::TestWithParam<std::string> {};

TEST_P(SavedInputMutated, BackwardRaisesTheVersionErrorAsEagerDoes) {
  auto body = [](const Tensor& w, const Tensor& x) {
    Tensor y = (w * x).sum();
    {
      NoGradGuard g;
      x.mul_(2);
    }
    return y;
  };
  auto f = compile(body, with_backend(GetParam()));
  for (int call = 0; call < 2; ++call) {  // the trace's call, then a cache hit
    Tensor w = randn({3}).requires_grad_(), x = randn({3});
    Tensor eager_w = w.detach().clone().requires_grad_(), eager_x = x.clone();
    const std::string eager_error = error_message([&] { body(eager_w, eager_x).backward(); });
    ASSERT_NE(eager_error.find("modified by an in-place operation"), std::string::npos)
        << eager_error;
    Tensor y = f(w, x);
    expect_equal(x, eager_x);  // the update itself happened, in both
    const std::string error = error_message([&] { y.backward(); });
    EXPECT_NE(error.find("modified by an in-place operation"), std::string::npos)
        << "call " << call << ": " << error;
  }
}

TEST_P(SavedInputMutated, AnInputMutatedButNotSavedStillDifferentiates) {
  auto body = [](const Tensor& w, const Tensor& x) {
    Tensor y = (w * w).sum() + x.sum();
    {
      NoGradGuard g;
      x.mul_(2);
    }
    return y;
  };
  auto f = compile(body, with_backend(GetParam()));
  for (int call = 0; call < 2; ++call) {
    Tensor w = randn({3}).requires_grad_(), x = randn({3});
    f(w, x).backward();
    expect_equal(w.grad(), w.detach() * 2);
  }
}

TEST_P(SavedInputMutated, AnInputMutatedBeforeItsUseDifferentiatesWithTheNewValue) {
  auto body = [](const Tensor& w, const Tensor& x) {
    {
      NoGradGuard g;
      x.mul_(2);
    }
    return (w * x.exp()).sum();
  };
  for (const std::string partitioner : {"min_cut", "default"}) {
    CompileOptions options = with_backend(GetParam());
    options.partitioner = partitioner;
    auto f = compile(body, options);
    for (int call = 0; call < 2; ++call) {
      Tensor w = randn({3}).requires_grad_(), x = randn({3});
      Tensor doubled = x * 2;
      f(w, x).backward();
      expect_equal(x, doubled);
      expect_equal(w.grad(), doubled.exp());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, SavedInputMutated, ::testing::Values("eager", "inductor"));

// ---- writes through self-overlapping views (Note [Writes through self-overlapping views]) ----

class OverlappingWrites : public ::testing::TestWithParam<std::string> {};

TEST_P(OverlappingWrites, AddOncePerViewElementAsEagerDoes) {
  auto unfold_add = [](const Tensor& base) {
    base.unfold(1, 3, 1).add_(100);
    return base * 1;
  };
  auto strided_add = [](const Tensor& base) {
    base.as_strided({3, 3}, {1, 1}).add_(1);
    return base + 0;
  };
  auto expanded_mul = [](const Tensor& x) {
    Tensor row = x.clone();
    row.expand({3, 4}).mul_(2);
    return row;
  };
  auto f1 = compile(unfold_add, with_backend(GetParam()));
  auto f2 = compile(strided_add, with_backend(GetParam()));
  auto f3 = compile(expanded_mul, with_backend(GetParam()));
  for (int call = 0; call < 2; ++call) {
    Tensor a = arange(10).to(kFloat32).reshape({2, 5}), a_eager = a.clone();
    expect_equal(f1(a), unfold_add(a_eager));
    expect_equal(a, a_eager);
    Tensor b = zeros({6}), b_eager = zeros({6});
    expect_equal(f2(b), strided_add(b_eager));
    expect_equal(b, b_eager);
    // An expanded target (stride 0) raises eagerly, as in PyTorch, and so compiled.
    Tensor x = ones({4});
    const std::string eager_error = error_message([&] { expanded_mul(x); });
    EXPECT_NE(eager_error.find("share memory"), std::string::npos) << eager_error;
    EXPECT_EQ(error_message([&] { f3(x); }), eager_error);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, OverlappingWrites, ::testing::Values("eager", "inductor"));

// ---- running statistics created inside the function ----

class RunningStatsInside : public ::testing::TestWithParam<std::string> {};

TEST_P(RunningStatsInside, BatchNormUpdatesThemAsEagerDoes) {
  auto body = [](const Tensor& x, const Tensor& rm_in) {
    Tensor rm = rm_in.clone();
    Tensor rv = ones({3});
    Tensor y = batch_norm(x, rm, rv, Tensor(), Tensor(), /*training=*/true, 0.1, 1e-5);
    return std::make_tuple(y, rm, rv * 1);
  };
  auto module_body = [](const Tensor& x) {
    nn::BatchNorm2d bn(3);
    Tensor y = bn(x);
    const auto buffers = bn.named_buffers();
    return std::make_tuple(y, buffers.at(0).second * 1, buffers.at(1).second * 1);
  };
  auto f = compile(body, with_backend(GetParam()));
  auto g = compile(module_body, with_backend(GetParam()));
  for (int call = 0; call < 2; ++call) {
    Tensor x = randn({4, 3}), rm = randn({3});
    auto [y, m, v] = f(x, rm);
    auto [ey, em, ev] = body(x, rm);
    expect_equal(y, ey);
    expect_equal(m, em);
    expect_equal(v, ev);
    Tensor x4 = randn({2, 3, 2, 2});
    auto [gy, gm, gv] = g(x4);
    auto [hy, hm, hv] = module_body(x4);
    expect_equal(gy, hy);
    expect_equal(gm, hm);
    expect_equal(gv, hv);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, RunningStatsInside, ::testing::Values("eager", "inductor"));

}  // namespace
}  // namespace kiln
