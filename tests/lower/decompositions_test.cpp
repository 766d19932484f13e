// Decompositions (src/lower/decompositions.h): every decomposed op, run eager (the graph
// interpreter on the original graph) and decomposed (on the rewritten graph), on the same inputs:
// float32 and float64, size-1 and zero-size dims, non-contiguous inputs, special values, symbolic
// sizes, captured graphs, and the errors eager raises at run time.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <variant>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "src/capture/backend.h"
#include "src/graph/graph.h"
#include "src/graph/meta_inference.h"
#include "src/lower/decompositions.h"
#include "src/sym/expr.h"

namespace kiln::lower {
namespace {

using graph::Arg;
using graph::Graph;
using graph::TensorMeta;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// An argument of the op under test: input tensor i, or a constant.
struct In {
  int index;
};
using ArgSpec = std::variant<In, IValue>;

// A graph with one placeholder per input (with the input's exact meta) and one call of `op`,
// returning every output.
Graph single_op_graph(std::string_view op, const std::vector<Tensor>& inputs,
                      const std::vector<ArgSpec>& specs) {
  Graph g;
  std::vector<graph::Value*> ph;
  for (size_t i = 0; i < inputs.size(); ++i)
    ph.push_back(g.add_placeholder("arg" + std::to_string(i), TensorMeta::of(inputs[i])));
  std::vector<Arg> args;
  for (const ArgSpec& s : specs) {
    if (const In* in = std::get_if<In>(&s)) {
      args.push_back(Arg::value(ph.at(static_cast<size_t>(in->index))));
    } else {
      args.push_back(Arg::constant(std::get<IValue>(s)));
    }
  }
  const OpId id = op_id(op);
  std::optional<std::vector<TensorMeta>> metas = graph::infer_output_metas(id, args);
  if (!metas) throw Error("test: metas of " + std::string(op) + " cannot be inferred");
  g.set_outputs(g.add_call(id, std::move(args), std::move(*metas)));
  return g;
}

// Decomposes a copy of g and checks the structural promises: it verifies, and no op with a
// decomposition is left.
Graph decomposed(const Graph& g) {
  Graph d = g.clone();
  decompose(d);
  verify(d);
  for (const graph::Node* n : d.calls())
    EXPECT_FALSE(has_decomposition(n->op())) << "left: " << graph::to_string(*n);
  return d;
}

std::vector<Tensor> clones(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.clone());
  return out;
}

double tolerance(ScalarType t) {
  switch (t) {
    case kFloat64:
      return 1e-11;
    case kFloat32:
      return 2e-5;
    default:
      return 1e-2;  // float16 / bfloat16
  }
}

// Same dtype and sizes; values within the dtype's tolerance (relative, with an absolute floor
// for values near 0); NaN where eager has NaN, infinities equal; integers exact.
void expect_matches(const Tensor& actual, const Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  ASSERT_EQ(actual.sizes().vec(), expected.sizes().vec()) << what;
  const std::vector<double> a = actual.to(kFloat64).contiguous().to_vector<double>();
  const std::vector<double> e = expected.to(kFloat64).contiguous().to_vector<double>();
  const double tol = is_floating(expected.dtype()) ? tolerance(expected.dtype()) : 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(e[i])) {
      EXPECT_TRUE(std::isnan(a[i])) << what << " element " << i << ": " << a[i] << " vs NaN";
    } else if (std::isinf(e[i])) {
      EXPECT_EQ(a[i], e[i]) << what << " element " << i;
    } else {
      EXPECT_NEAR(a[i], e[i], tol * (1 + std::abs(e[i]))) << what << " element " << i;
    }
  }
}

// Runs g eagerly and decomposed on copies of the same inputs; compares outputs and inputs
// afterwards (in-place updates such as batch_norm's running statistics).
void expect_same_as_eager(const Graph& g, const std::vector<Tensor>& inputs) {
  const Graph d = decomposed(g);
  const std::vector<Tensor> eager_in = clones(inputs), decomposed_in = clones(inputs);
  // Non-contiguous inputs stay as they are: the pure ops get the originals.
  bool mutates = false;
  for (const graph::Node* n : g.calls()) mutates |= n->mutates();
  const std::vector<Tensor> expected = graph::interpret(g, mutates ? eager_in : inputs);
  const std::vector<Tensor> actual = graph::interpret(d, mutates ? decomposed_in : inputs);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    expect_matches(actual[i], expected[i], "output " + std::to_string(i));
  if (mutates)
    for (size_t i = 0; i < inputs.size(); ++i)
      expect_matches(decomposed_in[i], eager_in[i], "input " + std::to_string(i) + " after");
}

void check(std::string_view op, const std::vector<Tensor>& inputs,
           const std::vector<ArgSpec>& args) {
  SCOPED_TRACE(std::string(op));
  expect_same_as_eager(single_op_graph(op, inputs, args), inputs);
}

IValue i(int64_t v) { return IValue(v); }
IValue f(double v) { return IValue(v); }
IValue ints(std::vector<int64_t> v) { return IValue(v); }
IValue none() { return IValue(); }
IValue s(double v) { return IValue(Scalar(v)); }
IValue si(int64_t v) { return IValue(Scalar(v)); }

Tensor rnd(std::vector<int64_t> sizes, ScalarType dtype = kFloat32) {
  return randn(IntArrayRef(sizes)).to(dtype);
}
// A [rows, cols] tensor with non-contiguous (transposed) strides.
Tensor transposed(int64_t rows, int64_t cols, ScalarType dtype = kFloat32) {
  return rnd({cols, rows}, dtype).t();
}

const ScalarType kFloatTypes[] = {kFloat32, kFloat64};

// ---- softmax family ----

