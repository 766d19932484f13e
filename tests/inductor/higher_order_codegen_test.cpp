// cond and while_loop in generated code (Note [Higher-order ops in a program] in
// src/runtime/program.h), and values read with item<SymInt>() bound by the executor (Note
// [Scalar outputs in a graph] in src/ops/scalar_output.cpp): the graph compiles with no eager
// fallback, its bodies' kernels are in the generated translation unit, and it returns what the
// same code returns eagerly, whichever branch or trip count the data picks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "kiln/compile.h"
#include "kiln/control_flow.h"
#include "kiln/kiln.h"
#include "src/trace/reader.h"
#include "src/trace/trace.h"
#include "tests/capture/compare.h"

namespace kiln {
namespace {

using testing::count_of;
using testing::error_message;
using testing::expect_equal;

CompileOptions inductor(bool dynamic = false) {
  CompileOptions o = testing::inductor();
  o.fullgraph = true;  // a graph break would raise
  o.dynamic = dynamic;
  return o;
}

// What the backend did while `body` ran: eager fallbacks, graph-cache hits, and the generated
// translation units.
struct Outcome {
  int fallbacks = 0, cache_hits = 0;
  std::string fallback_reasons, output_code;
};

// Runs `body` with a fresh code cache and structured trace, so that its compiles generate code.
template <typename F>
Outcome watch_backend(const std::string& name, F&& body) {
  const auto dir = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(dir);
  const char* old_cache = std::getenv("KILN_CACHE_DIR");
  const std::string saved_cache = old_cache ? old_cache : "";
  ::setenv("KILN_CACHE_DIR", (dir / "cache").c_str(), 1);
  trace::set_directory_for_testing((dir / "trace").string());
  body();
  trace::set_directory_for_testing(std::nullopt);
  if (old_cache)
    ::setenv("KILN_CACHE_DIR", saved_cache.c_str(), 1);
  else
    ::unsetenv("KILN_CACHE_DIR");
  Outcome o;
  for (const std::string& file : trace::trace_files((dir / "trace").string())) {
    for (const trace::Record& r : trace::read_trace(file)) {
      if (r.kind != "artifact") continue;
      const std::string payload = r.payload.value_or("");
      if (r.artifact_name() == "inductor_fallback") {
        ++o.fallbacks;
        o.fallback_reasons += payload + "\n";
      }
      o.cache_hits += r.artifact_name() == "inductor_cache";
      if (r.artifact_name() == "inductor_output_code") o.output_code += payload;
    }
  }
  std::filesystem::remove_all(dir);
  return o;
}

// d(compiled)/d(inputs) against d(eager)/d(eager_inputs) (the same values, separate leaves).
// An input the eager run did not reach (a branch not taken, a loop run zero times) has no
// gradient eagerly; the compiled backward, one graph for every path, gives zeros for it, as
// PyTorch's cond and while_loop do.
void expect_same_gradients(const Tensor& compiled, const std::vector<Tensor>& inputs,
                           const Tensor& eager, const std::vector<Tensor>& eager_inputs) {
  const std::vector<Tensor> got = grad({compiled}, inputs, {}, false, false, true);
  const std::vector<Tensor> want = grad({eager}, eager_inputs, {}, false, false, true);
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(fmt::format("gradient of input {}", i));
    expect_equal(got[i], want[i].defined() ? want[i] : zeros_like(inputs[i]));
  }
}

// The predicate is data: each call picks a branch from x's values.
Tensor branchy(const Tensor& x, const Tensor& w) {
  return cond(
             x.sum() > 0,
             [&](const std::vector<Tensor>& v) {
               return std::vector<Tensor>{(v[0].sin() * w).exp(), v[0].sum({0})};
             },
             [&](const std::vector<Tensor>& v) {
               return std::vector<Tensor>{v[0] * 2 - w, v[0].amax({0})};
             },
             {x})[0] +
         1;
}

TEST(HigherOrderCodegen, CondBranchesAreKernelsOfTheGeneratedCode) {
  const Outcome o = watch_backend("kiln_hop_codegen_cond", [] {
    auto f = compile(branchy, inductor());
    const Tensor w = tensor({0.5f, -1.0f, 2.0f});
    for (const Tensor& x : {tensor({1.0f, 2.0f, 3.0f}), tensor({-1.0f, -2.0f, 0.5f}),
                            tensor({0.0f, 0.0f, 0.0f}), tensor({3.0f, -1.0f, -1.0f})})
      expect_equal(f(x, w), branchy(x, w));
    EXPECT_EQ(f.stats().compiles, 1);
    EXPECT_EQ(f.stats().graphs, 1);
  });
  EXPECT_EQ(o.fallbacks, 0) << o.fallback_reasons;
  EXPECT_NE(o.output_code.find("true_fn_kernel0("), std::string::npos) << o.output_code;
  EXPECT_NE(o.output_code.find("false_fn_kernel0("), std::string::npos) << o.output_code;
}

// Counts i up to n (a tensor: the trip count is data), doubling x and adding w on each step.
std::vector<Tensor> doubling(const Tensor& n, const Tensor& x, const Tensor& w) {
  return while_loop([&](const std::vector<Tensor>& c) { return c[0] < n; },
                    [&](const std::vector<Tensor>& c) {
                      return std::vector<Tensor>{c[0] + 1, (c[1] * 2 + w).tanh()};
                    },
                    {zeros({}, kInt64), x});
}

TEST(HigherOrderCodegen, WhileLoopRunsItsBodyKernelsUntilTheConditionIsFalse) {
  const Outcome o = watch_backend("kiln_hop_codegen_while", [] {
    auto fn = [](const Tensor& n, const Tensor& x, const Tensor& w) {
      std::vector<Tensor> out = doubling(n, x, w);
      return std::make_tuple(out[0], out[1] * 3);
    };
    auto f = compile(fn, inductor());
    const Tensor x = tensor({1.0f, -3.0f, 0.25f, 0.0f}).reshape({2, 2}), w = tensor({0.5f, -0.5f});
    for (int64_t n : {0, 1, 5, 3, -2}) {
      SCOPED_TRACE(n);
      const Tensor trips = scalar_tensor(n, kInt64);
      auto [count, y] = f(trips, x, w);
      auto [count_eager, y_eager] = fn(trips, x, w);
      expect_equal(count, count_eager);
      expect_equal(y, y_eager);
    }
    EXPECT_EQ(f.stats().compiles, 1);
  });
  EXPECT_EQ(o.fallbacks, 0) << o.fallback_reasons;
  EXPECT_NE(o.output_code.find("cond_fn_kernel0("), std::string::npos) << o.output_code;
  EXPECT_NE(o.output_code.find("body_fn_kernel0("), std::string::npos) << o.output_code;
}

TEST(HigherOrderCodegen, ACondInsideALoopBodyIsCompiledToo) {
  const Outcome o = watch_backend("kiln_hop_codegen_nested", [] {
    // x is doubled while its sum is positive, else negated: the branch changes between steps.
    auto fn = [](const Tensor& n, const Tensor& x) {
      return while_loop(
          [&](const std::vector<Tensor>& c) { return c[0] < n; },
          [](const std::vector<Tensor>& c) {
            Tensor next = cond(
                c[1].sum() > 0,
                [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * 2}; },
                [](const std::vector<Tensor>& v) { return std::vector<Tensor>{-v[0] + 0.5}; },
                {c[1]})[0];
            return std::vector<Tensor>{c[0] + 1, next};
          },
          {zeros({}, kInt64), x})[1];
    };
    auto f = compile(fn, inductor());
    for (int64_t n : {0, 1, 4, 7}) {
      const Tensor trips = scalar_tensor(n, kInt64), x = tensor({-1.0f, 0.25f});
      expect_equal(f(trips, x), fn(trips, x));
    }
  });
  EXPECT_EQ(o.fallbacks, 0) << o.fallback_reasons;
  EXPECT_NE(o.output_code.find("body_fn_v"), std::string::npos) << o.output_code;
  EXPECT_NE(o.output_code.find("true_fn_kernel0("), std::string::npos) << o.output_code;
}

