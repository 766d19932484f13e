// Dead code and common subexpression elimination.
#include "graph_test_util.h"

namespace kiln::graph {
namespace {

using namespace testing;

TEST(DeadCodeElimination, RemovesUnusedChainsInOnePass) {
  Graph g = parse_graph(
      "%0 : f32[3] = placeholder(\"x\")\n"
      "%1 : f32[3] = neg(%0)\n"
      "%2 : f32[3] = exp(%1)\n"
      "%3 : f32[3] = relu(%0)\n"
      "%4 : f32[3] = mul(%2, %2)\n"
      "return (%3)\n");
  EXPECT_EQ(eliminate_dead_code(g), 3);
  EXPECT_EQ(to_string(g),
            "%0 : f32[3] = placeholder(\"x\")\n"
            "%3 : f32[3] = relu(%0)\n"
            "return (%3)\n");
  EXPECT_TRUE(g.value(0)->users().size() == 1);
  verify(g);
  EXPECT_EQ(eliminate_dead_code(g), 0);
}

TEST(DeadCodeElimination, KeepsInPlaceRandomAndFlaggedNodes) {
  Graph g = parse_graph(
      "%0 : f32[3] = placeholder(\"x\")\n"
      "%1 : f32[3] = neg(%0)\n"
      "%2 : f32[3] = add_(%0, %1, alpha=1)\n"
      "%3 : f32[3] = dropout(%0, 0.5, 1, 0)\n"
      "%4 : f32[3] = rand([3], float32, cpu, 1, 0)\n"
      "%5 : f32[3] = exp(%0)\n"
      "%6 : f32[3] = sin(%0)\n"
      "return (%0)\n");
  g.value(5)->producer()->set_has_side_effects(true);
  EXPECT_EQ(eliminate_dead_code(g), 1);  // only sin; neg feeds add_, which is kept
  EXPECT_EQ(g.value(6), nullptr);
  for (int id : {1, 2, 3, 4, 5}) EXPECT_NE(g.value(id), nullptr) << id;
  verify(g);
}

TEST(CommonSubexpressionElimination, MergesIdenticalPureCalls) {
  Graph g = parse_graph(
      "%0 : f32[3] = placeholder(\"x\")\n"
      "%1 : f32[3] = placeholder(\"y\")\n"
      "%2 : f32[3] = add(%0, %1, alpha=1)\n"
      "%3 : f32[3] = add(%0, %1, alpha=1)\n"
      "%4 : f32[3] = add(%0, %1, alpha=2)\n"
      "%5 : f32[3] = add(%1, %0, alpha=1)\n"
      "%6 : f32[3] = mul(%2, %3)\n"
      "%7 : f32[3] = mul(%3, %2)\n"
      "%8 : f32[6] = cat([%6, %7], dim=0)\n"
      "%9 : f32[6] = cat([%7, %6], dim=0)\n"
      "return (%8, %9, %4, %5)\n");
  manual_seed(1);
  const std::vector<Tensor> in = {randn({3}), randn({3})};
  const std::vector<Tensor> before = interpret(g, in);
  // %3 -> %2; then %7 = mul(%2, %2) = %6; %9 = cat([%6, %6]) equals %8 but both are returned,
  // so both stay (Note [CSE and mutation], rule 3).
  EXPECT_EQ(eliminate_common_subexpressions(g), 2);
  EXPECT_EQ(g.value(3), nullptr);
  EXPECT_EQ(g.value(7), nullptr);
  EXPECT_NE(g.value(9), nullptr);
  EXPECT_NE(g.value(4), nullptr);  // alpha differs
  EXPECT_NE(g.value(5), nullptr);  // argument order differs
  EXPECT_EQ(g.outputs()[1], g.value(9));
  verify(g);
  const std::vector<Tensor> after = interpret(g, in);
  for (size_t i = 0; i < before.size(); ++i) expect_identical(after[i], before[i]);
}

TEST(CommonSubexpressionElimination, ScalarBoxingDoesNotMatterButKindsDo) {
  Graph g;
  Value* x = input(g, "x", kFloat32, {3});
  Value* a = call1(g, "mul.Scalar", {V(x), C(2)});
  Value* b = call1(g, "mul.Scalar", {V(x), C(Scalar(2))});
  Value* c = call1(g, "mul.Scalar", {V(x), C(Scalar(2.0))});
  Value* ab = call1(g, "add", {V(a), V(b)});
  Value* abc = call1(g, "add", {V(ab), V(c)});
  g.set_outputs({abc});
  EXPECT_EQ(eliminate_common_subexpressions(g), 1);
  EXPECT_EQ(ab->producer()->args()[1].as_value(), a);
  EXPECT_EQ(abc->producer()->args()[1].as_value(), c);
}

TEST(CommonSubexpressionElimination, NeverMergesRandomOps) {
  Graph g = parse_graph(
      "%0 : f32[3] = placeholder(\"x\")\n"
      "%1 : f32[3] = dropout(%0, 0.5, 1, 0)\n"
      "%2 : f32[3] = dropout(%0, 0.5, 1, 0)\n"
      "%3 : f32[3] = rand([3], float32, cpu, 1, 0)\n"
      "%4 : f32[3] = rand([3], float32, cpu, 1, 0)\n"
      "return (%1, %2, %3, %4)\n");
  EXPECT_EQ(eliminate_common_subexpressions(g), 0);
}

TEST(CommonSubexpressionElimination, RespectsMutation) {
  // An input changed in between: the second mul sees a different x.
  Graph g = parse_graph(
      "%0 : f32[3] = placeholder(\"x\")\n"
      "%1 : f32[3] = mul.Scalar(%0, 2)\n"
      "%2 : f32[3] = add_(%0, %1, alpha=1)\n"
      "%3 : f32[3] = mul.Scalar(%0, 2)\n"
      // A result mutated later (through a view): merging the clones would share the mutation.
      "%4 : f32[3] = clone(%0)\n"
      "%5 : f32[3] = clone(%0)\n"
      "%6 : f32[1, 3] = unsqueeze(%5, 0)\n"
      "%7 : f32[1, 3] = mul_(%6, %6)\n"
      // Pure calls after the last mutation still merge.
      "%8 : f32[3] = neg(%4)\n"
      "%9 : f32[3] = neg(%4)\n"
      "%10 : f32[3] = add(%8, %9, alpha=1)\n"
      "return (%1, %3, %4, %5, %10)\n");
  manual_seed(2);
  const Tensor x = randn({3});
  const std::vector<Tensor> before = interpret(g, std::vector<Tensor>{x.clone()});
  EXPECT_EQ(eliminate_common_subexpressions(g), 1);
  EXPECT_NE(g.value(3), nullptr);
  EXPECT_NE(g.value(5), nullptr);
  EXPECT_EQ(g.value(9), nullptr);
  verify(g);
  const std::vector<Tensor> after = interpret(g, std::vector<Tensor>{x.clone()});
  for (size_t i = 0; i < before.size(); ++i) expect_identical(after[i], before[i]);
}

// Rule 3 of Note [CSE and mutation]: two equal calls that are both returned (directly or through
// a view) stay two, so the caller gets two tensors, as eagerly; one returned and one used inside
// still merge.
TEST(CommonSubexpressionElimination, NeverMakesTwoReturnedValuesOne) {
  Graph g = parse_graph(
      "%0 : f32[3] = placeholder(\"x\")\n"
      "%1 : f32[3] = exp(%0)\n"
      "%2 : f32[3] = exp(%0)\n"
      "%3 : f32[1, 3] = unsqueeze(%2, 0)\n"
      "%4 : f32[3] = sin(%0)\n"
      "%5 : f32[3] = sin(%0)\n"
      "%6 : f32[3] = neg(%5)\n"
      "return (%1, %3, %4, %6)\n");
  EXPECT_EQ(eliminate_common_subexpressions(g), 1);
  EXPECT_NE(g.value(2), nullptr);  // returned through a view, as %1 is returned
  EXPECT_EQ(g.value(5), nullptr);  // used only by neg: merged into %4
  verify(g);
}

}  // namespace
}  // namespace kiln::graph