TEST(Decompositions, SoftmaxAndLogSoftmaxMatchEager) {
  manual_seed(1);
  for (const char* op : {"softmax", "log_softmax"}) {
    for (ScalarType dt : kFloatTypes) {
      check(op, {rnd({4, 7}, dt)}, {In{0}, i(1), none()});
      check(op, {rnd({4, 7}, dt)}, {In{0}, i(0), none()});
      check(op, {rnd({3, 1, 5}, dt)}, {In{0}, i(-1), none()});
      check(op, {rnd({3, 1, 5}, dt)}, {In{0}, i(1), none()});
      check(op, {rnd({2, 0, 3}, dt)}, {In{0}, i(1), none()});  // an empty row
      check(op, {rnd({0, 5}, dt)}, {In{0}, i(1), none()});
      check(op, {rnd({}, dt)}, {In{0}, i(0), none()});
      check(op, {transposed(5, 6, dt)}, {In{0}, i(1), none()});
    }
    // dtype= converts first; integer input with a floating dtype.
    check(op, {rnd({3, 4})}, {In{0}, i(1), IValue(kFloat64)});
    check(op, {randint(0, 5, {3, 4})}, {In{0}, i(1), IValue(kFloat32)});
    // NaN, +inf and a row of -inf make their rows NaN, as eager.
    const Tensor special =
        tensor({1.0, kNaN, 2.0, kInf, 1.0, 0.0, -kInf, -kInf, -kInf, -kInf, 3.0, 4.0}).view({4, 3});
    check(op, {special}, {In{0}, i(1), none()});
  }
}

// ---- reductions ----

TEST(Decompositions, MeanMatchesEagerIncludingDtypeAndEmptyReductions) {
  manual_seed(2);
  for (ScalarType dt : kFloatTypes) {
    check("mean", {rnd({3, 4, 5}, dt)}, {In{0}, ints({1}), IValue(false), none()});
    check("mean", {rnd({3, 4, 5}, dt)}, {In{0}, ints({0, 2}), IValue(true), none()});
    check("mean", {rnd({3, 4, 5}, dt)}, {In{0}, ints({}), IValue(false), none()});
    check("mean", {rnd({3, 0}, dt)}, {In{0}, ints({1}), IValue(false), none()});  // NaN
    check("mean", {transposed(4, 3, dt)}, {In{0}, ints({-1}), IValue(false), none()});
  }
  check("mean", {randint(0, 9, {3, 4})}, {In{0}, ints({1}), IValue(false), IValue(kFloat64)});
  check("mean", {rnd({3, 4})}, {In{0}, ints({1}), IValue(true), IValue(kFloat64)});
}

TEST(Decompositions, VarAndStdMatchEagerForEveryCorrection) {
  manual_seed(3);
  for (const char* op : {"var", "std"}) {
    for (ScalarType dt : kFloatTypes) {
      for (double correction : {0.0, 1.0, 2.5}) {
        check(op, {rnd({4, 6}, dt)}, {In{0}, ints({1}), f(correction), IValue(false)});
        check(op, {rnd({4, 6}, dt)}, {In{0}, ints({}), f(correction), IValue(true)});
      }
      check(op, {rnd({5, 2}, dt)}, {In{0}, ints({1}), f(2.0), IValue(false)});  // N - c = 0: inf
      check(op, {rnd({5, 1}, dt)}, {In{0}, ints({1}), f(1.0), IValue(false)});  // 0/0: NaN
      check(op, {rnd({3, 0}, dt)}, {In{0}, ints({1}), f(1.0), IValue(false)});
      check(op, {transposed(4, 5, dt)}, {In{0}, ints({0}), f(1.0), IValue(true)});
    }
  }
}

TEST(Decompositions, LogsumexpIsStableAndHandlesInfinities) {
  manual_seed(4);
  for (ScalarType dt : kFloatTypes) {
    check("logsumexp", {rnd({3, 5}, dt)}, {In{0}, ints({1}), IValue(false)});
    check("logsumexp", {rnd({3, 5}, dt)}, {In{0}, ints({0, 1}), IValue(true)});
    check("logsumexp", {rnd({3, 0}, dt)}, {In{0}, ints({1}), IValue(false)});  // -inf
    check("logsumexp", {rnd({3, 0}, dt)}, {In{0}, ints({1}), IValue(true)});
    check("logsumexp", {transposed(3, 4, dt)}, {In{0}, ints({1}), IValue(true)});
    // Large values do not overflow; -inf rows give -inf, +inf gives +inf, NaN gives NaN.
    const Tensor special =
        tensor({1000.0, 1000.0, 999.0, -kInf, -kInf, -kInf, kInf, 1.0, -kInf, kNaN, 1.0, 2.0}, dt)
            .view({4, 3});
    check("logsumexp", {special}, {In{0}, ints({1}), IValue(false)});
  }
}

TEST(Decompositions, NormMatchesEagerForEveryOrder) {
  manual_seed(5);
  for (ScalarType dt : kFloatTypes) {
    for (double p : {0.0, 1.0, 2.0, 3.0, 0.5, kInf, -kInf}) {
      Tensor x = rnd({4, 5}, dt);
      x.select(0, 1).select(0, 2).fill_(0);  // a zero for p = 0
      check("norm", {x}, {In{0}, s(p), ints({1}), IValue(false)});
      check("norm", {x}, {In{0}, s(p), ints({}), IValue(true)});
      check("norm", {rnd({2, 0}, dt)}, {In{0}, s(p), ints({1}), IValue(false)});
    }
    check("norm", {transposed(3, 4, dt)}, {In{0}, si(2), ints({0}), IValue(false)});
  }
}