TEST(HigherOrderCodegen, BodiesOverSymbolicSizesServeEverySize) {
  const Outcome o = watch_backend("kiln_hop_codegen_dynamic", [] {
    nn::Linear fc(4, 4);
    auto fn = [](nn::Module& m, const Tensor& x) {
      return cond(
          x.mean() > 0, [&](const std::vector<Tensor>& v) { return std::vector<Tensor>{m(v[0])}; },
          [&](const std::vector<Tensor>& v) {
            return std::vector<Tensor>{v[0].relu() * 3 + v[0].sum({0})};
          },
          {x})[0];
    };
    auto f = compile(fn, inductor(/*dynamic=*/true));
    NoGradGuard no_grad;  // inference: fc's parameters would ask for a training graph
    for (int64_t rows : {2, 5, 3, 9}) {
      const Tensor x = randn({rows, 4});
      expect_equal(f(fc, x.abs()), fn(fc, x.abs()));
      expect_equal(f(fc, -x.abs()), fn(fc, -x.abs()));
    }
    EXPECT_EQ(f.stats().compiles, 1);
  });
  EXPECT_EQ(o.fallbacks, 0) << o.fallback_reasons;
}

TEST(HigherOrderCodegen, ADivisionByZeroInABodyKernelRaises) {
  const Outcome o = watch_backend("kiln_hop_codegen_div0", [] {
    auto fn = [](const Tensor& a, const Tensor& b) {
      return cond(
          a.sum() > 0,
          [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0].div(v[1], "floor")}; },
          [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * 1}; }, {a, b})[0];
    };
    auto f = compile(fn, inductor());
    const Tensor a = tensor({1, 2}, kInt64);
    expect_equal(f(a, tensor({1, 1}, kInt64)), fn(a, tensor({1, 1}, kInt64)));
    const std::string msg = error_message([&] { f(a, tensor({1, 0}, kInt64)); });
    EXPECT_NE(msg.find("division by zero"), std::string::npos) << msg;
    expect_equal(f(-a, tensor({1, 0}, kInt64)), fn(-a, tensor({1, 0}, kInt64)));
  });
  EXPECT_EQ(o.fallbacks, 0) << o.fallback_reasons;
}

