// Hostile inputs to compiled cond and while_loop (Note [Higher-order ops in a program] in
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

}  // namespace
}  // namespace kiln