TEST(Decompositions, MaxMinDimAreAmaxAndArgmax) {
  manual_seed(20);
  for (const char* op : {"max.dim", "min.dim"}) {
    for (ScalarType dt : {kFloat32, kFloat64, kInt32}) {
      check(op, {rnd({4, 5}).mul(3).to(dt)}, {In{0}, i(1), IValue(false)});
      check(op, {rnd({4, 5}).mul(3).to(dt)}, {In{0}, i(0), IValue(true)});
      check(op, {transposed(3, 4).to(dt)}, {In{0}, i(-1), IValue(false)});
    }
    check(op, {tensor({1.0, kNaN, 3.0, kNaN, 2.0, 2.0}).view({2, 3})},
          {In{0}, i(1), IValue(false)});
    check(op, {tensor({1.0, 1.0, 0.0}).view({1, 3})}, {In{0}, i(1), IValue(true)});  // ties
  }
}

// ---- pointwise ----

TEST(Decompositions, ActivationsMatchEager) {
  manual_seed(6);
  for (ScalarType dt : kFloatTypes) {
    for (const Tensor& x : {rnd({3, 4}, dt), transposed(3, 4, dt), rnd({0, 2}, dt), rnd({}, dt)}) {
      check("gelu", {x}, {In{0}, IValue("none")});
      check("gelu", {x}, {In{0}, IValue("tanh")});
      check("silu", {x}, {In{0}});
      check("relu", {x}, {In{0}});
      check("softplus", {x}, {In{0}, si(1), si(20)});
      check("softplus", {x * 10}, {In{0}, s(2.0), s(1.0)});
    }
  }
  check("relu", {tensor({-1.0, kNaN, 2.0, -0.0})}, {In{0}});
  check("relu", {randint(-5, 5, {6}, TensorOptions(kInt32))}, {In{0}});
  check("relu", {randint(0, 200, {6}, TensorOptions(kUInt8))}, {In{0}});
  check("gelu", {rnd({8}, kFloat16)}, {In{0}, IValue("none")});
}

TEST(Decompositions, NanToNumMatchesEager) {
  for (ScalarType dt : {kFloat32, kFloat64, kFloat16}) {
    const Tensor x = tensor({1.0, kNaN, kInf, -kInf, -2.5}, dt);
    check("nan_to_num", {x}, {In{0}, none(), none(), none()});
    check("nan_to_num", {x}, {In{0}, f(7.0), f(100.0), f(-100.0)});
    check("nan_to_num", {x}, {In{0}, none(), f(1e300), none()});  // overflows to inf as eager
  }
  check("nan_to_num", {randint(-5, 5, {4})}, {In{0}, none(), none(), none()});
}

TEST(Decompositions, MaskedFillKeepsSelfsDtype) {
  manual_seed(7);
  const Tensor mask = rand({3, 4}) > 0.5;
  check("masked_fill", {rnd({3, 4}), mask}, {In{0}, In{1}, si(3)});
  check("masked_fill", {rnd({3, 4}, kFloat64), mask}, {In{0}, In{1}, s(-kInf)});
  check("masked_fill", {randint(0, 9, {3, 4}), mask}, {In{0}, In{1}, s(2.7)});  // truncated
  check("masked_fill", {randint(0, 9, {3, 4}) > 4, mask}, {In{0}, In{1}, IValue(Scalar(true))});
  check("masked_fill", {rnd({1, 4}), mask}, {In{0}, In{1}, s(0.5)});  // self broadcasts
  check("masked_fill", {transposed(3, 4), mask}, {In{0}, In{1}, s(0.5)});
}

TEST(Decompositions, AddcmulAddcdivMatchEager) {
  manual_seed(8);
  for (ScalarType dt : kFloatTypes) {
    const Tensor a = rnd({3, 4}, dt), b = rnd({4}, dt), c = rnd({3, 1}, dt) + 3;
    for (const IValue& v : {si(1), s(0.5), si(-2)}) {
      check("addcmul", {a, b, c}, {In{0}, In{1}, In{2}, v});
      check("addcdiv", {a, b, c}, {In{0}, In{1}, In{2}, v});
    }
  }
  // Mixed dtypes promote; integers wrap.
  check("addcmul", {rnd({3}), rnd({3}, kFloat64), rnd({3})}, {In{0}, In{1}, In{2}, si(2)});
  check("addcmul",
        {randint(0, 200, {4}, TensorOptions(kUInt8)), randint(0, 200, {4}, TensorOptions(kUInt8)),
         randint(0, 200, {4}, TensorOptions(kUInt8))},
        {In{0}, In{1}, In{2}, si(3)});
  check("addcdiv", {randint(0, 9, {4}), rnd({4}), rnd({4}) + 3}, {In{0}, In{1}, In{2}, s(0.5)});
}

TEST(Decompositions, LerpMatchesEagerAtBothEnds) {
  manual_seed(9);
  for (ScalarType dt : kFloatTypes) {
    const Tensor a = rnd({3, 4}, dt), b = rnd({4}, dt);
    for (double w : {0.0, 0.3, 0.5, 0.7, 1.0, -1.5}) check("lerp", {a, b}, {In{0}, In{1}, s(w)});
    const Tensor w = tensor({0.0, 0.3, 0.5, 1.0}, dt);
    check("lerp.Tensor", {a, b, w}, {In{0}, In{1}, In{2}});
    check("lerp.Tensor", {transposed(4, 3, dt), rnd({4, 1}, dt), rnd({3}, dt)},
          {In{0}, In{1}, In{2}});
  }
}