TEST(HigherOrderCodegen, AWarmStartReadsTheBodiesBackFromTheGraphCache) {
  const Outcome o = watch_backend("kiln_hop_codegen_cache", [] {
    const Tensor w = tensor({0.5f, -1.0f, 2.0f});
    const Tensor up = tensor({1.0f, 2.0f, 3.0f}), down = tensor({-1.0f, -2.0f, 0.5f});
    auto f1 = compile(branchy, inductor());
    expect_equal(f1(up, w), branchy(up, w));
    auto f2 = compile(branchy, inductor());  // traced again: the same graph, from the cache
    expect_equal(f2(up, w), branchy(up, w));
    expect_equal(f2(down, w), branchy(down, w));
  });
  EXPECT_EQ(o.fallbacks, 0) << o.fallback_reasons;
  EXPECT_EQ(o.cache_hits, 1);
}

// Layouts a body may meet (Note [Body inputs keep their traced layout]): the first carry is a
// transposed view, later ones what the body returned (contiguous); a cond operand is an expanded
// (stride 0) tensor.
TEST(HigherOrderCodegen, NonContiguousCarriesAndExpandedOperands) {
  const Outcome o = watch_backend("kiln_hop_codegen_layouts", [] {
    auto fn = [](const Tensor& n, const Tensor& x, const Tensor& row) {
      Tensor carried =
          while_loop([&](const std::vector<Tensor>& c) { return c[0] < n; },
                     [](const std::vector<Tensor>& c) {
                       return std::vector<Tensor>{c[0] + 1, c[1] * 2 + c[1].sum({0}, true)};
                     },
                     {zeros({}, kInt64), x.t()})[1];
      Tensor picked = cond(
          row.sum() > 0,
          [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * v[1] + 1}; },
          [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] - v[1]}; },
          {row.expand({3, 2}), carried})[0];
      return picked;
    };
    auto f = compile(fn, inductor());
    const Tensor x = arange(6, kFloat32).reshape({2, 3}) - 2, row = tensor({1.0f, -0.5f});
    for (int64_t n : {0, 1, 3})
      for (const Tensor& r : {row, -row}) {
        const Tensor trips = scalar_tensor(n, kInt64);
        expect_equal(f(trips, x, r), fn(trips, x, r));
      }
  });
  EXPECT_EQ(o.fallbacks, 0) << o.fallback_reasons;
}

