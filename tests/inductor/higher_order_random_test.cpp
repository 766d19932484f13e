// Random programs around cond, while_loop, scan and map, compiled with the inductor backend and
// compared with the same code run eagerly: outputs and gradients, for several inputs per compile
// (both branches, several trip counts and scan lengths). The bodies are random chains of ops
// (elementwise, broadcast reductions, cumsum, flip, where), sometimes with a cond inside. Each
// program is described by its seed, so a failure names what to rerun.
#include <gtest/gtest.h>

#include <random>

#include "kiln/compile.h"
#include "kiln/control_flow.h"
#include "kiln/kiln.h"
#include "tests/capture/compare.h"

namespace kiln {
namespace {

using testing::expect_equal;
using Bodies = std::vector<Tensor>;

// One op of a body: (a, b) -> a tensor shaped as a (b has a's shape). Bounded in magnitude, so
// chains of them stay finite and gradients stay well conditioned.
Tensor apply_op(int op, const Tensor& a, const Tensor& b) {
  switch (op) {
    case 0:
      return a + b;
    case 1:
      return a * b.tanh();
    case 2:
      return (a - b) * 0.5;
    case 3:
      return a.sin();
    case 4:
      return a.tanh().exp();
    case 5:
      return a + a.mean();
    case 6:
      return a.cumsum(-1) * 0.25;
    case 7:
      return a.flip({-1}) - b;
    case 8:
      return where(a > 0, a, b * 0.5);
    case 9:
      return a * a.max(-1, true).first.tanh();
    default:
      return a.neg();
  }
}
constexpr int kOps = 11;

// A random chain of ops over (a, b); with `nested`, the middle of the chain is a cond whose
// branches are chains of their own.
struct Body {
  std::vector<int> ops;
  std::vector<int> true_ops, false_ops;  // a nested cond's branches (empty: none)