TEST(Decompositions, InPlacePointwiseOpsBecomeOutOfPlaceOpsAndCopy) {
  manual_seed(21);
  for (ScalarType dt : kFloatTypes) {
    const Tensor x = rnd({3, 4}, dt), y = rnd({4}, dt);
    check("relu_", {x}, {In{0}});
    check("sigmoid_", {x}, {In{0}});
    check("add_", {x, y}, {In{0}, In{1}, si(2)});
    check("add_.Scalar", {x}, {In{0}, s(1.5), si(1)});
    check("mul_", {x, rnd({3, 1}, dt)}, {In{0}, In{1}});
    check("div_.Scalar", {x}, {In{0}, s(3.0), IValue("")});
    check("clamp_", {x}, {In{0}, s(-0.5), s(0.5)});
    check("masked_fill_", {x, rand({3, 4}) > 0.5}, {In{0}, In{1}, si(7)});
    check("lerp_", {x, y}, {In{0}, In{1}, s(0.25)});
    check("addcmul_", {x, y, y}, {In{0}, In{1}, In{2}, s(0.5)});
  }
  // A float32 self updated with a float64 operand: computed in float64, stored as float32.
  check("add_", {rnd({3}), rnd({3}, kFloat64)}, {In{0}, In{1}, si(1)});
  check("add_", {randint(0, 9, {3}), randint(0, 9, {3})}, {In{0}, In{1}, si(1)});
  // The decomposed graph is an out-of-place op and a copy_ into the input.
  const Graph g = single_op_graph("relu_", {rnd({3})}, {In{0}});
  const Graph d = decomposed(g);
  std::vector<std::string> ops;
  for (const graph::Node* n : d.calls()) ops.push_back(n->op_def().name);
  EXPECT_EQ(ops, (std::vector<std::string>{"clamp", "copy_"}));
}

// ---- normalizations ----

TEST(Decompositions, NativeLayerNormMatchesEagerIncludingStatistics) {
  manual_seed(10);
  for (ScalarType dt : kFloatTypes) {
    const Tensor x = rnd({4, 3, 8}, dt);
    check("native_layer_norm", {x, rnd({8}, dt), rnd({8}, dt)},
          {In{0}, ints({8}), In{1}, In{2}, f(1e-5)});
    check("native_layer_norm", {x}, {In{0}, ints({3, 8}), none(), none(), f(1e-3)});
    check("native_layer_norm", {x, rnd({8}, dt)}, {In{0}, ints({8}), In{1}, none(), f(1e-5)});
    check("native_layer_norm", {transposed(5, 6, dt), rnd({6}, dt), rnd({6}, dt)},
          {In{0}, ints({6}), In{1}, In{2}, f(1e-5)});
    check("native_layer_norm", {rnd({0, 6}, dt)}, {In{0}, ints({6}), none(), none(), f(1e-5)});
    check("native_layer_norm", {rnd({3, 1}, dt)}, {In{0}, ints({1}), none(), none(), f(1e-5)});
    check("layer_norm", {x, rnd({8}, dt), rnd({8}, dt)}, {In{0}, ints({8}), In{1}, In{2}, f(1e-5)});
  }
  check("native_layer_norm", {rnd({4, 16}, kFloat16)},
        {In{0}, ints({16}), none(), none(), f(1e-5)});
}

TEST(Decompositions, NativeBatchNormTrainingUpdatesRunningStatsAsEager) {
  manual_seed(11);
  for (ScalarType dt : kFloatTypes) {
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{6, 3}, {4, 3, 5}, {2, 3, 4, 4}, {1, 3, 2}}) {
      const Tensor x = rnd(shape, dt), w = rnd({3}, dt), b = rnd({3}, dt);
      const Tensor rm = rnd({3}, dt), rv = rand({3}).to(dt) + 0.5;
      check("native_batch_norm", {x, w, b, rm, rv},
            {In{0}, In{1}, In{2}, In{3}, In{4}, IValue(true), f(0.1), f(1e-5)});
      check("native_batch_norm", {x},
            {In{0}, none(), none(), none(), none(), IValue(true), f(0.3), f(1e-5)});
      check("native_batch_norm", {x, w, b, rm, rv},
            {In{0}, In{1}, In{2}, In{3}, In{4}, IValue(false), f(0.1), f(1e-5)});
      check("batch_norm", {x, rm, rv, w, b},
            {In{0}, In{1}, In{2}, In{3}, In{4}, IValue(true), f(0.1), f(1e-5)});
    }
    // An empty batch: statistics 0 and 1/sqrt(eps), running stats untouched.
    check("native_batch_norm", {rnd({0, 3}, dt), rnd({3}, dt), rnd({3}, dt)},
          {In{0}, none(), none(), In{1}, In{2}, IValue(true), f(0.1), f(1e-5)});
  }
  // float32 input with float64 running statistics.
  check("native_batch_norm", {rnd({5, 2}), rnd({2}, kFloat64), rand({2}, TensorOptions(kFloat64))},
        {In{0}, none(), none(), In{1}, In{2}, IValue(true), f(0.1), f(1e-5)});
}

TEST(Decompositions, NativeGroupNormMatchesEager) {
  manual_seed(12);
  for (ScalarType dt : kFloatTypes) {
    const Tensor x = rnd({2, 6, 3, 2}, dt), w = rnd({6}, dt), b = rnd({6}, dt);
    for (int64_t groups : {1, 2, 3, 6})
      check("native_group_norm", {x, w, b}, {In{0}, In{1}, In{2}, i(groups), f(1e-5)});
    check("native_group_norm", {rnd({3, 4}, dt)}, {In{0}, none(), none(), i(2), f(1e-5)});
    check("native_group_norm", {rnd({0, 4, 2}, dt)}, {In{0}, none(), none(), i(2), f(1e-5)});
    check("native_group_norm", {rnd({2, 4, 3}, dt).transpose(1, 2).contiguous().transpose(1, 2)},
          {In{0}, none(), none(), i(2), f(1e-5)});
    check("group_norm", {x, w, b}, {In{0}, i(3), In{1}, In{2}, f(1e-5)});
  }
}

