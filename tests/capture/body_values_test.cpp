// item<SymInt>() inside the body of a higher-order op (Note [Values read inside a body] in
// src/capture/tracer.cpp): the value is a symbol of the body's subgraph, bound each time the
// body runs, so a loop body can read a different value on every iteration.
#include <gtest/gtest.h>

#include "kiln/compile.h"
#include "kiln/control_flow.h"
#include "kiln/kiln.h"
#include "tests/capture/compare.h"

namespace kiln {
namespace {

using testing::error_of_kind;
using testing::expect_equal;
using Values = std::vector<Tensor>;

CompileOptions scalar_outputs(const std::string& backend) {
  CompileOptions o;
  o.backend = backend;
  o.fullgraph = true;
  o.capture_scalar_outputs = true;
  return o;
}

class CompiledBodyValues : public ::testing::TestWithParam<std::string> {};

// The true branch scales by a value it reads; the false branch does not read it.
Tensor scale_by_count_if(const Tensor& p, const Tensor& x, const Tensor& count) {
  return cond(
      p,
      [](const Values& v) {
        const SymInt n = v[1].item<SymInt>();
        return Values{v[0] * n + 1};
      },
      [](const Values& v) { return Values{v[0] - 1}; }, {x, count})[0];
}

TEST_P(CompiledBodyValues, ACondBranchReadsAValue) {
  auto f = compile(scale_by_count_if, scalar_outputs(GetParam()));
  const Tensor x = arange(6, kFloat32).reshape({2, 3});
  for (int64_t n : {3, 0, -2})
    for (bool p : {true, false}) {
      const Tensor pred = scalar_tensor(p, kBool), count = tensor({n});
      expect_equal(f(pred, x, count), scale_by_count_if(pred, x, count));
    }
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_EQ(f.stats().graph_breaks, 0);
}

// Each iteration reads its counter and sums that many leading elements: a value that changes
// from iteration to iteration, used as a size.
Values prefix_sums(const Tensor& x) {
  return while_loop([](const Values& c) { return c[0] < 4; },
                    [&x](const Values& c) {
                      const SymInt n = c[0].item<SymInt>();
                      check_is_size(n);
                      check(n <= 5);
                      return Values{c[0] + 1, c[1] + x.narrow(0, 0, n).sum()};
                    },
                    {scalar_tensor(int64_t{0}, kInt64), zeros({})});
}

TEST_P(CompiledBodyValues, ALoopBodyReadsADifferentValueOnEveryIteration) {
  auto f = compile(prefix_sums, scalar_outputs(GetParam()));
  const Tensor x = arange(5, kFloat32) + 1;
  const Values got = f(x), want = prefix_sums(x);
  expect_equal(got[0], want[0]);
  expect_equal(got[1], want[1]);  // 0 + 1 + 3 + 6
  EXPECT_EQ(want[1].item<double>(), 10.0);
  EXPECT_EQ(f.stats().graph_breaks, 0);
}

TEST_P(CompiledBodyValues, AFactInALoopBodyIsCheckedOnTheIterationThatBreaksIt) {
  constexpr int kCheckLine = __LINE__ + 5;
  auto loop = [](const Tensor& x) {
    return while_loop([](const Values& c) { return c[0] < 4; },
                      [&x](const Values& c) {
                        const SymInt n = c[0].item<SymInt>();
                        check(n <= 2);
                        return Values{c[0] + 1, c[1] + x * n};
                      },
                      {scalar_tensor(int64_t{0}, kInt64), zeros({3})});
  };
  auto f = compile(loop, scalar_outputs(GetParam()));
  const Tensor x = ones({3});
  const std::string msg = error_of_kind<ValueError>([&] { f(x); });
  EXPECT_NE(msg.find("kiln::check failed"), std::string::npos) << msg;
  EXPECT_NE(msg.find(fmt::format("body_values_test.cpp:{}", kCheckLine)), std::string::npos) << msg;
  EXPECT_NE(msg.find("= 3"), std::string::npos) << msg;  // the fourth iteration's value
  EXPECT_THROW(loop(x), ValueError);
}

// A scan step reads its own element of xs: a value per step, as an operand and as a size.
Values weighted_prefix(const Tensor& counts, const Tensor& w) {
  const ScanResult r = scan(
      [&w](const Values& carry, const Values& x) {
        const SymInt n = x[0].item<SymInt>();
        check_is_size(n);
        check(n <= 4);
        const Tensor next = carry[0] * 2 + w.narrow(0, 0, n).sum() - n;
        return std::make_pair(Values{next}, Values{next * n, w * n});
      },
      {zeros({})}, {counts});
  return {r.carry[0], r.ys[0], r.ys[1]};
}

TEST_P(CompiledBodyValues, EachScanStepReadsItsOwnValue) {
  auto f = compile(weighted_prefix, scalar_outputs(GetParam()));
  const Tensor w = arange(4, kFloat32) + 0.5;
  for (const Tensor& counts : {tensor({1, 4, 0, 2}), tensor({3, 3})}) {
    const Values got = f(counts, w), want = weighted_prefix(counts, w);
    ASSERT_EQ(got.size(), 3u);
    for (size_t i = 0; i < got.size(); ++i) expect_equal(got[i], want[i]);
  }
  EXPECT_EQ(f.stats().graph_breaks, 0);
  // A value the check rules out raises on its step, as eagerly.
  EXPECT_THROW(f(tensor({1, 5}), w), ValueError);
  EXPECT_THROW(weighted_prefix(tensor({1, 5}), w), ValueError);
}

// A cond branch may return a tensor sized by a value it reads (Note [Branches of different
// sizes]): the node's output gets a symbol of its own, bound from the branch taken.
Tensor first_rows_if(const Tensor& p, const Tensor& x, const Tensor& count) {
  const Tensor rows = cond(
      p,
      [](const Values& v) {
        const SymInt n = v[1].item<SymInt>();
        check_is_size(n);
        check(n <= 4);
        return Values{v[0].narrow(0, 0, n) * 2};
      },
      [](const Values& v) { return Values{v[0] + 1}; }, {x, count})[0];
  return rows.sum({0}) + static_cast<double>(1) * zeros({rows.size(0), 1}).sum();
}

TEST_P(CompiledBodyValues, ACondBranchReturnsATensorSizedByAValueItReads) {
  auto f = compile(first_rows_if, scalar_outputs(GetParam()));
  const Tensor x = arange(12, kFloat32).reshape({4, 3});
  for (int64_t n : {2, 0, 4})
    for (bool p : {true, false}) {
      SCOPED_TRACE(fmt::format("n={} p={}", n, p));
      const Tensor pred = scalar_tensor(p, kBool), count = tensor({n});
      expect_equal(f(pred, x, count), first_rows_if(pred, x, count));
    }
  EXPECT_EQ(f.stats().compiles, 1);
}

// A value read in a loop body, used by a cond nested in that body.
Values nested_use(const Tensor& x) {
  return while_loop([](const Values& c) { return c[0] < 3; },
                    [](const Values& c) {
                      const SymInt n = c[0].item<SymInt>();
                      const Tensor odd = (c[0] % 2) == 1;
                      const Tensor next = cond(
                          odd, [n](const Values& v) { return Values{v[0] * n}; },
                          [n](const Values& v) { return Values{v[0] + n}; }, {c[1]})[0];
                      return Values{c[0] + 1, next};
                    },
                    {scalar_tensor(int64_t{0}, kInt64), x});
}

TEST_P(CompiledBodyValues, ANestedBodyUsesAValueItsEnclosingBodyRead) {
  auto f = compile(nested_use, scalar_outputs(GetParam()));
  const Tensor x = tensor({1.0f, -2.0f});
  const Values got = f(x), want = nested_use(x);
  expect_equal(got[1], want[1]);  // ((x + 0) * 1) + 2
  expect_equal(want[1], tensor({3.0f, 0.0f}));
}

TEST_P(CompiledBodyValues, AScanResultSizedByAStepsValueRaises) {
  auto fn = [](const Tensor& counts, const Tensor& w) {
    return map(
        [&w](const Values& x, const Values&) {
          const SymInt n = x[0].item<SymInt>();
          check_is_size(n);
          check(n <= 4);
          return Values{w.narrow(0, 0, n)};
        },
        {counts})[0];
  };
  auto f = compile(fn, scalar_outputs(GetParam()));
  const std::string msg = error_of_kind<ShapeError>([&] {
    f(tensor({1, 2}), arange(4, kFloat32));
  });
  EXPECT_NE(msg.find("map: fn returned output 0 with sizes [u0]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("body_values_test.cpp:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fixed size"), std::string::npos) << msg;
}

TEST_P(CompiledBodyValues, AValueCarriedOutOfItsBodyRaises) {
  auto fn = [](const Tensor& x, const Tensor& count) {
    SymInt leaked = 0;
    const Tensor y = cond(
        x.sum() > 0,
        [&leaked](const Values& v) {
          leaked = v[1].item<SymInt>();
          return Values{v[0] * 2};
        },
        [](const Values& v) { return Values{v[0] * 3}; }, {x, count})[0];
    return y + zeros({leaked}).sum();
  };
  auto f = compile(fn, scalar_outputs(GetParam()));
  const std::string msg = error_of_kind<ValueError>([&] { f(ones({2}), tensor({int64_t{3}})); });
  EXPECT_NE(msg.find("outside that body"), std::string::npos) << msg;
  EXPECT_NE(msg.find("in true_fn of cond"), std::string::npos) << msg;
}

TEST_P(CompiledBodyValues, AFactRelatingAValueToAnotherSizeRaises) {
  auto fn = [](const Tensor& x) {
    return while_loop([](const Values& c) { return c[0] < 2; },
                      [&x](const Values& c) {
                        const SymInt n = c[0].item<SymInt>();
                        check(n <= x.size(0));
                        return Values{c[0] + 1, c[1] + x.sum() * n};
                      },
                      {scalar_tensor(int64_t{0}, kInt64), zeros({})});
  };
  CompileOptions o = scalar_outputs(GetParam());
  o.dynamic = true;
  auto f = compile(fn, o);
  const std::string msg = error_of_kind<NotImplementedError>([&] { f(ones({3})); });
  EXPECT_NE(msg.find("kiln::check(s0 >= u0)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("inside body_fn"), std::string::npos) << msg;
}

// Values of the enclosing graph used inside a body: an item<SymInt>() value as an operand, and a
// nonzero() length as a size. The body gets the tensors that hold them as closures.
Tensor outer_values_inside(const Tensor& p, const Tensor& x, const Tensor& count) {
  const SymInt n = count.item<SymInt>();
  const SymInt m = x.nonzero().size(0);
  return cond(
      p, [n, m](const Values& v) { return Values{v[0] * n + ones({m}).sum()}; },
      [m](const Values& v) {
        return Values{v[0] - zeros({m, 2}).sum() - m};
      },
      {x})[0];
}

TEST_P(CompiledBodyValues, ABodyUsesValuesOfTheEnclosingGraph) {
  CompileOptions o = scalar_outputs(GetParam());
  o.capture_dynamic_output_shape_ops = true;
  auto f = compile(outer_values_inside, o);
  for (const Tensor& x : {tensor({0.0f, 2.0f, -1.0f}), tensor({0.0f, 0.0f, 5.0f})})
    for (int64_t n : {4, -1})
      for (bool p : {true, false}) {
        SCOPED_TRACE(fmt::format("n={} p={}", n, p));
        const Tensor pred = scalar_tensor(p, kBool), count = tensor({n});
        expect_equal(f(pred, x, count), outer_values_inside(pred, x, count));
      }
  EXPECT_EQ(f.stats().graph_breaks, 0);
  EXPECT_EQ(f.stats().compiles, 1);
}

// Gradients through a branch that scales by a value it reads: d/dx sum(x * n) = n.
TEST_P(CompiledBodyValues, GradientsThroughABranchThatReadsAValue) {
  auto fn = [](const Tensor& x, const Tensor& count) {
    const Tensor y = cond(
        x.sum() > 0,
        [](const Values& v) {
          const SymInt n = v[1].item<SymInt>();
          return Values{v[0] * n};
        },
        [](const Values& v) { return Values{v[0] * v[0]}; }, {x, count})[0];
    return y.sum();
  };
  auto f = compile(fn, scalar_outputs(GetParam()));
  for (int64_t n : {3, -2})
    for (float sign : {1.0f, -1.0f}) {
      SCOPED_TRACE(fmt::format("n={} sign={}", n, sign));
      const Tensor a = (arange(3, kFloat32) + 1) * sign, count = tensor({n});
      Tensor x = a.clone().requires_grad_(true), xe = a.clone().requires_grad_(true);
      const Tensor loss = f(x, count), want = fn(xe, count);
      expect_equal(loss, want);
      loss.backward();
      want.backward();
      expect_equal(x.grad(), xe.grad());
    }
}

// The same through a loop whose body reads its counter: d/dx of x * 0 * 1 * 2 ... per iteration.
TEST_P(CompiledBodyValues, GradientsThroughALoopBodyThatReadsItsCounter) {
  auto fn = [](const Tensor& x) {
    return while_loop([](const Values& c) { return c[0] < 3; },
                      [](const Values& c) {
                        const SymInt n = c[0].item<SymInt>();
                        return Values{c[0] + 1, c[1] * (n + 2)};
                      },
                      {scalar_tensor(int64_t{0}, kInt64), x})[1]
        .sum();
  };
  auto f = compile(fn, scalar_outputs(GetParam()));
  Tensor x = tensor({1.0f, -2.0f}).requires_grad_(true),
         xe = tensor({1.0f, -2.0f}).requires_grad_(true);
  const Tensor loss = f(x), want = fn(xe);
  expect_equal(loss, want);
  loss.backward();
  want.backward();
  expect_equal(x.grad(), xe.grad());  // 2 * 3 * 4
  expect_equal(xe.grad(), full({2}, 24.0f));
}

// A fact about a value of the enclosing graph, asserted in a branch: eagerly it is checked only
// when that branch runs, so the graph must not take it as a fact of the whole graph (it would
// decide the `if` below for the other branch too).
TEST_P(CompiledBodyValues, AFactInABranchAboutAnEnclosingValueRaises) {
  auto fn = [](const Tensor& p, const Tensor& x, const Tensor& count) {
    const SymInt n = count.item<SymInt>();
    const Tensor y = cond(
        p,
        [n](const Values& v) {
          check(n <= 3);
          return Values{v[0] * n};
        },
        [](const Values& v) { return Values{v[0] + 1}; }, {x})[0];
    return n <= 3 ? y : y * 10;
  };
  auto f = compile(fn, scalar_outputs(GetParam()));
  const std::string msg = error_of_kind<NotImplementedError>(
      [&] { f(scalar_tensor(false, kBool), ones({2}), tensor({5})); });
  EXPECT_NE(msg.find("kiln::check(u0 <= 3)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Check it before the cond"), std::string::npos) << msg;
}

// A cond inside a reversed scan, its branch reading the step's element: the innermost body
// defines the value, on every step, from a tensor its enclosing body received.
Values nested_reads(const Tensor& counts, const Tensor& w) {
  const ScanResult r = scan(
      [&w](const Values& carry, const Values& x) {
        const Tensor odd = (x[0] % 2) == 1;
        const Tensor step = cond(
            odd,
            [&w](const Values& v) {
              const SymInt n = v[0].item<SymInt>();
              check_is_size(n);
              check(n <= 4);
              return Values{w.narrow(0, 0, n).sum() * n};
            },
            [](const Values& v) { return Values{v[0].to(kFloat32) - 0.5}; }, {x[0]})[0];
        const Tensor next = carry[0] * 3 + step;
        return std::make_pair(Values{next}, Values{next});
      },
      {zeros({})}, {counts}, /*dim=*/0, /*reverse=*/true);
  return {r.carry[0], r.ys[0]};
}

TEST_P(CompiledBodyValues, ACondInAReversedScanReadsEachStepsValue) {
  auto f = compile(nested_reads, scalar_outputs(GetParam()));
  const Tensor w = arange(4, kFloat32) + 1;
  for (const Tensor& counts : {tensor({1, 2, 3, 0}), tensor({3, 3, 1, 4})}) {
    const Values got = f(counts, w), want = nested_reads(counts, w);
    expect_equal(got[0], want[0]);
    expect_equal(got[1], want[1]);
  }
  EXPECT_EQ(f.stats().graph_breaks, 0);
  EXPECT_EQ(f.stats().compiles, 1);
}

// A loop that runs no iteration checks nothing, as eagerly: the start value breaks the fact.
TEST_P(CompiledBodyValues, ALoopThatRunsNoIterationChecksNoFactOfItsBody) {
  auto loop = [](const Tensor& start, const Tensor& x) {
    return while_loop([](const Values& c) { return c[0] < 4; },
                      [&x](const Values& c) {
                        const SymInt n = c[0].item<SymInt>();
                        check(n <= 2);
                        return Values{c[0] + 1, c[1] + x * n};
                      },
                      {start, zeros({3})});
  };
  auto f = compile(loop, scalar_outputs(GetParam()));
  const Tensor x = ones({3});
  for (int64_t start : {7, 4, 9}) {
    SCOPED_TRACE(start);
    const Tensor s0 = scalar_tensor(start, kInt64);
    const Values got = f(s0, x), want = loop(s0, x);
    expect_equal(got[0], want[0]);
    expect_equal(got[1], want[1]);
  }
  EXPECT_THROW(f(scalar_tensor(int64_t{0}, kInt64), x), ValueError);  // iteration n = 3
}

// A boolean mask inside a scan body: its true count is a size of that step alone, used as a
// number and by a reduction; a map body may not return the masked tensor (its size changes from
// step to step).
Values masked_sums(const Tensor& xs) {
  const ScanResult r = scan(
      [](const Values& carry, const Values& x) {
        const Tensor positive = x[0].index({x[0] > 0});
        const SymInt count = positive.size(0);
        const Tensor next = carry[0] + positive.sum() + count;
        return std::make_pair(Values{next}, Values{positive.sum() * count});
      },
      {zeros({})}, {xs});
  return {r.carry[0], r.ys[0]};
}

TEST_P(CompiledBodyValues, ABooleanMaskInsideABodyIsSizedPerStep) {
  CompileOptions o = scalar_outputs(GetParam());
  o.capture_dynamic_output_shape_ops = true;
  auto f = compile(masked_sums, o);
  for (const Tensor& xs : {tensor({1.0, -2.0, 3.0, 0.0, 5.0, 1.0}).reshape({3, 2}),
                           tensor({-1.0, -2.0, 0.0, 0.0, 2.0, 2.0}).reshape({3, 2})}) {
    const Values got = f(xs), want = masked_sums(xs);
    expect_equal(got[0], want[0]);
    expect_equal(got[1], want[1]);
  }
  EXPECT_EQ(f.stats().graph_breaks, 0);
  auto g = compile(
      [](const Tensor& xs) {
        return map([](const Values& x, const Values&) { return Values{x[0].index({x[0] > 0})}; },
                   {xs})[0];
      },
      o);
  const std::string msg = error_of_kind<ShapeError>([&] { g(ones({3, 2})); });
  EXPECT_NE(msg.find("map: fn returned output 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("output in fn of map"), std::string::npos) << msg;
}

INSTANTIATE_TEST_SUITE_P(Backends, CompiledBodyValues, ::testing::Values("eager", "inductor"));

}  // namespace
}  // namespace kiln
