// scan and map under kiln::compile (Note [Higher-order ops under a trace] in
// src/capture/tracer.cpp): one scan node whose combine_fn is a subgraph, whatever the length,
// interpreted or compiled to generated code, differentiable through AOT autograd (Note [A scan's
// backward] in src/aot/joint_graph.cpp), returning what the same code returns eagerly.
#include <gtest/gtest.h>

#include "kiln/compile.h"
#include "kiln/control_flow.h"
#include "kiln/kiln.h"
#include "tests/capture/compare.h"

namespace kiln {
namespace {

using testing::count_of;
using testing::error_message;
using testing::expect_equal;
using testing::fullgraph_on;

// h_t = tanh(h_{t-1} * w + x_t), y_t = h_t * 2: an RNN-like recurrence over dim `dim` of xs.
ScanResult recurrence(const Tensor& h0, const Tensor& xs, const Tensor& w, int64_t dim,
                      bool reverse) {
  return scan(
      [&](const std::vector<Tensor>& c, const std::vector<Tensor>& x) {
        Tensor h = (c[0] * w + x[0]).tanh();
        return std::pair{std::vector<Tensor>{h}, std::vector<Tensor>{h * 2}};
      },
      {h0}, {xs}, dim, reverse);
}

class CompiledScan : public ::testing::TestWithParam<std::string> {};

TEST_P(CompiledScan, IsOneNodeWhateverTheLength) {
  auto fn = [](const Tensor& h0, const Tensor& xs, const Tensor& w) {
    ScanResult r = recurrence(h0, xs, w, 0, false);
    return std::make_tuple(r.carry[0], r.ys[0]);
  };
  auto f = compile(fn, fullgraph_on(GetParam(), /*dynamic=*/true));
  const Tensor w = tensor({0.5f, -1.0f, 0.25f}), h0 = tensor({0.1f, 0.2f, -0.3f});
  for (int64_t n : {5, 2, 9, 1}) {
    SCOPED_TRACE(n);
    const Tensor xs = arange(static_cast<double>(n * 3), kFloat32).reshape({n, 3}).sin();
    auto [h, ys] = f(h0, xs, w);
    auto [h_eager, ys_eager] = fn(h0, xs, w);
    expect_equal(h, h_eager);
    expect_equal(ys, ys_eager);
  }
  EXPECT_EQ(f.stats().graph_breaks, 0);
  EXPECT_LE(f.stats().compiles, 2);  // length 1 specializes (Note [0/1 specialization])
  const std::string text = f.describe();
  // One scan node per cache entry, its body traced once, not once per step.
  const size_t entries = static_cast<size_t>(f.stats().compiles);
  EXPECT_EQ(count_of(text, " scan("), entries) << text;
  EXPECT_EQ(count_of(text, "combine_fn {"), entries) << text;
  EXPECT_EQ(count_of(text, "tanh("), entries) << text;
}

TEST_P(CompiledScan, ReverseAndOtherDimsEqualEager) {
  const Tensor w = tensor({0.5f, -1.0f}), h0 = tensor({0.1f, 0.2f});
  const Tensor xs = arange(24.0, kFloat32).reshape({2, 6, 2}).cos();  // scanned along dim 1
  for (bool reverse : {false, true}) {
    SCOPED_TRACE(reverse);
    auto fn = [&](const Tensor& x) {
      ScanResult r =
          recurrence(h0.expand({2, 2}), x.transpose(1, 2).transpose(0, 1), w, 2, reverse);
      return std::make_tuple(r.carry[0], r.ys[0]);
    };
    auto f = compile(fn, fullgraph_on(GetParam()));
    auto [h, ys] = f(xs);
    auto [h_eager, ys_eager] = fn(xs);
    expect_equal(h, h_eager);
    expect_equal(ys, ys_eager);
    EXPECT_EQ(count_of(f.describe(), " scan("), 1u) << f.describe();
  }
}

TEST_P(CompiledScan, MapIsAScanWithNoCarry) {
  const Tensor bias = tensor({1.0f, -2.0f, 0.5f});
  auto fn = [&](const Tensor& xs, const Tensor& scale) {
    return map(
        [&](const std::vector<Tensor>& x, const std::vector<Tensor>& args) {
          return std::vector<Tensor>{(x[0] * args[0]).sum({0}) + bias, x[1].exp()};
        },
        {xs, xs.neg()}, {scale});
  };
  auto f = compile(fn, fullgraph_on(GetParam()));
  const Tensor xs = arange(24.0, kFloat32).reshape({4, 2, 3}) / 10,
               scale = tensor({2.0f, 3.0f, -1.0f});
  std::vector<Tensor> got = f(xs, scale), want = fn(xs, scale);
  ASSERT_EQ(got.size(), 2u);
  expect_equal(got[0], want[0]);
  expect_equal(got[1], want[1]);
  const std::string text = f.describe();
  EXPECT_EQ(count_of(text, " scan("), 1u) << text;
}

TEST_P(CompiledScan, IntegerCarriesAndSizeOneSteps) {
  // An i64 step counter and a bool flag ride along; each step reads one row of size 1.
  auto fn = [](const Tensor& xs) {
    ScanResult r = scan(
        [](const std::vector<Tensor>& c, const std::vector<Tensor>& x) {
          Tensor seen = c[1] | (x[0].sum() > 1);
          return std::pair{std::vector<Tensor>{c[0] + 1, seen},
                           std::vector<Tensor>{x[0] * c[0].to(kFloat32), c[0].clone()}};
        },
        {zeros({}, kInt64), zeros({}, kBool)}, {xs});
    return std::make_tuple(r.carry[0], r.carry[1], r.ys[0], r.ys[1]);
  };
  auto f = compile(fn, fullgraph_on(GetParam()));
  for (const Tensor& xs : {tensor({0.5f, 2.0f, -1.0f}).reshape({3, 1}), tensor({{0.25f}})}) {
    auto got = f(xs);
    auto want = fn(xs);
    expect_equal(std::get<0>(got), std::get<0>(want));
    expect_equal(std::get<1>(got), std::get<1>(want));
    expect_equal(std::get<2>(got), std::get<2>(want));
    expect_equal(std::get<3>(got), std::get<3>(want));
  }
}

TEST_P(CompiledScan, ACondInsideTheBody) {
  // Each step picks a branch from its own slice: the branch changes between steps.
  auto fn = [](const Tensor& xs) {
    return scan(
               [](const std::vector<Tensor>& c, const std::vector<Tensor>& x) {
                 Tensor next = cond(
                     x[0].sum() > 0,
                     [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] + v[1]}; },
                     [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * v[1]}; },
                     {c[0], x[0]})[0];
                 return std::pair{std::vector<Tensor>{next}, std::vector<Tensor>{next.sum()}};
               },
               {ones({2})}, {xs})
        .ys[0];
  };
  auto f = compile(fn, fullgraph_on(GetParam()));
  const Tensor xs = tensor({1.0f, 2.0f, -3.0f, 0.5f, 2.0f, 2.0f, -1.0f, -1.0f}).reshape({4, 2});
  expect_equal(f(xs), fn(xs));
  expect_equal(f(xs.neg()), fn(xs.neg()));
  EXPECT_EQ(f.stats().compiles, 1);
}