TEST(Decompositions, NativeLayerNormBackwardMatchesEager) {
  manual_seed(22);
  for (ScalarType dt : kFloatTypes) {
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{4, 6}, {2, 3, 5}, {6}, {0, 4}}) {
      const Tensor x = rnd(shape, dt), g = rnd(shape, dt), w = rnd({shape.back()}, dt);
      const auto [y, mean, rstd] = native_layer_norm(x, {shape.back()}, w, {}, 1e-5);
      for (const std::vector<int64_t>& mask :
           std::vector<std::vector<int64_t>>{{1, 1, 1}, {1, 0, 0}, {0, 1, 1}}) {
        check("native_layer_norm_backward", {g, x, mean, rstd, w},
              {In{0}, In{1}, ints({shape.back()}), In{2}, In{3}, In{4}, ints(mask)});
        check("native_layer_norm_backward", {g, x, mean, rstd},
              {In{0}, In{1}, ints({shape.back()}), In{2}, In{3}, none(), ints(mask)});
      }
    }
    const Tensor x = rnd({3, 2, 4}, dt), g = rnd({3, 2, 4}, dt);
    const auto [y, mean, rstd] = native_layer_norm(x, {2, 4}, {}, {}, 1e-5);
    check("native_layer_norm_backward", {g, x, mean, rstd},
          {In{0}, In{1}, ints({2, 4}), In{2}, In{3}, none(), ints({1, 1, 1})});
  }
}

TEST(Decompositions, NativeBatchNormBackwardMatchesEager) {
  manual_seed(23);
  for (ScalarType dt : kFloatTypes) {
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{6, 3}, {2, 3, 4}, {2, 3, 2, 2}, {0, 3}}) {
      const Tensor x = rnd(shape, dt), g = rnd(shape, dt), w = rnd({3}, dt);
      const Tensor mean = rnd({3}, dt), invstd = rand({3}).to(dt) + 0.5;
      for (bool training : {true, false}) {
        for (const std::vector<int64_t>& mask :
             std::vector<std::vector<int64_t>>{{1, 1, 1}, {1, 0, 0}, {0, 1, 1}}) {
          check("native_batch_norm_backward", {g, x, w, mean, invstd},
                {In{0}, In{1}, In{2}, In{3}, In{4}, IValue(training), ints(mask)});
          check("native_batch_norm_backward", {g, x, mean, invstd},
                {In{0}, In{1}, none(), In{2}, In{3}, IValue(training), ints(mask)});
        }
      }
    }
  }
}

TEST(Decompositions, NativeGroupNormBackwardMatchesEager) {
  manual_seed(24);
  for (ScalarType dt : kFloatTypes) {
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{2, 6, 3}, {3, 6}, {2, 6, 2, 2}, {0, 6, 2}}) {
      const Tensor x = rnd(shape, dt), g = rnd(shape, dt), w = rnd({6}, dt);
      for (int64_t groups : {1, 3}) {
        const auto [y, mean, rstd] = native_group_norm(x, w, {}, groups, 1e-5);
        for (const std::vector<int64_t>& mask :
             std::vector<std::vector<int64_t>>{{1, 1, 1}, {1, 0, 0}, {0, 1, 1}}) {
          check("native_group_norm_backward", {g, x, mean, rstd, w},
                {In{0}, In{1}, In{2}, In{3}, In{4}, i(groups), ints(mask)});
          check("native_group_norm_backward", {g, x, mean, rstd},
                {In{0}, In{1}, In{2}, In{3}, none(), i(groups), ints(mask)});
        }
      }
    }
  }
}

// ---- losses ----

TEST(Decompositions, CrossEntropyWithClassIndicesMatchesEager) {
  manual_seed(13);
  for (ScalarType dt : kFloatTypes) {
    const Tensor x = rnd({6, 5}, dt), w = rand({5}).to(dt) + 0.1;
    Tensor t = randint(0, 5, {6});
    t.select(0, 2).fill_(-100);
    for (const char* reduction : {"none", "sum", "mean"}) {
      for (double ls : {0.0, 0.2}) {
        check("cross_entropy", {x, t}, {In{0}, In{1}, none(), IValue(reduction), i(-100), f(ls)});
        check("cross_entropy", {x, t, w}, {In{0}, In{1}, In{2}, IValue(reduction), i(-100), f(ls)});
        check("cross_entropy", {rnd({2, 4, 3}, dt), randint(0, 4, {2, 3})},
              {In{0}, In{1}, none(), IValue(reduction), i(1), f(ls)});
        check("cross_entropy", {rnd({4}, dt), scalar_tensor(Scalar(int64_t{2}), kInt64)},
              {In{0}, In{1}, none(), IValue(reduction), i(-100), f(ls)});
      }
    }
    // Every target ignored: the mean is NaN, as eager.
    check("cross_entropy", {x, full({6}, 3, TensorOptions(kInt64))},
          {In{0}, In{1}, none(), IValue("mean"), i(3), f(0.0)});
    check("cross_entropy", {transposed(4, 5, dt), randint(0, 5, {4}, TensorOptions(kInt32))},
          {In{0}, In{1}, none(), IValue("mean"), i(-100), f(0.0)});
  }
}

TEST(Decompositions, CrossEntropyWithClassProbabilitiesMatchesEager) {
  manual_seed(14);
  for (ScalarType dt : kFloatTypes) {
    const Tensor x = rnd({4, 5}, dt), p = softmax(rnd({4, 5}, dt), 1), w = rand({5}).to(dt);
    for (const char* reduction : {"none", "sum", "mean"}) {
      for (double ls : {0.0, 0.1}) {
        check("cross_entropy", {x, p}, {In{0}, In{1}, none(), IValue(reduction), i(-100), f(ls)});
        check("cross_entropy", {x, p, w}, {In{0}, In{1}, In{2}, IValue(reduction), i(-100), f(ls)});
      }
    }
  }
}

