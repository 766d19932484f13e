// Higher-order ops under kiln::compile (Note [Higher-order ops under a trace] in
// src/capture/tracer.cpp): a cond with a data-dependent predicate and a while_loop with a
// data-dependent trip count compile into one graph, with no graph break and no recompile when
// the data changes, and return what the same code returns eagerly.
#include <gtest/gtest.h>

#include "kiln/compile.h"
#include "kiln/control_flow.h"
#include "kiln/kiln.h"
#include "tests/capture/compare.h"

namespace kiln {
namespace {

using testing::error_message;
using testing::expect_equal;
using testing::fullgraph_on;

// x -> cond(x.sum() > 0, sin(x) * w, x * 2 - w): w is closed over.
Tensor branchy(const Tensor& x, const Tensor& w) {
  return cond(
      x.sum() > 0,
      [&](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0].sin() * w}; },
      [&](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * 2 - w}; }, {x})[0];
}

class CompiledControlFlow : public ::testing::TestWithParam<std::string> {};

TEST_P(CompiledControlFlow, CondIsOneGraphWhateverThePredicate) {
  auto f = compile(branchy, fullgraph_on(GetParam()));
  const Tensor w = tensor({0.5f, -1.0f, 2.0f});
  for (const Tensor& x : {tensor({1.0f, 2.0f, 3.0f}), tensor({-1.0f, -2.0f, 0.5f}),
                          tensor({3.0f, -1.0f, -1.0f}), tensor({0.0f, 0.0f, 0.0f})})
    expect_equal(f(x, w), branchy(x, w));
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_EQ(f.stats().graph_breaks, 0);
  EXPECT_EQ(f.stats().graphs, 1);
  const std::string text = f.describe();
  EXPECT_NE(text.find("cond("), std::string::npos) << text;
  EXPECT_NE(text.find("true_fn {"), std::string::npos) << text;
  EXPECT_NE(text.find("placeholder(\"closure0\")"), std::string::npos) << text;
}

// Counts i up to n (a tensor: the trip count is data), doubling x each step.
std::vector<Tensor> doubling(const Tensor& n, const Tensor& x) {
  return while_loop([&](const std::vector<Tensor>& c) { return c[0] < n; },
                    [](const std::vector<Tensor>& c) {
                      return std::vector<Tensor>{c[0] + 1, c[1] * 2};
                    },
                    {zeros({}, kInt64), x});
}

TEST_P(CompiledControlFlow, WhileLoopIsOneGraphWhateverTheTripCount) {
  auto fn = [](const Tensor& n, const Tensor& x) {
    std::vector<Tensor> out = doubling(n, x);
    return std::make_tuple(out[0], out[1] + 1);
  };
  auto f = compile(fn, fullgraph_on(GetParam()));
  const Tensor x = tensor({1.0f, -3.0f});
  for (int64_t n : {0, 1, 5, 3}) {
    const Tensor trips = scalar_tensor(n, kInt64);
    auto [count, y] = f(trips, x);
    auto [count_eager, y_eager] = fn(trips, x);
    expect_equal(count, count_eager);
    expect_equal(y, y_eager);
  }
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_EQ(f.stats().graph_breaks, 0);
}

TEST_P(CompiledControlFlow, ACondInsideALoopBody) {
  // x is doubled while positive, else negated, n times: the branch changes between iterations.
  auto fn = [](const Tensor& n, const Tensor& x) {
    return while_loop(
        [&](const std::vector<Tensor>& c) { return c[0] < n; },
        [](const std::vector<Tensor>& c) {
          Tensor next = cond(
              c[1].sum() > 0,
              [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * 2}; },
              [](const std::vector<Tensor>& v) { return std::vector<Tensor>{-v[0]}; }, {c[1]})[0];
          return std::vector<Tensor>{c[0] + 1, next};
        },
        {zeros({}, kInt64), x})[1];
  };
  auto f = compile(fn, fullgraph_on(GetParam()));
  for (int64_t n : {0, 1, 4, 7}) {
    const Tensor trips = scalar_tensor(n, kInt64), x = tensor({-1.0f, 0.25f});
    expect_equal(f(trips, x), fn(trips, x));
  }
  EXPECT_EQ(f.stats().compiles, 1);
}