// A gradient arriving expanded (from a sum) into the backward cond, whose vjp bodies were traced
// with contiguous gradients: without the copy its kernels read past the one-element storage.
TEST(HigherOrderCodegen, CondGradientsThroughASum) {
  const Outcome o = watch_backend("kiln_hop_codegen_cond_grad_sum", [] {
    auto fn = [](const Tensor& x, const Tensor& w) {
      return (cond(
                  x.sum() > 0,
                  [&](const std::vector<Tensor>& v) {
                    return std::vector<Tensor>{v[0].sin() * v[1]};
                  },
                  [&](const std::vector<Tensor>& v) {
                    return std::vector<Tensor>{v[0] * 2 - v[1]};
                  },
                  {x, w})[0] +
              1)
          .sum();
    };
    auto f = compile(fn, inductor());
    const Tensor w = tensor({0.5, -1.0, 2.0}, kFloat64).requires_grad_();
    for (const Tensor& data :
         {tensor({1.0, 2.0, 3.0}, kFloat64), tensor({-1.0, -2.0, 0.5}, kFloat64)}) {
      const Tensor x = data.clone().requires_grad_();
      std::vector<Tensor> g = grad({f(x, w)}, {x, w});
      std::vector<Tensor> expected = grad({fn(x, w)}, {x, w});
      expect_equal(g[0], expected[0]);
      expect_equal(g[1], expected[1]);
    }
  });
  EXPECT_EQ(o.fallbacks, 0) << o.fallback_reasons;
}

// Note [Higher-order ops in AOT autograd]: the forward cond and its backward cond (the bodies'
// vjp graphs) compile through AOT autograd into generated code; gradients equal eager's.
TEST(HigherOrderCodegen, CondGradientsCompileThroughAotAutograd) {
  const Outcome o = watch_backend("kiln_hop_codegen_cond_grad", [] {
    // The true branch reads x and w, the false one only x (w's gradient is zero there), and an
    // integer output has no gradient.
    auto fn = [](const Tensor& x, const Tensor& w, const Tensor& k) {
      std::vector<Tensor> out = cond(
          x.sum() > 0,
          [](const std::vector<Tensor>& v) {
            return std::vector<Tensor>{(v[0] * v[1]).sin() + v[0], v[2] + 1};
          },
          [](const std::vector<Tensor>& v) {
            return std::vector<Tensor>{(v[0] * v[0]).exp(), v[2] * 2};
          },
          {x, w, k});
      return (out[0] * out[1].to(kFloat64)).sum();
    };
    auto f = compile(fn, inductor());
    const Tensor w = tensor({0.5, -1.0, 2.0}, kFloat64).requires_grad_();
    const Tensor k = tensor({1, 2, 3}, kInt64);
    for (const Tensor& data :
         {tensor({1.0, 2.0, 3.0}, kFloat64), tensor({-1.0, -2.0, 0.5}, kFloat64)}) {
      SCOPED_TRACE(data.sum().item<double>());
      const Tensor x = data.clone().requires_grad_();
      const Tensor y = f(x, w, k);
      expect_equal(y, fn(x, w, k));
      expect_same_gradients(y, {x, w}, fn(x, w, k), {x, w});  // false_fn does not read w
    }
    EXPECT_EQ(f.stats().compiles, 1);
  });
  EXPECT_EQ(o.fallbacks, 0) << o.fallback_reasons;
  // Forward and backward each compiled one cond: four branch bodies in the generated code.
  EXPECT_EQ(count_of(o.output_code, "true_fn_kernel0("), 2u) << o.output_code;
}