// d(compiled)/d(inputs) against d(eager)/d(inputs): the eager scan unrolls, so its gradient is
// the unrolled program's.
void expect_same_gradients(const Tensor& compiled, const Tensor& eager,
                           const std::vector<Tensor>& inputs) {
  const std::vector<Tensor> got = grad({compiled}, inputs, {}, false, false, true);
  const std::vector<Tensor> want = grad({eager}, inputs, {}, false, false, true);
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(fmt::format("gradient of input {}", i));
    expect_equal(got[i], want[i].defined() ? want[i] : zeros_like(inputs[i]));
  }
}

TEST_P(CompiledScan, GradientsEqualTheUnrolledRecurrence) {
  for (bool reverse : {false, true}) {
    SCOPED_TRACE(reverse);
    auto fn = [&](const Tensor& h0, const Tensor& xs, const Tensor& w) {
      ScanResult r = recurrence(h0, xs, w, 0, reverse);
      return (r.carry[0] * 3).sum() + (r.ys[0] * r.ys[0]).sum();
    };
    auto f = compile(fn, fullgraph_on(GetParam()));
    const Tensor h0 = tensor({0.1, 0.2, -0.3}, kFloat64).requires_grad_();
    const Tensor xs = (arange(12.0, kFloat64).reshape({4, 3}) / 7).requires_grad_();
    const Tensor w = tensor({0.5, -1.0, 0.25}, kFloat64).requires_grad_();
    expect_same_gradients(f(h0, xs, w), fn(h0, xs, w), {h0, xs, w});
  }
}

