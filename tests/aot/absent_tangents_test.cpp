// Backward graphs specialized for tangents that never arrive (Note [Absent tangents] in
// src/aot/absent_tangents.h): the pass on graphs whose result is known, and compiled regions whose
// loss uses only some outputs, against eager autograd.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "src/aot/absent_tangents.h"
#include "src/graph/graph.h"
#include "tests/aot/aot_test_options.h"
#include "tests/capture/compare.h"

namespace kiln::aot {
namespace {

using testing::expect_equal;

int count_calls(const graph::Graph& g, const std::string& op) {
  int n = 0;
  for (const graph::Node* node : g.calls()) n += node->op_def().name == op;
  return n;
}

// The pass on a graph written out as text; the result must verify.
SpecializedBackward specialize(const char* backward_text, int num_saved,
                               const std::vector<bool>& absent) {
  graph::Graph backward = graph::parse_graph(backward_text);
  SpecializedBackward s = specialize_for_absent_tangents(backward, num_saved, absent);
  graph::verify(s.graph);
  return s;
}

// saved0 = x, tangent0 flows into x's gradient through mul and sum; tangent1 through exp's
// derivative; the two meet in an add.
constexpr const char* kTwoBranches =
    "%0 : f32[4] = placeholder(\"saved0\")\n"
    "%1 : f32[4] = placeholder(\"tangent0\")\n"
    "%2 : f32[4] = placeholder(\"tangent1\")\n"
    "%3 : f32[4] = mul(%1, %0)\n"
    "%4 : f32[4] = exp(%0)\n"
    "%5 : f32[4] = mul(%2, %4)\n"
    "%6 : f32[4] = add(%3, %5, alpha=1)\n"
    "%7 : f32[] = sum(%2, [0], False, None)\n"
    "return (%6, %7)\n";

TEST(AbsentTangents, AnAbsentBranchDisappearsAndItsOnlyGradientIsUndefined) {
  SpecializedBackward s = specialize(kTwoBranches, 1, {false, true});
  // tangent1 is gone: exp and its mul are dead, the add passes tangent0 * x through, and the
  // second gradient (the sum of tangent1 alone) is not computed at all.
  EXPECT_EQ(s.grad_defined, (std::vector<bool>{true, false}));
  EXPECT_EQ(s.graph.placeholders().size(), 2u);
  EXPECT_EQ(count_calls(s.graph, "exp"), 0) << graph::to_string(s.graph);
  EXPECT_EQ(count_calls(s.graph, "add"), 0) << graph::to_string(s.graph);
  EXPECT_EQ(count_calls(s.graph, "full"), 0) << graph::to_string(s.graph);
  ASSERT_EQ(s.graph.outputs().size(), 1u);
  Tensor x = randn({4}), t0 = randn({4});
  expect_equal(graph::interpret(s.graph, std::vector<Tensor>{x, t0})[0], t0 * x);
}

TEST(AbsentTangents, TheOtherBranchAbsentKeepsBothGradients) {
  SpecializedBackward s = specialize(kTwoBranches, 1, {true, false});
  EXPECT_EQ(s.grad_defined, (std::vector<bool>{true, true}));
  Tensor x = randn({4}), t1 = randn({4});
  std::vector<Tensor> out = graph::interpret(s.graph, std::vector<Tensor>{x, t1});
  expect_equal(out[0], t1 * x.exp());
  expect_equal(out[1], t1.sum());
}

TEST(AbsentTangents, AnOpNotKnownToBeLinearGetsRealZeros) {
  // add.Scalar(tangent, 1) is not zero when the tangent is: the pass materializes zeros for it.
  SpecializedBackward s = specialize(
      "%0 : f32[3] = placeholder(\"tangent0\")\n"
      "%1 : f32[3] = add.Scalar(%0, 1, alpha=1)\n"
      "return (%1)\n",
      0, {true});
  EXPECT_EQ(s.grad_defined, (std::vector<bool>{true}));
  EXPECT_EQ(count_calls(s.graph, "full"), 1);
  expect_equal(graph::interpret(s.graph, std::vector<Tensor>{})[0], ones({3}));
}

TEST(AbsentTangents, ReluBackwardOfAZeroIsZero) {
  // where(x > 0, zero, 0) is zero; where(x > 0, zero, 1) is not.
  SpecializedBackward s = specialize(
      "%0 : b8[3] = placeholder(\"saved0\")\n"
      "%1 : f32[3] = placeholder(\"tangent0\")\n"
      "%2 : f32[3] = where.ScalarOther(%0, %1, 0)\n"
      "%3 : f32[3] = where.ScalarOther(%0, %1, 1)\n"
      "return (%2, %3)\n",
      1, {true});
  EXPECT_EQ(s.grad_defined, (std::vector<bool>{false, true}));
  Tensor keep = tensor({1.0, -1.0, 2.0}) > 0;
  expect_equal(graph::interpret(s.graph, std::vector<Tensor>{keep})[0], tensor({0.0, 1.0, 0.0}));
}

TEST(AbsentTangents, BroadcastingAddIsNotPassedThrough) {
  // add(a[2, 1], zero[2, 3]) is a broadcast to [2, 3], not a itself: it stays an add, with real
  // zeros.
  SpecializedBackward s = specialize(
      "%0 : f32[2, 1] = placeholder(\"saved0\")\n"
      "%1 : f32[2, 3] = placeholder(\"tangent0\")\n"
      "%2 : f32[2, 3] = add(%0, %1, alpha=1)\n"
      "return (%2)\n",
      1, {true});
  Tensor a = randn({2, 1});
  expect_equal(graph::interpret(s.graph, std::vector<Tensor>{a})[0], a.expand({2, 3}));
}

TEST(AbsentTangents, WrongInputCountIsAnError) {
  graph::Graph backward = graph::parse_graph(kTwoBranches);
  EXPECT_THROW(specialize_for_absent_tangents(backward, 1, {true}), ValueError);
}

CompileOptions options() { return testing::aot_options("min_cut"); }

TEST(AbsentTangents, NonFiniteValuesInAnUnusedOutputDoNotReachTheGradient) {
  // The second output's backward multiplies by 1 / x: inf at x = 0. Eager autograd never runs it
  // when the loss ignores that output; zeros in its place would make the gradient 0 * inf = NaN.
  auto fn = [](const Tensor& x) { return std::vector<Tensor>{x * 3, x.log()}; };
  auto f = compile(fn, options());
  Tensor x = tensor({0.0, 1.0, 2.0}).requires_grad_();
  std::vector<Tensor> out = f(x);
  out[0].sum().backward();
  Tensor compiled = x.grad().clone();
  x.mutable_grad() = Tensor();
  fn(x)[0].sum().backward();
  expect_equal(compiled, x.grad());
  EXPECT_TRUE(compiled.isfinite().all().item<bool>());
}

TEST(AbsentTangents, ParametersOnlyAnUnusedOutputReadsKeepNoGradient) {
  nn::Linear used(4, 3), unused(4, 2);
  auto f = compile(
      [&](const Tensor& x) {
        return std::vector<Tensor>{used(x), unused(x)};
      },
      options());
  Tensor x = randn({5, 4});
  for (int step = 0; step < 2; ++step) {  // the second step runs the cached specialization
    std::vector<Tensor> out = f(x);
    out[0].pow(2).sum().backward();
    EXPECT_TRUE(used.weight.grad().defined());
    EXPECT_FALSE(unused.weight.grad().defined());
    EXPECT_FALSE(unused.bias.grad().defined());
  }
  Tensor compiled = used.weight.grad().clone();
  used.weight.mutable_grad() = Tensor();
  used(x).pow(2).sum().backward();
  expect_equal(compiled, used.weight.grad() * 2);  // two steps accumulated
}

TEST(AbsentTangents, EveryOutputUsedRunsTheFullBackward) {
  auto fn = [](const Tensor& x) { return std::vector<Tensor>{x.sin(), x.cos()}; };
  auto f = compile(fn, options());
  Tensor x = randn({6}).requires_grad_();
  std::vector<Tensor> out = f(x);
  (out[0] + out[1]).sum().backward();
  Tensor compiled = x.grad().clone();
  x.mutable_grad() = Tensor();
  std::vector<Tensor> eager = fn(x);
  (eager[0] + eager[1]).sum().backward();
  expect_equal(compiled, x.grad());
}

}  // namespace
}  // namespace kiln::aot