TEST_P(CompiledControlFlow, BodiesReadModuleParametersAndSymbolicSizes) {
  nn::Linear fc(4, 4);
  auto fn = [](nn::Module& m, const Tensor& x) {
    return cond(
        x.mean() > 0, [&](const std::vector<Tensor>& v) { return std::vector<Tensor>{m(v[0])}; },
        [&](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0].relu() * 3}; }, {x})[0];
  };
  auto f = compile(fn, fullgraph_on(GetParam(), /*dynamic=*/true));
  for (int64_t rows : {2, 5, 3}) {
    const Tensor x = randn({rows, 4});
    expect_equal(f(fc, x), fn(fc, x));
    expect_equal(f(fc, -x.abs()), fn(fc, -x.abs()));
  }
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_EQ(f.stats().graph_breaks, 0);
}

TEST_P(CompiledControlFlow, TwoCondsWithTheSameOperandsAndDifferentBodiesStayTwo) {
  auto fn = [](const Tensor& x) {
    BodyFn s = [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0].sin()}; };
    BodyFn c = [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0].cos()}; };
    const Tensor p = x.sum() > 0;
    return cond(p, s, c, {x})[0] * 10 + cond(p, c, s, {x})[0];
  };
  auto f = compile(fn, fullgraph_on(GetParam()));
  for (const Tensor& x : {tensor({1.0f, 2.0f}), tensor({-1.0f, -2.0f})}) expect_equal(f(x), fn(x));
}

TEST_P(CompiledControlFlow, SizesZeroAndOne) {
  auto fn = [](const Tensor& x) {
    return cond(
        x.numel() > 0 ? x.sum() >= 0 : scalar_tensor(true, kBool),
        [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] + 1}; },
        [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] - 1}; }, {x})[0];
  };
  auto f = compile(fn, fullgraph_on(GetParam()));
  for (const Tensor& x : {zeros({0}), tensor({-2.0f}), zeros({1, 0})}) expect_equal(f(x), fn(x));
}

TEST_P(CompiledControlFlow, GradientsEqualEager) {
  auto fn = [](const Tensor& x, const Tensor& w) { return branchy(x, w).sum(); };
  auto f = compile(fn, fullgraph_on(GetParam()));
  const Tensor w = tensor({0.5, -1.0, 2.0}, kFloat64).requires_grad_();
  for (const Tensor& data :
       {tensor({1.0, 2.0, 3.0}, kFloat64), tensor({-1.0, -2.0, 0.5}, kFloat64)}) {
    const Tensor x = data.clone().requires_grad_();
    std::vector<Tensor> g = grad({f(x, w)}, {x, w});
    std::vector<Tensor> expected = grad({fn(x, w)}, {x, w});
    expect_equal(g[0], expected[0]);
    expect_equal(g[1], expected[1]);
  }
  // Through a loop: d/dx of x * 2^n.
  auto loop = [](const Tensor& n, const Tensor& x) { return doubling(n, x)[1].sum(); };
  auto g = compile(loop, fullgraph_on(GetParam()));
  const Tensor x = tensor({1.0, -3.0}, kFloat64).requires_grad_();
  for (int64_t n : {0, 3}) {
    const Tensor trips = scalar_tensor(n, kInt64);
    expect_equal(grad({g(trips, x)}, {x})[0], grad({loop(trips, x)}, {x})[0]);
  }
}