TEST(Decompositions, NllMseAndBceLossesMatchEager) {
  manual_seed(15);
  for (ScalarType dt : kFloatTypes) {
    const Tensor lp = log_softmax(rnd({5, 4}, dt), 1), w = rand({4}).to(dt);
    Tensor t = randint(0, 4, {5});
    t.select(0, 0).fill_(-1);
    for (const char* reduction : {"none", "sum", "mean"}) {
      check("nll_loss", {lp, t}, {In{0}, In{1}, none(), IValue(reduction), i(-1)});
      check("nll_loss", {lp, t, w}, {In{0}, In{1}, In{2}, IValue(reduction), i(-1)});
      check("mse_loss", {rnd({3, 4}, dt), rnd({4}, dt)}, {In{0}, In{1}, IValue(reduction)});
      check("mse_loss", {rnd({0, 4}, dt), rnd({0, 4}, dt)}, {In{0}, In{1}, IValue(reduction)});
      const Tensor x = rnd({3, 4}, dt) * 30, y = rand({3, 4}).to(dt);
      check("binary_cross_entropy_with_logits", {x, y},
            {In{0}, In{1}, none(), none(), IValue(reduction)});
      check("binary_cross_entropy_with_logits", {x, y, rand({4}).to(dt), rand({3, 1}).to(dt) + 1},
            {In{0}, In{1}, In{2}, In{3}, IValue(reduction)});
    }
  }
  check("mse_loss", {rnd({3}), rnd({3}, kFloat64)}, {In{0}, In{1}, IValue("mean")});  // promotes
}

TEST(Decompositions, CrossEntropyBackwardMatchesEager) {
  manual_seed(25);
  for (ScalarType dt : kFloatTypes) {
    const Tensor w = rand({5}).to(dt) + 0.1;
    Tensor t = randint(0, 5, {6});
    t.select(0, 1).fill_(-100);
    for (const char* reduction : {"none", "sum", "mean"}) {
      const bool none_red = std::string_view(reduction) == "none";
      for (double ls : {0.0, 0.3}) {
        const Tensor x = rnd({6, 5}, dt), g = none_red ? rnd({6}, dt) : rnd({}, dt);
        check("cross_entropy_backward", {g, x, t},
              {In{0}, In{1}, In{2}, none(), IValue(reduction), i(-100), f(ls)});
        check("cross_entropy_backward", {g, x, t, w},
              {In{0}, In{1}, In{2}, In{3}, IValue(reduction), i(-100), f(ls)});
        const Tensor x3 = rnd({2, 5, 3}, dt), g3 = none_red ? rnd({2, 3}, dt) : rnd({}, dt);
        check("cross_entropy_backward", {g3, x3, randint(0, 5, {2, 3})},
              {In{0}, In{1}, In{2}, none(), IValue(reduction), i(2), f(ls)});
        check("cross_entropy_backward",
              {rnd({}, dt), rnd({5}, dt), scalar_tensor(Scalar(int64_t{3}), kInt64)},
              {In{0}, In{1}, In{2}, none(), IValue(reduction), i(-100), f(ls)});
      }
    }
  }
  const Graph g = single_op_graph(
      "cross_entropy_backward", {rnd({}), rnd({3, 4}), from_vector(std::vector<int64_t>{0, 4, 1})},
      {In{0}, In{1}, In{2}, none(), IValue("mean"), i(-100), f(0.0)});
  const std::vector<Tensor> in{rnd({}), rnd({3, 4}), from_vector(std::vector<int64_t>{0, 4, 1})};
  EXPECT_THROW(graph::interpret(g, in), IndexError);
  EXPECT_THROW(graph::interpret(decomposed(g), in), IndexError);
}

TEST(Decompositions, OutOfRangeClassIndexRaisesIndexErrorAsEager) {
  const Tensor x = rnd({3, 4});
  for (int64_t bad : {4, -2}) {
    const Tensor t = from_vector(std::vector<int64_t>{0, bad, 1});
    for (const char* op : {"cross_entropy", "nll_loss"}) {
      std::vector<ArgSpec> args{In{0}, In{1}, none(), IValue("mean"), i(-100)};
      if (std::string_view(op) == "cross_entropy") args.push_back(f(0.0));
      const Graph g = single_op_graph(op, {x, t}, args);
      const Graph d = decomposed(g);
      EXPECT_THROW(graph::interpret(g, std::vector<Tensor>{x, t}), IndexError) << op;
      EXPECT_THROW(graph::interpret(d, std::vector<Tensor>{x, t}), IndexError) << op;
    }
  }
}

// ---- matrix products ----

TEST(Decompositions, AddmmBecomesMmPlusAnEpilogue) {
  manual_seed(16);
  for (ScalarType dt : kFloatTypes) {
    const Tensor a = rnd({3, 4}, dt), b = rnd({4, 5}, dt);
    check("addmm", {rnd({5}, dt), a, b}, {In{0}, In{1}, In{2}, si(1), si(1)});
    check("addmm", {rnd({3, 5}, dt), a, b}, {In{0}, In{1}, In{2}, s(0.5), s(2.0)});
    check("addmm", {full({3, 5}, kNaN, TensorOptions(dt)), a, b},
          {In{0}, In{1}, In{2}, si(0), si(1)});
  }
  const Graph g = single_op_graph("addmm", {rnd({5}), rnd({3, 4}), rnd({4, 5})},
                                  {In{0}, In{1}, In{2}, si(1), si(1)});
  const Graph d = decomposed(g);
  std::vector<std::string> ops;
  for (const graph::Node* n : d.calls()) ops.push_back(n->op_def().name);
  EXPECT_EQ(ops, (std::vector<std::string>{"mm", "add"}));
}