// Note [Weight gradients of a scan]: every form of a closed-over weight's per-step gradient, the
// product forms summed by one product after the backward scan (W in h W, V in x V^T, W2 in
// W2 h^T, the bias b), the others in a carry (U used twice per step, w elementwise), forwards
// and reversed, with a batch of 1 and of 3.
TEST_P(CompiledScan, GradientsOfClosedOverWeightsOfEveryForm) {
  for (bool reverse : {false, true}) {
    for (int64_t batch : {1, 3}) {
      SCOPED_TRACE(fmt::format("reverse {} batch {}", reverse, batch));
      auto fn = [&](const Tensor& h0, const Tensor& xs, const Tensor& W, const Tensor& V,
                    const Tensor& W2, const Tensor& b, const Tensor& U, const Tensor& w) {
        ScanResult r = scan(
            [&](const std::vector<Tensor>& c, const std::vector<Tensor>& x) {
              const Tensor& h = c[0];
              Tensor pre = mm(h, W) + linear(x[0], V) + mm(W2, h.t()).t() + b;
              pre = pre + mm(h, U) + mm(x[0], U) + h * w;
              Tensor next = pre.tanh();
              return std::pair{std::vector<Tensor>{next}, std::vector<Tensor>{next * 2}};
            },
            {h0}, {xs}, 0, reverse);
        return (r.carry[0] * 3).sum() + (r.ys[0] * r.ys[0]).sum();
      };
      auto f = compile(fn, fullgraph_on(GetParam()));
      auto param = [](Tensor t) { return (t / 5).requires_grad_(); };
      const Tensor h0 = param(randn({batch, 4}, TensorOptions().dtype(kFloat64)));
      const Tensor xs = param(randn({5, batch, 4}, TensorOptions().dtype(kFloat64)));
      std::vector<Tensor> weights;
      for (int k = 0; k < 5; ++k)
        weights.push_back(param(randn({4, 4}, TensorOptions().dtype(kFloat64))));
      const Tensor w = param(randn({4}, TensorOptions().dtype(kFloat64)));
      const Tensor& W = weights[0];
      const Tensor& V = weights[1];
      const Tensor& W2 = weights[2];
      const Tensor& U = weights[3];
      const Tensor b = weights[4][0].detach().requires_grad_();
      expect_same_gradients(f(h0, xs, W, V, W2, b, U, w), fn(h0, xs, W, V, W2, b, U, w),
                            {h0, xs, W, V, W2, b, U, w});
    }
  }
}

TEST_P(CompiledScan, GradientsOfSomeInputsOnlyAndOfAMap) {
  // Only w needs a gradient (a closure: an additional input), and only through the step outputs.
  auto fn = [](const Tensor& h0, const Tensor& xs, const Tensor& w) {
    return recurrence(h0, xs, w, 0, false).ys[0].sum();
  };
  auto f = compile(fn, fullgraph_on(GetParam()));
  const Tensor h0 = tensor({0.1, 0.2}, kFloat64), xs = arange(6.0, kFloat64).reshape({3, 2}) / 4;
  const Tensor w = tensor({0.5, -1.0}, kFloat64).requires_grad_();
  expect_same_gradients(f(h0, xs, w), fn(h0, xs, w), {w});

  auto mapped = [](const Tensor& xs, const Tensor& w) {
    return map([&](const std::vector<Tensor>& x,
                   const std::vector<Tensor>&) { return std::vector<Tensor>{(x[0] * w).sin()}; },
               {xs})[0]
        .sum();
  };
  auto g = compile(mapped, fullgraph_on(GetParam()));
  const Tensor x = (arange(6.0, kFloat64).reshape({3, 2}) / 4).requires_grad_();
  expect_same_gradients(g(x, w), mapped(x, w), {x, w});
}

