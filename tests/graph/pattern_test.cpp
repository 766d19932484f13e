// Subgraph pattern matching and replacement.
#include "src/graph/pattern.h"
#include "graph_test_util.h"

namespace kiln::graph {
namespace {

using namespace testing;

const char* kMulByTwo =
    "%0 : f32[] = placeholder(\"x\")\n"
    "%1 : f32[] = mul.Scalar(%0, 2)\n"
    "return (%1)\n";
const char* kAddSelf =
    "%0 : f32[] = placeholder(\"x\")\n"
    "%1 : f32[] = add(%0, %0, alpha=1)\n"
    "return (%1)\n";

TEST(Pattern, ReplacesMulByTwoWithAddIncludingChains) {
  Graph g = parse_graph(
      "%0 : f32[4] = placeholder(\"x\")\n"
      "%1 : f32[4] = mul.Scalar(%0, 2)\n"
      "%2 : f32[4] = mul.Scalar(%1, 2)\n"
      "%3 : f32[4] = mul.Scalar(%2, 3)\n"
      "%4 : f32[4] = mul.Scalar(%0, 2.0)\n"
      "return (%3, %4)\n");
  manual_seed(4);
  const std::vector<Tensor> in = {randn({4})};
  const std::vector<Tensor> before = interpret(g, in);
  EXPECT_EQ(replace(g, parse_graph(kMulByTwo), parse_graph(kAddSelf)), 2);
  verify(g);
  const std::string text = to_string(g);
  EXPECT_EQ(text.find("mul.Scalar(%0, 2)"), std::string::npos) << text;
  EXPECT_NE(text.find("mul.Scalar(%6, 3)"), std::string::npos) << text;    // reads the second add
  EXPECT_NE(text.find("mul.Scalar(%0, 2.0)"), std::string::npos) << text;  // 2.0 is not 2
  EXPECT_NE(text.find("%5 : f32[4] = add(%0, %0, alpha=1)"), std::string::npos) << text;
  EXPECT_NE(text.find("%6 : f32[4] = add(%5, %5, alpha=1)"), std::string::npos) << text;
  const std::vector<Tensor> after = interpret(g, in);
  for (size_t i = 0; i < before.size(); ++i) expect_identical(after[i], before[i]);
}

TEST(Pattern, FusesAddOfMmIntoAddmm) {
  Graph g = parse_graph(
      "%0 : f32[4, 8] = placeholder(\"x\")\n"
      "%1 : f32[8, 5] = placeholder(\"w\")\n"
      "%2 : f32[5] = placeholder(\"b\")\n"
      "%3 : f32[4, 5] = mm(%0, %1)\n"
      "%4 : f32[4, 5] = add(%3, %2, alpha=1)\n"
      "%5 : f32[4, 5] = relu(%4)\n"
      "return (%5)\n");
  const Graph pattern = parse_graph(
      "%0 : f32[] = placeholder(\"a\")\n"
      "%1 : f32[] = placeholder(\"b\")\n"
      "%2 : f32[] = placeholder(\"c\")\n"
      "%3 : f32[] = mm(%0, %1)\n"
      "%4 : f32[] = add(%3, %2, alpha=1)\n"
      "return (%4)\n");
  const Graph replacement = parse_graph(
      "%0 : f32[] = placeholder(\"a\")\n"
      "%1 : f32[] = placeholder(\"b\")\n"
      "%2 : f32[] = placeholder(\"c\")\n"
      "%3 : f32[] = addmm(%2, %0, %1, beta=1, alpha=1)\n"
      "return (%3)\n");
  const std::vector<Match> matches = match(pattern, g);
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(matches[0].wildcards, (std::vector<Value*>{g.value(0), g.value(1), g.value(2)}));
  EXPECT_EQ(matches[0].outputs, std::vector<Value*>{g.value(4)});
  EXPECT_EQ(matches[0].nodes, (std::vector<Node*>{g.value(3)->producer(), g.value(4)->producer()}));

  manual_seed(6);
  const std::vector<Tensor> in = {randn({4, 8}), randn({8, 5}), randn({5})};
  const Tensor before = interpret(g, in)[0];
  EXPECT_EQ(replace(g, pattern, replacement), 1);
  verify(g);
  EXPECT_EQ(to_string(g),
            "%0 : f32[4, 8] = placeholder(\"x\")\n"
            "%1 : f32[8, 5] = placeholder(\"w\")\n"
            "%2 : f32[5] = placeholder(\"b\")\n"
            "%6 : f32[4, 5] = addmm(%2, %0, %1, beta=1, alpha=1)\n"
            "%5 : f32[4, 5] = relu(%6)\n"
            "return (%5)\n");
  expect_close(interpret(g, in)[0], before);
}

TEST(Pattern, IntermediateValuesWithOutsideUsersBlockTheMatch) {
  Graph g = parse_graph(
      "%0 : f32[4, 8] = placeholder(\"x\")\n"
      "%1 : f32[8, 5] = placeholder(\"w\")\n"
      "%2 : f32[5] = placeholder(\"b\")\n"
      "%3 : f32[4, 5] = mm(%0, %1)\n"
      "%4 : f32[4, 5] = add(%3, %2, alpha=1)\n"
      "return (%4, %3)\n");
  const Graph pattern = parse_graph(
      "%0 : f32[] = placeholder(\"a\")\n"
      "%1 : f32[] = placeholder(\"b\")\n"
      "%2 : f32[] = placeholder(\"c\")\n"
      "%3 : f32[] = mm(%0, %1)\n"
      "%4 : f32[] = add(%3, %2, alpha=1)\n"
      "return (%4)\n");
  EXPECT_TRUE(match(pattern, g).empty());
  // Returning the intermediate from the pattern makes it an output: now it may be used outside.
  const Graph two_outputs = parse_graph(
      "%0 : f32[] = placeholder(\"a\")\n"
      "%1 : f32[] = placeholder(\"b\")\n"
      "%2 : f32[] = placeholder(\"c\")\n"
      "%3 : f32[] = mm(%0, %1)\n"
      "%4 : f32[] = add(%3, %2, alpha=1)\n"
      "return (%4, %3)\n");
  ASSERT_EQ(match(two_outputs, g).size(), 1u);
}

TEST(Pattern, SameWildcardMustBindTheSameValue) {
  Graph g = parse_graph(
      "%0 : f32[3] = placeholder(\"x\")\n"
      "%1 : f32[3] = placeholder(\"y\")\n"
      "%2 : f32[3] = add(%0, %1, alpha=1)\n"
      "%3 : f32[3] = add(%1, %1, alpha=1)\n"
      "return (%2, %3)\n");
  const std::vector<Match> matches = match(parse_graph(kAddSelf), g);
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(matches[0].outputs[0], g.value(3));
}

TEST(Pattern, MatchesDoNotOverlap) {
  Graph g = parse_graph(
      "%0 : f32[3] = placeholder(\"x\")\n"
      "%1 : f32[3] = neg(%0)\n"
      "%2 : f32[3] = neg(%1)\n"
      "%3 : f32[3] = neg(%2)\n"
      "return (%3)\n");
  const Graph double_neg = parse_graph(
      "%0 : f32[] = placeholder(\"x\")\n"
      "%1 : f32[] = neg(%0)\n"
      "%2 : f32[] = neg(%1)\n"
      "return (%2)\n");
  // neg(neg(x)) at %2 uses %1 (read only inside); at %3 it would reuse %2: one match only.
  const std::vector<Match> matches = match(double_neg, g);
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_EQ(matches[0].outputs[0], g.value(2));
  // Replace with the wildcard itself: neg(neg(x)) -> x.
  EXPECT_EQ(replace(g, double_neg,
                    [](Graph&, const Match& m) { return std::vector<Value*>{m.wildcards[0]}; }),
            1);
  verify(g);
  EXPECT_EQ(to_string(g),
            "%0 : f32[3] = placeholder(\"x\")\n"
            "%3 : f32[3] = neg(%0)\n"
            "return (%3)\n");
}

TEST(Pattern, CallbackReplacementBuildsNodesAtTheMatch) {
  Graph g = parse_graph(
      "%0 : f32[2, 3] = placeholder(\"x\")\n"
      "%1 : f32[2, 3] = mul.Scalar(%0, 2)\n"
      "%2 : f32[2, 3] = exp(%1)\n"
      "return (%2)\n");
  const int n = replace(g, parse_graph(kMulByTwo), [](Graph& target, const Match& m) {
    Value* x = m.wildcards[0];
    return std::vector<Value*>{call1(target, "add", {V(x), V(x), C(Scalar(1))})};
  });
  EXPECT_EQ(n, 1);
  verify(g);
  EXPECT_EQ(g.calls()[0]->op_def().name, "add");
  EXPECT_EQ(g.calls()[1]->op_def().name, "exp");
}

TEST(Pattern, BadPatternsAreRejected) {
  Graph g = parse_graph("%0 : f32[3] = placeholder(\"x\")\nreturn (%0)\n");
  expect_error<ValueError>([&] { match(parse_graph("%0 : f32[] = placeholder(\"x\")\n"), g); },
                           {"no outputs"});
  expect_error<ValueError>(
      [&] { match(parse_graph("%0 : f32[] = placeholder(\"x\")\nreturn (%0)\n"), g); },
      {"must be computed by a call"});
  expect_error<ValueError>(
      [&] {
        match(parse_graph("%0 : f32[] = placeholder(\"x\")\n%1 : f32[] = neg(%0)\n"
                          "%2 : f32[] = exp(%0)\nreturn (%1)\n"),
              g);
      },
      {"exp(%0)", "does not contribute"});
  expect_error<ValueError>([&] { replace(g, parse_graph(kMulByTwo), parse_graph("return ()\n")); },
                           {"replacement has 0 placeholders and 0 outputs"});
}

}  // namespace
}  // namespace kiln::graph