TEST(Decompositions, LinearAndMatmulBecomeMmBmmAndViews) {
  manual_seed(17);
  const Tensor w = rnd({6, 4}), bias = rnd({6});
  check("linear", {rnd({3, 4}), w, bias}, {In{0}, In{1}, In{2}});
  check("linear", {rnd({2, 3, 4}), w, bias}, {In{0}, In{1}, In{2}});
  check("linear", {rnd({4}), w}, {In{0}, In{1}, none()});
  check("linear", {rnd({2, 4, 3}).transpose(1, 2), w}, {In{0}, In{1}, none()});
  for (const auto& [a, b] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{4}, {4}},
           {{3, 4}, {4}},
           {{4}, {4, 5}},
           {{3, 4}, {4, 5}},
           {{2, 3, 4}, {4, 5}},
           {{2, 3, 4}, {4}},
           {{2, 3, 4}, {2, 4, 5}},
           {{4}, {2, 4, 5}},
           {{2, 1, 3, 4}, {5, 4, 2}}})
    check("matmul", {rnd(a), rnd(b)}, {In{0}, In{1}});
}

TEST(Decompositions, StackAndSplitsBecomeCatAndSlices) {
  manual_seed(26);
  for (ScalarType dt : kFloatTypes) {
    const Tensor x = rnd({5, 4}, dt);
    check("split", {x}, {In{0}, i(2), i(0)});
    check("split", {x}, {In{0}, i(3), i(-1)});
    check("split_with_sizes", {x}, {In{0}, ints({1, 0, 3}), i(1)});
    check("chunk", {x}, {In{0}, i(3), i(0)});
    check("chunk", {rnd({0, 2}, dt)}, {In{0}, i(2), i(0)});
    check("chunk", {transposed(4, 6, dt)}, {In{0}, i(4), i(1)});
  }
  const Tensor a = rnd({2, 3}), b2 = rnd({2, 3});
  for (int64_t dim : {0, 1, 2, -1}) {
    const Graph g = [&] {
      Graph g;
      graph::Value* pa = g.add_placeholder("a", TensorMeta::of(a));
      graph::Value* pb = g.add_placeholder("b", TensorMeta::of(b2));
      const std::vector<Arg> args{Arg::list({pa, pb}), Arg::constant(IValue(dim))};
      g.set_outputs(
          g.add_call(op_id("stack"), args, *graph::infer_output_metas(op_id("stack"), args)));
      return g;
    }();
    expect_same_as_eager(g, {a, b2});
  }
}

// ---- pass behaviour ----

TEST(Decompositions, TableMarksOpsAndLeavesPrimitivesAlone) {
  for (const char* op : {"softmax", "native_layer_norm", "native_batch_norm", "gelu", "mean", "var",
                         "cross_entropy", "addmm", "lerp", "masked_fill"}) {
    EXPECT_TRUE(has_decomposition(op_id(op))) << op;
    EXPECT_TRUE(OpRegistry::instance().get(op_id(op)).has_decomposition) << op;
  }
  for (const char* op : {"add", "mul", "exp", "sum", "amax", "mm", "bmm", "view", "where", "clamp",
                         "conv2d", "gather", "_to_copy", "copy_", "full"})
    EXPECT_FALSE(has_decomposition(op_id(op))) << op;
  EXPECT_GE(decomposed_op_names().size(), 30u);
}

TEST(Decompositions, KeepsGradModeAndRequiresGradAndRemovesUnusedParts) {
  Graph g;
  graph::Value* x =
      g.add_placeholder("x", TensorMeta::contiguous(kFloat32, {4, 8}, /*requires_grad=*/true));
  const std::vector<Arg> args{Arg::value(x), Arg::constant(IValue(DimVector{8})),
                              Arg::constant(IValue()), Arg::constant(IValue()),
                              Arg::constant(IValue(1e-5))};
  std::vector<TensorMeta> metas = *graph::infer_output_metas(op_id("native_layer_norm"), args);
  for (TensorMeta& m : metas) m.requires_grad = true;
  std::vector<graph::Value*> outs = g.add_call(op_id("native_layer_norm"), args, metas);
  outs[0]->producer()->set_grad_mode(graph::Node::GradMode::Disabled);
  g.set_outputs({outs[0]});  // mean and rstd unused
  decompose(g);
  verify(g);
  for (const graph::Node* n : g.calls()) {
    EXPECT_EQ(n->grad_mode(), graph::Node::GradMode::Disabled) << graph::to_string(*n);
    for (const graph::Value* v : n->outputs())
      EXPECT_FALSE(v->users().empty()) << "unused: " << graph::to_string(*n);
  }
  EXPECT_TRUE(g.outputs()[0]->meta().requires_grad);
}

// Arguments a node omits take the schema's defaults (gelu's approximate='none', softplus's beta=1
// and threshold=20, layer_norm's weight, bias and eps).
TEST(Decompositions, OmittedArgumentsTakeTheSchemaDefaults) {
  Graph g = graph::parse_graph(
      "%0 : f32[3, 4] = placeholder(\"x\")\n"
      "%1 : f32[3, 4] = gelu(%0)\n"
      "%2 : f32[3, 4] = softplus(%0)\n"
      "%3 : f32[3, 4] = layer_norm(%0, [4])\n"
      "return (%1, %2, %3)\n");
  decompose(g);
  verify(g);
  const Tensor x = rnd({3, 4}) * 8;
  const std::vector<Tensor> out = graph::interpret(g, std::vector<Tensor>{x});
  expect_matches(out[0], gelu(x), "gelu");
  expect_matches(out[1], softplus(x), "softplus");
  expect_matches(out[2], layer_norm(x, {4}), "layer_norm");
}