TEST_P(CompiledControlFlow, BodiesThatBreakTheContractRaise) {
  const Tensor x = tensor({1.0f, 2.0f}), w = tensor({3.0f, 4.0f});
  auto ok = [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] + 1}; };
  auto mutate_operand = compile(
      [&](const Tensor& a) {
        return cond(a.sum() > 0,
                    [](const std::vector<Tensor>& v) {
                      v[0].add_(1);
                      return std::vector<Tensor>{v[0] * 1};
                    },
                    ok, {a})[0];
      },
      fullgraph_on(GetParam()));
  std::string msg = error_message([&] { mutate_operand(x); });
  EXPECT_NE(msg.find("cond: true_fn mutated its operand 0"), std::string::npos) << msg;
  auto mutate_closure = compile(
      [&](const Tensor& a, const Tensor& b) {
        return cond(a.sum() > 0, ok,
                    [&](const std::vector<Tensor>& v) {
                      b.mul_(2);
                      return std::vector<Tensor>{v[0] * 1};
                    },
                    {a})[0];
      },
      fullgraph_on(GetParam()));
  msg = error_message([&] { mutate_closure(x, w); });
  EXPECT_NE(msg.find("cond: false_fn mutated its closed-over tensor 0"), std::string::npos) << msg;
  auto alias = compile(
      [&](const Tensor& a) {
        return cond(
            a.sum() > 0, ok,
            [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0].view({2})}; },
            {a})[0];
      },
      fullgraph_on(GetParam()));
  msg = error_message([&] { alias(x); });
  EXPECT_NE(msg.find("cond: false_fn returned output 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("aliases its operand 0"), std::string::npos) << msg;
  auto shapes = compile(
      [&](const Tensor& a) {
        return cond(
            a.sum() > 0, ok,
            [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0].unsqueeze(0) * 2}; },
            {a})[0];
      },
      fullgraph_on(GetParam()));
  msg = error_message([&] { shapes(x); });
  EXPECT_NE(msg.find("cond: true_fn returned output 0 as float32 [2] but false_fn as float32 "
                     "[1, 2]; both branches return the same dtypes and numbers of dims"),
            std::string::npos)
      << msg;
  auto reads = compile(
      [&](const Tensor& a) {
        return cond(a.sum() > 0,
                    [](const std::vector<Tensor>& v) {
                      return std::vector<Tensor>{v[0] * v[0].sum().item<float>()};
                    },
                    ok, {a})[0];
      },
      fullgraph_on(GetParam()));
  msg = error_message([&] { reads(x); });
  EXPECT_NE(msg.find("item() reads the value of a tensor"), std::string::npos) << msg;
  EXPECT_NE(msg.find("inside true_fn of cond"), std::string::npos) << msg;
  auto carry = compile(
      [&](const Tensor& n, const Tensor& a) {
        return while_loop([&](const std::vector<Tensor>& c) { return c[0] < n; },
                          [](const std::vector<Tensor>& c) {
                            return std::vector<Tensor>{c[0] + 1, c[1].to(kFloat64)};
                          },
                          {zeros({}, kInt64), a})[1];
      },
      fullgraph_on(GetParam()));
  msg = error_message([&] { carry(scalar_tensor(int64_t{2}, kInt64), x); });
  EXPECT_NE(msg.find("body_fn returned carry 1 as float64 [2] but received it as float32 [2]"),
            std::string::npos)
      << msg;
}

// Note [A SymBool predicate]: a predicate on symbolic sizes is computed when the graph runs.
TEST_P(CompiledControlFlow, ASymBoolPredicateIsDecidedWhenTheGraphRuns) {
  auto fn = [](const Tensor& x) {
    return cond(
        sym_or(x.size(0) > 3, x.size(1) == 3),
        [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0].sum({0})}; },
        [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0].amax({0}) * 2}; },
        {x})[0];
  };
  auto f = compile(fn, fullgraph_on(GetParam(), /*dynamic=*/true));
  for (int64_t rows : {5, 3, 4, 6, 7}) {
    SCOPED_TRACE(rows);
    const Tensor x = (arange(static_cast<double>(rows * 2), kFloat32) - 3).reshape({rows, 2});
    expect_equal(f(x), fn(x));
  }
  const Tensor wide = (arange(6.0, kFloat32) - 3).reshape({2, 3});
  expect_equal(f(wide), fn(wide));
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_NE(f.describe().find("sym_scalar_tensor(s"), std::string::npos) << f.describe();
}