// Note [Branches of different sizes]: the output is [u0]; the backward cond's tangent is too, and
// each branch's vjp takes the tangent of the size it returned.
TEST(HigherOrderCodegen, GradientsThroughBranchesOfDifferentSizes) {
  const Outcome o = watch_backend("kiln_hop_codegen_cond_sizes", [] {
    auto fn = [](const Tensor& x, const Tensor& w) {
      const Tensor picked = cond(
          x.sum() > 0,
          [](const std::vector<Tensor>& v) {
            return std::vector<Tensor>{(v[0] * v[1]).narrow(0, 1, 2).sin()};
          },
          [](const std::vector<Tensor>& v) {
            return std::vector<Tensor>{cat({v[0] * v[1], v[0].exp(), v[1]})};
          },
          {x, w})[0];
      return (picked * picked).sum() + picked.amax();
    };
    auto f = compile(fn, inductor());
    const Tensor w = tensor({0.5, -1.0, 2.0}, kFloat64).requires_grad_();
    for (const Tensor& data :
         {tensor({1.0, 2.0, 3.0}, kFloat64), tensor({-1.0, -2.0, 0.5}, kFloat64)}) {
      SCOPED_TRACE(data.sum().item<double>());
      const Tensor x = data.clone().requires_grad_();
      const Tensor y = f(x, w);
      expect_equal(y, fn(x, w));
      expect_same_gradients(y, {x, w}, fn(x, w), {x, w});
    }
    EXPECT_EQ(f.stats().compiles, 1);
  });
  EXPECT_EQ(o.fallbacks, 0) << o.fallback_reasons;
}

// Note [A while_loop's history]: the forward saves each iteration's carries, the backward walks
// them in reverse; gradients of the initial carry and of a closed-over weight equal eager's, for
// trip counts 0, 1 and more.
TEST(HigherOrderCodegen, WhileLoopGradientsCompileThroughAotAutograd) {
  const Outcome o = watch_backend("kiln_hop_codegen_while_grad", [] {
    auto fn = [](const Tensor& n, const Tensor& x, const Tensor& w) {
      std::vector<Tensor> out =
          while_loop([&](const std::vector<Tensor>& c) { return c[0] < n; },
                     [&](const std::vector<Tensor>& c) {
                       return std::vector<Tensor>{c[0] + 1, (c[1] * w).tanh() + c[1] * 0.5};
                     },
                     {zeros({}, kInt64), x});
      return (out[1] * out[1]).sum();
    };
    auto f = compile(fn, inductor());
    const Tensor w = tensor({0.5, -1.5, 2.0}, kFloat64).requires_grad_();
    for (int64_t n : {0, 1, 4, 2}) {
      SCOPED_TRACE(n);
      const Tensor trips = scalar_tensor(n, kInt64);
      const Tensor x = tensor({0.25, -1.0, 0.75}, kFloat64).requires_grad_();
      const Tensor y = f(trips, x, w);
      expect_equal(y, fn(trips, x, w));
      expect_same_gradients(y, {x, w}, fn(trips, x, w), {x, w});  // no iteration: w unread
    }
    EXPECT_EQ(f.stats().compiles, 1);
  });
  EXPECT_EQ(o.fallbacks, 0) << o.fallback_reasons;
}

// A scan is one extern step whose combine_fn is kernels of the generated code, over symbolic
// lengths; its backward (Note [A scan's backward]) is another scan, compiled too, and gradients
// of the initial carry, the xs and a closed-over weight equal the unrolled eager program's.
TEST(HigherOrderCodegen, ScanAndItsBackwardAreKernelsOfTheGeneratedCode) {
  const Outcome o = watch_backend("kiln_hop_codegen_scan", [] {
    auto fn = [](const Tensor& h0, const Tensor& xs, const Tensor& w) {
      ScanResult r = scan(
          [&](const std::vector<Tensor>& c, const std::vector<Tensor>& x) {
            Tensor h = (c[0] * w + x[0]).tanh();
            return std::pair{std::vector<Tensor>{h}, std::vector<Tensor>{h.exp(), h.sum()}};
          },
          {h0}, {xs}, 0, /*reverse=*/true);
      return (r.carry[0] * 2).sum() + r.ys[0].sum() + (r.ys[1] * r.ys[1]).sum();
    };
    auto f = compile(fn, inductor(/*dynamic=*/true));
    const Tensor w = tensor({0.5, -1.5, 2.0}, kFloat64).requires_grad_();
    for (int64_t n : {4, 7, 2}) {
      SCOPED_TRACE(n);
      const Tensor h0 = tensor({0.25, -1.0, 0.75}, kFloat64).requires_grad_();
      const Tensor xs =
          (arange(static_cast<double>(3 * n), kFloat64).reshape({n, 3}) / 9).cos().requires_grad_();
      const Tensor y = f(h0, xs, w);
      expect_equal(y, fn(h0, xs, w));
      expect_same_gradients(y, {h0, xs, w}, fn(h0, xs, w), {h0, xs, w});
    }
    EXPECT_EQ(f.stats().compiles, 1);
  });
  EXPECT_EQ(o.fallbacks, 0) << o.fallback_reasons;
  // The forward's combine_fn and the backward's, each in the generated code.
  EXPECT_GE(count_of(o.output_code, "combine_fn_kernel0("), 2u) << o.output_code;
}