// Symbolic sizes: a graph traced with a dynamic batch (and a dynamic reduced dim) decomposes
// without guards and runs for several sizes.
TEST(Decompositions, SymbolicSizesDecomposeAndRunForEverySize) {
  const std::string text =
      "%0 : f32[s0, s1] = placeholder(\"x\")\n"
      "%1 : f32[s1] = placeholder(\"w\")\n"
      "%2 : f32[s0, s1] = softmax(%0, 1, None)\n"
      "%3 : f32[s0, s1], %4 : f32[s0, 1], %5 : f32[s0, 1] = native_layer_norm(%0, [s1], %1, "
      "%1, 1e-05)\n"
      "%6 : f32[s0] = mean(%0, [1], False, None)\n"
      "%7 : f32[s1] = var(%0, [0], 1.0, False)\n"
      "%8 : f32[s0] = logsumexp(%0, [1], False)\n"
      "%9 : f32[s0, s1] = gelu(%0, approximate=\"tanh\")\n"
      "%10 : f32[] = mse_loss(%0, %9, \"mean\")\n"
      "%11 : f32[s0, s1], %12 : f32[s1], %13 : f32[s1] = native_batch_norm(%2, None, None, "
      "None, None, True, 0.1, 1e-05)\n"
      "return (%2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13)\n";
  const Graph g = graph::parse_graph(text);
  const Graph d = decomposed(g);
  manual_seed(18);
  for (const auto& [n, c] : std::vector<std::pair<int64_t, int64_t>>{{3, 5}, {7, 2}, {2, 16}}) {
    const std::vector<Tensor> in{rnd({n, c}), rnd({c})};
    const std::vector<Tensor> expected = graph::interpret(g, in);
    const std::vector<Tensor> actual = graph::interpret(d, in);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t k = 0; k < expected.size(); ++k)
      expect_matches(actual[k], expected[k], "output " + std::to_string(k));
  }
}

// Note [Decompositions never guard]: a decomposition that would need a guard (a group of a
// symbolic number of channels) leaves its node whole, to run as an extern call of the eager
// kernel; compiled with every size symbolic, such a graph gives eager's values.
TEST(Decompositions, ANodeWhoseDecompositionWouldGuardIsKeptWhole) {
  const std::string text =
      "%0 : f32[2, s0, 3] = placeholder(\"x\")\n"
      "%1 : f32[2, s0, 3], %2 : f32[2, 2], %3 : f32[2, 2] = native_group_norm(%0, None, None, 2, "
      "1e-05)\n"
      "return (%1)\n";
  Graph g = graph::parse_graph(text);
  decompose(g);
  EXPECT_EQ(graph::to_string(g), text);

  auto fn = [](const Tensor& x) { return group_norm(x, 2) * 2; };
  auto f = compile(fn, {.dynamic = true});
  for (int64_t channels : {4, 6}) {
    const Tensor x = randn({2, channels, 3});
    expect_matches(f(x), fn(x), "channels " + std::to_string(channels));
  }
}

// A backend that decomposes what kiln::compile captured and runs it with the interpreter: the
// ops a real model's graphs contain (the native norms, addmm; composites such as layer_norm or
// linear never appear: they run above the Trace key) decompose, compiled results equal eager
// ones, and batch_norm's running statistics are updated as eager updates them.
TEST(Decompositions, CapturedGraphsDecomposeAndMatchEager) {
  static std::set<std::string> captured, remaining;
  static int graphs = 0;
  capture::register_backend(
      "decompose_test",
      [](const graph::Graph& g, std::span<const Tensor>) -> capture::CompiledGraph {
        for (const graph::Node* n : g.calls()) captured.insert(n->op_def().name);
        auto d = std::make_shared<Graph>(g.clone());
        decompose(*d);
        verify(*d);
        graphs += 1;
        for (const graph::Node* n : d->calls())
          if (has_decomposition(n->op())) remaining.insert(n->op_def().name);
        return [d](std::span<const Tensor> in) { return graph::interpret(*d, in); };
      });
  auto model = [](const Tensor& x, const Tensor& w, const Tensor& t, const Tensor& rm,
                  const Tensor& rv) {
    Tensor h = layer_norm(x, {8}, w, w);
    h = linear(h, w.view({1, 8}).expand({8, 8}), w) + group_norm(h, 2, w, w);
    h = batch_norm(h, rm, rv, w, w, /*training=*/true, 0.1, 1e-5);
    h = gelu(h, "tanh") + softmax(h, 1) + log_softmax(h, 0);
    h = h.mean({1}, true) + h.var({1}, 1.0, true) + logsumexp(h, {1}, true) + silu(h);
    return cross_entropy(h, t, {}, "mean", -100, 0.1) + mse_loss(h, x);
  };
  auto compiled = compile(model, {.backend = "decompose_test"});
  manual_seed(19);
  const Tensor rm = rnd({8}), rv = rand({8}) + 0.5;
  const Tensor rm_eager = rm.clone(), rv_eager = rv.clone();
  for (int64_t n : {4, 6, 9}) {  // the second size recompiles with a symbolic batch
    const Tensor x = rnd({n, 8}), w = rnd({8}), t = randint(0, 8, {n});
    const std::string what = "n=" + std::to_string(n);
    expect_matches(compiled(x, w, t, rm, rv), model(x, w, t, rm_eager, rv_eager), what);
    expect_matches(rm, rm_eager, what + " running_mean");
    expect_matches(rv, rv_eager, what + " running_var");
  }
  EXPECT_GE(graphs, 2);
  EXPECT_TRUE(remaining.empty()) << *remaining.begin();
  for (const char* op : {"native_layer_norm", "native_group_norm", "native_batch_norm", "addmm",
                         "softmax", "cross_entropy"})
    EXPECT_TRUE(captured.count(op)) << op;
  for (const char* op : {"layer_norm", "group_norm", "batch_norm", "linear", "matmul"})
    EXPECT_FALSE(captured.count(op)) << op << " is composite and should not be captured";
}

}  // namespace
}  // namespace kiln::lower
