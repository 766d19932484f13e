// Hostile inputs to compiled cond, while_loop and scan (Note [Higher-order ops in a program] in
// src/runtime/program.h): bodies that return a view-like copy of what they receive, empty and
// one-element operands, integer and bool outputs, non-contiguous results, symbolic sizes through a
// loop, and a division by zero on a later iteration only. Each compiled call must return what the
// same code returns eagerly, or raise where eager raises.
#include <gtest/gtest.h>

#include "kiln/compile.h"
#include "kiln/control_flow.h"
#include "kiln/kiln.h"
#include "tests/capture/compare.h"

namespace kiln {
namespace {

using testing::expect_equal;

CompileOptions inductor(bool dynamic = false) {
  CompileOptions o = testing::inductor();
  o.dynamic = dynamic;
  return o;
}

using Bodies = std::vector<Tensor>;

TEST(HigherOrderHostile, BranchesReturningSameLayoutCopiesDoNotAliasTheOperand) {
  // contiguous() and to(same dtype) return the tensor itself eagerly; the cond's output must not
  // let a later in-place update reach the operand in one version and not the other.
  auto fn = [](const Tensor& x) {
    Tensor y = cond(
        x.sum() > 0, [](const Bodies& v) { return Bodies{v[0].contiguous() * 1}; },
        [](const Bodies& v) { return Bodies{v[0].to(kFloat32) + 0}; }, {x})[0];
    y.add_(1);
    return std::make_tuple(y, x * 1);
  };
  auto f = compile(fn, inductor());
  for (const Tensor& data : {tensor({1.0f, 2.0f}), tensor({-1.0f, -2.0f})}) {
    Tensor a = data.clone(), b = data.clone();
    auto [y, x] = f(a);
    auto [ye, xe] = fn(b);
    expect_equal(y, ye);
    expect_equal(x, xe);
    expect_equal(a, b);
  }
}

TEST(HigherOrderHostile, EmptyAndOneElementOperands) {
  auto fn = [](const Tensor& p, const Tensor& x) {
    return cond(
        p,
        [](const Bodies& v) {
          return Bodies{v[0].exp(), v[0].sum({0})};
        },
        [](const Bodies& v) {
          return Bodies{v[0] * -1, v[0].amax({0})};
        },
        {x});
  };
  auto f = compile(fn, inductor(/*dynamic=*/true));
  for (int64_t rows : {3, 1, 4}) {
    const Tensor x = randn({rows, 2});
    for (bool p : {true, false}) {
      const Tensor pred = scalar_tensor(p, kBool);
      std::vector<Tensor> got = f(pred, x), want = fn(pred, x);
      expect_equal(got[0], want[0]);
      expect_equal(got[1], want[1]);
    }
  }
  // An empty operand: sum over it is zeros, amax raises eagerly and compiled.
  auto g = compile(
      [](const Tensor& p, const Tensor& x) {
        return cond(
            p, [](const Bodies& v) { return Bodies{v[0].sum({0}) + 1}; },
            [](const Bodies& v) { return Bodies{v[0].sum({0}) - 1}; }, {x})[0];
      },
      inductor());
  const Tensor empty_rows = zeros({0, 3});
  expect_equal(g(scalar_tensor(true, kBool), empty_rows), ones({3}));
  expect_equal(g(scalar_tensor(false, kBool), empty_rows), -ones({3}));
}

TEST(HigherOrderHostile, IntegerAndBoolOutputsAndANonContiguousResult) {
  auto fn = [](const Tensor& x, const Tensor& k) {
    return cond(
        k.sum() > 2,
        [](const Bodies& v) {
          return Bodies{(v[0] * 2).t(), v[1] * 3, v[1] > 1};
        },
        [](const Bodies& v) {
          return Bodies{(v[0] + 1).t(), v[1] - 7, v[1] == 0};
        },
        {x, k});
  };
  auto f = compile(fn, inductor());
  const Tensor x = arange(6, kFloat32).reshape({2, 3});
  for (const Tensor& k : {tensor({1, 2, 3}, kInt64), tensor({0, 1, 0}, kInt64)}) {
    std::vector<Tensor> got = f(x, k), want = fn(x, k);
    ASSERT_EQ(got.size(), 3u);
    for (size_t i = 0; i < 3; ++i) expect_equal(got[i], want[i]);
  }
}

TEST(HigherOrderHostile, ALoopOverSymbolicSizes) {
  auto fn = [](const Tensor& n, const Tensor& x) {
    return while_loop([&](const Bodies& c) { return c[0] < n; },
                      [](const Bodies& c) {
                        return Bodies{c[0] + 1, (c[1] - c[1].mean({0}, true)) * 1.5 + c[1].sum()};
                      },
                      {zeros({}, kInt64), x})[1];
  };
  auto f = compile(fn, inductor(/*dynamic=*/true));
  for (int64_t rows : {2, 7, 3})
    for (int64_t n : {0, 2, 5}) {
      const Tensor x = randn({rows, 3}), trips = scalar_tensor(n, kInt64);
      expect_equal(f(trips, x), fn(trips, x));
    }
  EXPECT_EQ(f.stats().compiles, 1);
}

TEST(HigherOrderHostile, ADivisionByZeroOnALaterIterationRaises) {
  // The divisor reaches zero on the third iteration only.
  auto fn = [](const Tensor& x) {
    return while_loop([](const Bodies& c) { return c[0] < 5; },
                      [](const Bodies& c) {
                        return Bodies{c[0] + 1, c[1].div(3 - c[0], "floor")};
                      },
                      {zeros({}, kInt64), x})[1];
  };
  auto f = compile(fn, inductor());
  const Tensor x = tensor({100, -7}, kInt64);
  EXPECT_THROW(fn(x), Error);
  EXPECT_THROW(f(x), Error);
  // The loop with a safe divisor still runs afterwards.
  auto g = compile(
      [](const Tensor& y) {
        return while_loop([](const Bodies& c) { return c[0] < 5; },
                          [](const Bodies& c) {
                            return Bodies{c[0] + 1, c[1].div(c[0] + 1, "floor")};
                          },
                          {zeros({}, kInt64), y})[1];
      },
      inductor());
  expect_equal(g(x), tensor({0, -1}, kInt64));
}

TEST(HigherOrderHostile, AValueReadWithItemSizesABranch) {
  CompileOptions o = inductor();
  o.capture_scalar_outputs = true;
  auto fn = [](const Tensor& x, const Tensor& n) {
    SymInt k = n.item<SymInt>();
    check_is_size(k);
    check(k <= 4);
    const Tensor head = x.narrow(0, 0, k);
    return cond(
        head.sum() > 0, [](const Bodies& v) { return Bodies{v[0].cumsum(0)}; },
        [](const Bodies& v) { return Bodies{v[0].flip({0})}; }, {x})[0];
  };
  auto f = compile(fn, o);
  const Tensor x = tensor({1.0f, -5.0f, 2.0f, 3.0f});
  for (int64_t k : {1, 2, 4, 0}) {
    const Tensor n = scalar_tensor(k, kInt64);
    expect_equal(f(x, n), fn(x, n));
  }
}

TEST(HigherOrderHostile, ABranchWhoseGradientIsTheIncomingOnePassedThrough) {
  // d(x + 1)/dx passes the incoming gradient through: the backward branch must still return a
  // tensor of its own (a body may not return its input).
  auto fn = [](const Tensor& x) {
    return (cond(
                x.sum() > 0, [](const Bodies& v) { return Bodies{v[0] + 1}; },
                [](const Bodies& v) { return Bodies{v[0] * v[0]}; }, {x})[0] *
            3)
        .sum();
  };
  auto f = compile(fn, inductor());
  for (const Tensor& data : {tensor({1.0, 2.0}, kFloat64), tensor({-1.0, -2.0}, kFloat64)}) {
    const Tensor x = data.clone().requires_grad_(), xe = data.clone().requires_grad_();
    expect_equal(grad({f(x)}, {x})[0], grad({fn(xe)}, {xe})[0]);
  }
}

// ---- scan (Note [A scan's backward] in src/aot/higher_order_autograd.cpp) ----

TEST(HigherOrderHostile, ScanOverNonContiguousExpandedAndOverlappingXs) {
  // A transposed xs (strided rows), a broadcast one (stride 0 between rows) and an overlapping
  // view (as_strided rows sharing elements): each row the body reads must be that row.
  auto fn = [](const Tensor& a, const Tensor& b, const Tensor& c) {
    ScanResult r = scan(
        [](const Bodies& carry, const Bodies& x) {
          Tensor next = carry[0] * 0.5 + x[0] - x[1] * x[2];
          return std::pair{Bodies{next}, Bodies{next.cumsum(0), x[2].sum()}};
        },
        {zeros({3})}, {a.t(), b.expand({4, 3}), c.as_strided({4, 3}, {1, 1})});
    return std::make_tuple(r.carry[0], r.ys[0], r.ys[1]);
  };
  auto f = compile(fn, inductor());
  const Tensor a = arange(12, kFloat32).reshape({3, 4}) / 5, b = tensor({1.0f, -2.0f, 0.5f});
  const Tensor c = arange(8, kFloat32) - 3;
  auto got = f(a, b, c);
  auto want = fn(a, b, c);
  expect_equal(std::get<0>(got), std::get<0>(want));
  expect_equal(std::get<1>(got), std::get<1>(want));
  expect_equal(std::get<2>(got), std::get<2>(want));
}

TEST(HigherOrderHostile, WritingAScanOutputLeavesTheInputsAlone) {
  auto fn = [](const Tensor& h, const Tensor& xs) {
    ScanResult r = scan(
        [](const Bodies& carry, const Bodies& x) {
          Tensor next = carry[0] + x[0];
          return std::pair{Bodies{next}, Bodies{next * 1}};
        },
        {h}, {xs});
    r.ys[0].add_(100);
    r.carry[0].mul_(-1);
    return std::make_tuple(r.carry[0], r.ys[0], h * 1, xs * 1);
  };
  auto f = compile(fn, inductor());
  const Tensor h = tensor({1.0f, 2.0f}), xs = arange(6, kFloat32).reshape({3, 2});
  auto got = f(h, xs);
  auto want = fn(h, xs);
  expect_equal(std::get<0>(got), std::get<0>(want));
  expect_equal(std::get<1>(got), std::get<1>(want));
  expect_equal(std::get<2>(got), tensor({1.0f, 2.0f}));
  expect_equal(std::get<3>(got), arange(6, kFloat32).reshape({3, 2}));
}

TEST(HigherOrderHostile, ADivisionByZeroOnALaterScanStepRaises) {
  auto fn = [](const Tensor& xs) {
    return scan(
               [](const Bodies& carry, const Bodies& x) {
                 Tensor next = carry[0].div(x[0], "floor");
                 return std::pair{Bodies{next}, Bodies{}};
               },
               {full({2}, 1000, kInt64)}, {xs})
        .carry[0];
  };
  auto f = compile(fn, inductor());
  const Tensor bad = tensor({2, 3, 1, 2, 0, 5}, kInt64).reshape({3, 2});
  EXPECT_THROW(fn(bad), Error);
  EXPECT_THROW(f(bad), Error);
  const Tensor good = tensor({2, 3, 1, 2, 4, 5}, kInt64).reshape({3, 2});
  expect_equal(f(good), fn(good));
}

TEST(HigherOrderHostile, AClosedOverTensorChangedBetweenCallsIsReadAgain) {
  Tensor w = tensor({1.0f, 2.0f});
  auto fn = [&](const Tensor& xs) {
    return map([&](const Bodies& x, const Bodies&) { return Bodies{x[0] * w}; }, {xs})[0];
  };
  auto f = compile(fn, inductor());
  const Tensor xs = arange(6, kFloat32).reshape({3, 2});
  expect_equal(f(xs), fn(xs));
  w.mul_(-3);  // state that changes between calls
  expect_equal(f(xs), fn(xs));
  // (Reassigning `w` to another tensor is invisible to a trace: README, Soundness.)
}

TEST(HigherOrderHostile, ScanInsideACondAndCondInsideAScanWithGradients) {
  // Nested both ways, module parameters closed over: gradients of the parameters and of the
  // inputs equal the unrolled eager program's, whichever branch each step takes.
  auto cell = std::make_shared<nn::Linear>(3, 3);
  auto fn = [&](const Tensor& h0, const Tensor& xs) {
    const Bodies out = cond(
        xs.sum() > 0,
        [&](const Bodies& v) {
          ScanResult r = scan(
              [&](const Bodies& c, const Bodies& x) {
                Tensor next = cond(
                    x[0].sum() > 0,
                    [&](const Bodies& u) { return Bodies{cell->forward(u[0] + u[1]).tanh()}; },
                    [&](const Bodies& u) { return Bodies{u[0] * u[1].sigmoid()}; },
                    {c[0], x[0]})[0];
                return std::pair{Bodies{next}, Bodies{next.sum()}};
              },
              {v[0]}, {v[1]});
          return Bodies{r.carry[0] + r.ys[0].sum()};
        },
        [&](const Bodies& v) { return Bodies{v[0] * v[1].sum()}; }, {h0, xs});
    return (out[0] * out[0]).sum();
  };
  auto f = compile(fn, inductor());
  for (double sign : {1.0, -1.0}) {
    SCOPED_TRACE(sign);
    const Tensor h0 = tensor({0.1f, -0.2f, 0.3f}).requires_grad_();
    const Tensor xs = ((arange(12, kFloat32).reshape({4, 3}) - 4) * static_cast<float>(sign) / 6)
                          .requires_grad_();
    const Tensor y = f(h0, xs), ye = fn(h0, xs);
    expect_equal(y, ye);
    std::vector<Tensor> inputs{h0, xs, cell->weight, cell->bias};
    const std::vector<Tensor> got = grad({y}, inputs, {}, false, false, true);
    const std::vector<Tensor> want = grad({ye}, inputs, {}, false, false, true);
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(i);
      expect_equal(got[i], want[i].defined() ? want[i] : zeros_like(inputs[i]));
    }
  }
}

}  // namespace
}  // namespace kiln