// A cond inside a loop body, two floating carries, module parameters closed over, symbolic
// sizes: the backward loop differentiates the body's cond through its own vjp bodies.
TEST(HigherOrderCodegen, GradientsThroughACondInsideALoopOverSymbolicSizes) {
  const Outcome o = watch_backend("kiln_hop_codegen_nested_grad", [] {
    nn::Linear fc(3, 3);
    auto fn = [](nn::Module& m, const Tensor& n, const Tensor& x) {
      std::vector<Tensor> out = while_loop(
          [&](const std::vector<Tensor>& c) { return c[0] < n; },
          [&](const std::vector<Tensor>& c) {
            Tensor next = cond(
                c[1].sum() > 0,
                [&](const std::vector<Tensor>& v) { return std::vector<Tensor>{m(v[0]).tanh()}; },
                [&](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * -0.5}; },
                {c[1]})[0];
            return std::vector<Tensor>{c[0] + 1, next, c[2] + next.sum({1}, true)};
          },
          {zeros({}, kInt64), x, zeros({x.size(0), 1})});
      return out[1].sum() + (out[2] * out[2]).sum();
    };
    CompileOptions options = inductor(/*dynamic=*/true);
    auto f = compile(fn, options);
    for (int64_t rows : {2, 5}) {
      for (int64_t n : {0, 1, 3}) {
        SCOPED_TRACE(fmt::format("rows {} n {}", rows, n));
        const Tensor trips = scalar_tensor(n, kInt64);
        const Tensor data = randn({rows, 3});
        const Tensor x = data.clone().requires_grad_();
        const Tensor y = f(fc, trips, x);
        expect_equal(y, fn(fc, trips, x));
        const Tensor x_eager = data.clone().requires_grad_();
        expect_same_gradients(y, {x, fc.weight, fc.bias}, fn(fc, trips, x_eager),
                              {x_eager, fc.weight, fc.bias});
      }
    }
  });
  EXPECT_EQ(o.fallbacks, 0) << o.fallback_reasons;
}

// Top-1 routing as a mixture-of-experts layer does it (bench/control_flow.cpp): each expert's
// rows have an unbacked count, and buffers sized by it are allocated after nonzero binds it
// (Note [Buffer reuse] in src/sched/memory_plan.cpp), not in a slot allocated before.
Tensor route(const Tensor& x, const Tensor& gate) {
  const Tensor logits = x.matmul(gate);
  const Tensor probs = softmax(logits, 1);
  const Tensor expert = logits.argmax(1);
  Tensor out = zeros_like(x);
  for (int64_t e = 0; e < 3; ++e) {
    const Tensor rows = (expert == e).nonzero().squeeze(1);
    const Tensor y =
        (x.index_select(0, rows) * (e + 2)).tanh() * probs.index_select(0, rows).narrow(1, e, 1);
    index_put_(out, {rows}, y);
  }
  return out;
}

TEST(UnbackedCodegen, RoutingRowsToExpertsIsOneGraph) {
  const Outcome o = watch_backend("kiln_routing_codegen", [] {
    auto f = compile(route, inductor());
    const Tensor gate = randn({4, 3});
    for (const Tensor& x : {randn({16, 4}), randn({16, 4}) * 3, zeros({16, 4})}) {
      expect_equal(f(x, gate), route(x, gate));
    }
    // Every row to one expert: the other two get none.
    const Tensor one_expert =
        tensor({1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f})
            .reshape({4, 3});
    expect_equal(f(ones({16, 4}), one_expert), route(ones({16, 4}), one_expert));
    EXPECT_EQ(f.stats().compiles, 1);
    EXPECT_EQ(f.stats().graphs, 1);
  });
  EXPECT_EQ(o.fallbacks, 0) << o.fallback_reasons;
}