// Note [Branches of different sizes]: the output's length is u0, bound by the branch that runs.
TEST_P(CompiledControlFlow, BranchesMayReturnDifferentSizes) {
  bool unbacked = false;
  auto fn = [&](const Tensor& x) {
    const Tensor picked = cond(
        x.sum() > 0,
        [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0].narrow(0, 0, 2) * 2}; },
        [](const std::vector<Tensor>& v) {
          return std::vector<Tensor>{cat({v[0], v[0] + 1})};
        },
        {x})[0];
    unbacked |= picked.size(0).is_symbolic();  // while traced
    return std::make_tuple(picked + 1, picked.sum(), picked.unsqueeze(1) * x.view({1, 3}));
  };
  auto f = compile(fn, fullgraph_on(GetParam()));
  for (const Tensor& x :
       {tensor({1.0f, 2.0f, 3.0f}), tensor({-1.0f, -2.0f, 0.5f}), tensor({3.0f, -1.0f, 0.0f})}) {
    auto got = f(x);
    auto want = fn(x);
    expect_equal(std::get<0>(got), std::get<0>(want));
    expect_equal(std::get<1>(got), std::get<1>(want));
    expect_equal(std::get<2>(got), std::get<2>(want));
  }
  EXPECT_TRUE(unbacked);
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_EQ(f.stats().graph_breaks, 0);
  EXPECT_NE(f.describe().find("f32[u0] = cond("), std::string::npos) << f.describe();
}

TEST_P(CompiledControlFlow, AnUnusedCondStillRaisesForADivisionByZeroInItsBody) {
  // Note [Checks in dead code]: eagerly the branch runs, so its integer division raises.
  auto fn = [](const Tensor& a, const Tensor& b) {
    cond(
        a.sum() > 0,
        [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0].div(v[1], "floor")}; },
        [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * 1}; }, {a, b});
    return a + 1;
  };
  auto f = compile(fn, fullgraph_on(GetParam()));
  const Tensor a = tensor({1, 2}, kInt64);
  expect_equal(f(a, tensor({1, 1}, kInt64)), a + 1);
  EXPECT_THROW(fn(a, tensor({1, 0}, kInt64)), Error);
  EXPECT_THROW(f(a, tensor({1, 0}, kInt64)), Error);
}

TEST_P(CompiledControlFlow, ARandomOpInABodyRaises) {
  auto f = compile(
      [](const Tensor& x) {
        return cond(
            x.sum() > 0,
            [](const std::vector<Tensor>& v) {
              return std::vector<Tensor>{dropout(v[0], 0.5, true)};
            },
            [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * 1}; }, {x})[0];
      },
      fullgraph_on(GetParam()));
  const std::string msg = error_message([&] { f(ones({4})); });
  EXPECT_NE(msg.find("inside true_fn of cond"), std::string::npos) << msg;
}

TEST_P(CompiledControlFlow, APredicateAndCarriesFromOutsideAreReadWhenTheGraphRuns) {
  // Tensors the function closes over (not arguments): their values at each call decide.
  const Tensor flag = scalar_tensor(true, kBool);
  const Tensor start = scalar_tensor(int64_t{0}, kInt64);
  auto fn = [&](const Tensor& x) {
    Tensor y = cond(
        flag, [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] + 1}; },
        [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] - 1}; }, {x})[0];
    return while_loop([](const std::vector<Tensor>& c) { return c[0] < 3; },
                      [](const std::vector<Tensor>& c) {
                        return std::vector<Tensor>{c[0] + 1, c[1] * 2};
                      },
                      {start, y})[1];
  };
  auto f = compile(fn, fullgraph_on(GetParam()));
  const Tensor x = tensor({1.0f, 2.0f});
  expect_equal(f(x), fn(x));
  flag.fill_(false);
  start.fill_(2);
  expect_equal(f(x), fn(x));
  expect_equal(f(x), (x - 1) * 2);
}

INSTANTIATE_TEST_SUITE_P(Backends, CompiledControlFlow, ::testing::Values("eager", "inductor"));

}  // namespace
}  // namespace kiln