  Tensor run(const Tensor& a, const Tensor& b) const {
    Tensor x = a;
    for (size_t i = 0; i < ops.size(); ++i) {
      x = apply_op(ops[i], x, b);
      if (i == ops.size() / 2 && !true_ops.empty()) {
        x = cond(
            x.sum() > 0, [&](const Bodies& v) { return Bodies{chain(true_ops, v[0], v[1])}; },
            [&](const Bodies& v) { return Bodies{chain(false_ops, v[0], v[1])}; }, {x, b})[0];
      }
    }
    return x.tanh();
  }
  static Tensor chain(const std::vector<int>& ops, const Tensor& a, const Tensor& b) {
    Tensor x = a;
    for (int op : ops) x = apply_op(op, x, b);
    return x * 1;  // never the input itself (a body returns new tensors)
  }
};

std::vector<int> random_ops(std::mt19937_64& rng, int max_len) {
  std::vector<int> ops(1 + rng() % static_cast<uint64_t>(max_len));
  for (int& op : ops) op = static_cast<int>(rng() % kOps);
  return ops;
}

Body random_body(std::mt19937_64& rng) {
  Body body{.ops = random_ops(rng, 4)};
  if (rng() % 3 == 0) {
    body.true_ops = random_ops(rng, 3);
    body.false_ops = random_ops(rng, 3);
  }
  return body;
}

enum class Kind { Cond, WhileLoop, Scan, ReverseScan, Map };

struct Case {
  uint64_t seed;
  Kind kind;
  Body first, second;
};

// The program: x [n, 4], w [4] (closed over), n the trip count of a while_loop.
Tensor run_case(const Case& c, const Tensor& x, const Tensor& w, const Tensor& n) {
  switch (c.kind) {
    case Kind::Cond: {
      const Bodies out = cond(
          x.sum() > 0,
          [&](const Bodies& v) { return Bodies{c.first.run(v[0], w.expand_as(v[0]))}; },
          [&](const Bodies& v) { return Bodies{c.second.run(v[0], w.expand_as(v[0]))}; }, {x});
      return (out[0] * out[0]).sum();
    }
    case Kind::WhileLoop: {
      const Bodies out = while_loop([&](const Bodies& s) { return s[0] < n; },
                                    [&](const Bodies& s) {
                                      return Bodies{s[0] + 1, c.first.run(s[1], w.expand_as(s[1]))};
                                    },
                                    {zeros({}, kInt64), x});
      return (out[1] * 3).sum();
    }
    case Kind::Scan:
    case Kind::ReverseScan: {
      const ScanResult r = scan(
          [&](const Bodies& h, const Bodies& row) {
            Tensor next = c.first.run(h[0] + row[0], w);
            return std::pair{Bodies{next}, Bodies{c.second.run(next, row[0])}};
          },
          {w.tanh()}, {x}, 0, c.kind == Kind::ReverseScan);
      return r.carry[0].sum() + (r.ys[0] * r.ys[0]).sum();
    }
    case Kind::Map:
      return map([&](const Bodies& row, const Bodies&) { return Bodies{c.first.run(row[0], w)}; },
                 {x})[0]
          .sum();
  }
  return Tensor();
}

Case random_case(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const Kind kind = static_cast<Kind>(rng() % 5);
  Body first = random_body(rng);
  Body second = random_body(rng);
  return {seed, kind, std::move(first), std::move(second)};
}

Tensor random_input(std::mt19937_64& rng, int64_t rows, double sign) {
  std::uniform_real_distribution<double> u(-1.5, 1.5);
  std::vector<double> v(static_cast<size_t>(rows * 4));
  for (double& e : v) e = u(rng);
  Tensor x = from_vector(v, std::vector<int64_t>{rows, 4});
  // Shift the sum's sign so that both branches of a cond on x.sum() > 0 are taken.
  return x - x.mean() + sign * 0.25;
}

class RandomHigherOrder : public ::testing::TestWithParam<uint64_t> {};

TEST_P(RandomHigherOrder, CompiledEqualsEagerWithGradients) {
  const Case c = random_case(GetParam());
  SCOPED_TRACE(fmt::format("seed {} kind {}", c.seed, static_cast<int>(c.kind)));
  CompileOptions o = testing::inductor();
  o.fullgraph = true;
  o.dynamic = true;
  auto f = compile(
      [&](const Tensor& x, const Tensor& w, const Tensor& n) { return run_case(c, x, w, n); }, o);
  std::mt19937_64 data(c.seed * 7919 + 1);
  const Tensor w = tensor({0.5, -0.75, 1.25, 0.25}, kFloat64);
  int step = 0;
  for (const auto& [rows, sign, trips] : {std::tuple{3, 1.0, 2}, std::tuple{5, -1.0, 0},
                                          std::tuple{2, 1.0, 3}, std::tuple{4, -1.0, 1}}) {
    SCOPED_TRACE(fmt::format("call {}: {} rows, trips {}", step++, rows, trips));
    const Tensor x0 = random_input(data, rows, sign);
    const Tensor n = scalar_tensor(int64_t{trips}, kInt64);
    const Tensor x = x0.clone().requires_grad_(), xe = x0.clone().requires_grad_();
    const Tensor wc = w.clone().requires_grad_(), we = w.clone().requires_grad_();
    const Tensor y = f(x, wc, n), ye = run_case(c, xe, we, n);
    expect_equal(y, ye);
    const std::vector<Tensor> got = grad({y}, {x, wc}, {}, false, false, true);
    const std::vector<Tensor> want = grad({ye}, {xe, we}, {}, false, false, true);
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(i == 0 ? "d/dx" : "d/dw");
      const Tensor& input = i == 0 ? x0 : w;
      const Tensor expected = want[i].defined() ? want[i] : zeros_like(input);
      ASSERT_TRUE(got[i].defined() || !want[i].defined());
      if (!got[i].defined()) continue;  // neither run reached this input
      // Gradients through chains of ops add up rounding from different summation orders.
      const Tensor diff = (got[i] - expected).abs().max();
      EXPECT_LE(diff.item<double>(), 1e-9 * (1 + expected.abs().max().item<double>()))
          << got[i] << "\n"
          << expected;
    }
  }
  EXPECT_LE(f.stats().compiles, 2);  // the shape policy may specialize one size
  EXPECT_EQ(f.stats().graph_breaks, 0);
}

// Seeds 0..23: every kind, with and without nested conds (random_case picks them).
INSTANTIATE_TEST_SUITE_P(Seeds, RandomHigherOrder, ::testing::Range<uint64_t>(0, 24));

}  // namespace
}  // namespace kiln