CompileOptions capturing_scalars() {
  CompileOptions o = inductor();
  o.capture_scalar_outputs = true;
  return o;
}

TEST(ScalarOutputCodegen, AnItemSizesLaterKernelsWithNoFallback) {
  const Outcome o = watch_backend("kiln_item_codegen", [] {
    auto fn = [](const Tensor& x, const Tensor& n) {
      SymInt k = n.item<SymInt>();
      check_is_size(k);
      check(k <= x.size(0));
      return (x.narrow(0, 0, k) * 2).sum({0}) + ones({k}).sum();
    };
    auto f = compile(fn, capturing_scalars());
    const Tensor x = randn({6, 3});
    for (int64_t k : {3, 0, 6, 1}) {
      SCOPED_TRACE(k);
      const Tensor n = scalar_tensor(k, kInt64);
      expect_equal(f(x, n), fn(x, n));
    }
    EXPECT_EQ(f.stats().compiles, 1);
    EXPECT_EQ(f.stats().graphs, 1);
    // The check is made where the value is read, naming the line that asserted it.
    const std::string msg = error_message([&] { f(x, scalar_tensor(int64_t{7}, kInt64)); });
    EXPECT_NE(msg.find("kiln::check failed: u0 = 7"), std::string::npos) << msg;
    EXPECT_NE(msg.find("higher_order_codegen_test.cpp"), std::string::npos) << msg;
    const std::string negative = error_message([&] { f(x, scalar_tensor(int64_t{-1}, kInt64)); });
    EXPECT_NE(negative.find("u0 = -1"), std::string::npos) << negative;
  });
  EXPECT_EQ(o.fallbacks, 0) << o.fallback_reasons;
}

TEST(ScalarOutputCodegen, TwoValuesReadFromOneTensor) {
  const Outcome o = watch_backend("kiln_tolist_codegen", [] {
    auto fn = [](const Tensor& x, const Tensor& bounds) {
      std::vector<SymInt> b = bounds.to_vector<SymInt>();
      check_is_size(b[0]);
      check_is_size(b[1]);
      check(b[0] <= 5);
      check(b[1] <= 5);
      return x.narrow(0, b[0], b[1]).cumsum(0);
    };
    auto f = compile(fn, capturing_scalars());
    const Tensor x = arange(10).to(kFloat32);
    for (auto [start, length] : {std::pair<int64_t, int64_t>{2, 3}, {0, 5}, {5, 5}, {4, 0}}) {
      const Tensor bounds = tensor({start, length}, kInt64);
      expect_equal(f(x, bounds), fn(x, bounds));
    }
    EXPECT_EQ(f.stats().compiles, 1);
  });
  EXPECT_EQ(o.fallbacks, 0) << o.fallback_reasons;
}

TEST(ScalarOutputCodegen, GradientsThroughAGraphThatReadsAValue) {
  const Outcome o = watch_backend("kiln_item_grad_codegen", [] {
    auto fn = [](const Tensor& x, const Tensor& w, const Tensor& n) {
      SymInt k = n.item<SymInt>();
      check_is_size(k);
      check(k <= 4);
      return ((x.narrow(0, 0, k) * w).tanh() * x.narrow(0, 0, k)).sum();
    };
    auto f = compile(fn, capturing_scalars());
    const Tensor w = tensor({0.5, -1.0, 2.0}, kFloat64).requires_grad_();
    for (int64_t k : {2, 4, 0, 1}) {
      SCOPED_TRACE(k);
      const Tensor n = scalar_tensor(k, kInt64);
      const Tensor x = arange(12, kFloat64).reshape({4, 3}).div(7).requires_grad_();
      const Tensor y = f(x, w, n);
      expect_equal(y, fn(x, w, n));
      std::vector<Tensor> g = grad({y}, {x, w});
      std::vector<Tensor> e = grad({fn(x, w, n)}, {x, w});
      expect_equal(g[0], e[0]);
      expect_equal(g[1], e[1]);
    }
    EXPECT_EQ(f.stats().compiles, 1);
  });
  EXPECT_EQ(o.fallbacks, 0) << o.fallback_reasons;
}

}  // namespace
}  // namespace kiln