TEST_P(CompiledScan, BodiesThatBreakTheContractRaise) {
  const Tensor xs = ones({3, 2});
  auto mutating = compile(
      [](const Tensor& x) {
        return scan(
                   [](const std::vector<Tensor>& c, const std::vector<Tensor>& s) {
                     s[0].add_(1);
                     return std::pair{std::vector<Tensor>{c[0] + s[0]}, std::vector<Tensor>{}};
                   },
                   {zeros({2})}, {x})
            .carry[0];
      },
      fullgraph_on(GetParam()));
  const std::string mutated = error_message([&] { mutating(xs); });
  EXPECT_NE(mutated.find("scan: combine_fn mutated its slice of xs 0"), std::string::npos)
      << mutated;

  auto reshaping = compile(
      [](const Tensor& x) {
        return scan(
                   [](const std::vector<Tensor>& c, const std::vector<Tensor>& s) {
                     return std::pair{std::vector<Tensor>{(c[0] + s[0]).sum()},
                                      std::vector<Tensor>{}};
                   },
                   {zeros({2})}, {x})
            .carry[0];
      },
      fullgraph_on(GetParam()));
  const std::string reshaped = error_message([&] { reshaping(xs); });
  EXPECT_NE(reshaped.find(
                "scan: combine_fn returned carry 0 as float32 [] but received it as float32 [2]"),
            std::string::npos)
      << reshaped;

  auto reading = compile(
      [](const Tensor& x) {
        return scan(
                   [](const std::vector<Tensor>& c, const std::vector<Tensor>& s) {
                     const double v = s[0].sum().item<double>();
                     return std::pair{std::vector<Tensor>{c[0] * v}, std::vector<Tensor>{}};
                   },
                   {ones({2})}, {x})
            .carry[0];
      },
      fullgraph_on(GetParam()));
  const std::string read = error_message([&] { reading(xs); });
  EXPECT_NE(read.find("inside combine_fn of scan"), std::string::npos) << read;

  auto aliasing = compile(
      [](const Tensor& x) {
        return scan(
                   [](const std::vector<Tensor>& c, const std::vector<Tensor>& s) {
                     return std::pair{std::vector<Tensor>{c[0] + 1}, std::vector<Tensor>{s[0]}};
                   },
                   {ones({2})}, {x})
            .ys[0];
      },
      fullgraph_on(GetParam()));
  const std::string aliased = error_message([&] { aliasing(xs); });
  EXPECT_NE(aliased.find("aliases its slice of xs 0"), std::string::npos) << aliased;
}

// Hostile: two modules through one compiled function (a scan cell and a mapped head), then a
// different cell of the same shape, and weights changed in place between calls: every call must
// compute with the parameters of the modules it is given, as they are now.
TEST_P(CompiledScan, TwoModulesSwappedAndUpdatedBetweenCalls) {
  auto fn = [](nn::Module& cell, nn::Module& head, const Tensor& h0, const Tensor& xs) {
    ScanResult r = scan(
        [&](const std::vector<Tensor>& c, const std::vector<Tensor>& x) {
          Tensor h = (cell(x[0]) + c[0]).tanh();
          return std::pair{std::vector<Tensor>{h}, std::vector<Tensor>{h * 1}};
        },
        {h0}, {xs});
    std::vector<Tensor> out =
        map([&](const std::vector<Tensor>& y,
                const std::vector<Tensor>&) { return std::vector<Tensor>{head(y[0])}; },
            {r.ys[0]});
    return std::make_tuple(r.carry[0], out[0]);
  };
  auto f = compile(fn, fullgraph_on(GetParam()));
  nn::Linear cell_a(4, 4), cell_b(4, 4), head(4, 2);
  const Tensor h0 = zeros({3, 4}), xs = randn({5, 3, 4});
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE(call);
    for (nn::Linear* cell : {&cell_a, &cell_b}) {
      auto [h, ys] = f(*cell, head, h0, xs);
      auto [h_eager, ys_eager] = fn(*cell, head, h0, xs);
      expect_equal(h, h_eager);
      expect_equal(ys, ys_eager);
    }
    NoGradGuard no_grad;
    cell_a.weight.mul_(-0.5);
    head.bias.add_(1.0);
  }
  EXPECT_EQ(f.stats().graph_breaks, 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, CompiledScan, ::testing::Values("eager", "inductor"));

}  // namespace
}  // namespace kiln
