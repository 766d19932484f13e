// Higher-order ops in the graph IR (src/graph/higher_order.h): subgraphs print as nested blocks
// and read back, the verifier checks each body against the op's contract, the interpreter runs
// the body the data picks, and CSE never merges two calls with different bodies.
#include <gtest/gtest.h>

#include "graph_test_util.h"
#include "src/graph/higher_order.h"

namespace kiln::graph {
namespace {

template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// x -> cond(x.sum() > 0, sin(x), x * 2)
const char* const kCond =
    "%0 : f32[4] = placeholder(\"x\")\n"
    "%1 : f32[] = sum(%0, [], False, None)\n"
    "%2 : b8[] = gt.Scalar(%1, 0)\n"
    "%3 : f32[4] = cond(%2, [%0])\n"
    "  true_fn {\n"
    "    %0 : f32[4] = placeholder(\"operand0\")\n"
    "    %1 : f32[4] = sin(%0)\n"
    "    return (%1)\n"
    "  }\n"
    "  false_fn {\n"
    "    %0 : f32[4] = placeholder(\"operand0\")\n"
    "    %1 : f32[4] = mul.Scalar(%0, 2)\n"
    "    return (%1)\n"
    "  }\n"
    "return (%3)\n";

// (i, x) -> while i < 10: (i + 1, x * 2)
const char* const kWhileLoop =
    "%0 : i64[] = placeholder(\"i\")\n"
    "%1 : f32[2] = placeholder(\"x\")\n"
    "%2 : i64[], %3 : f32[2] = while_loop([%0, %1], [])\n"
    "  cond_fn {\n"
    "    %0 : i64[] = placeholder(\"carry0\")\n"
    "    %1 : f32[2] = placeholder(\"carry1\")\n"
    "    %2 : b8[] = lt.Scalar(%0, 10)\n"
    "    return (%2)\n"
    "  }\n"
    "  body_fn {\n"
    "    %0 : i64[] = placeholder(\"carry0\")\n"
    "    %1 : f32[2] = placeholder(\"carry1\")\n"
    "    %2 : i64[] = add.Scalar(%0, 1, alpha=1)\n"
    "    %3 : f32[2] = mul.Scalar(%1, 2)\n"
    "    return (%2, %3)\n"
    "  }\n"
    "return (%2, %3)\n";

TEST(HigherOrderGraph, SubgraphsPrintAsNestedBlocksAndReadBack) {
  for (const char* text : {kCond, kWhileLoop}) {
    Graph g = parse_graph(text);
    EXPECT_EQ(to_string(g), text);
    verify(g);
    Graph copy = g.clone();
    EXPECT_EQ(to_string(copy), text);
  }
}

TEST(HigherOrderGraph, CondRunsTheBranchThePredicatePicks) {
  Graph g = parse_graph(kCond);
  const Tensor positive = tensor({1.0f, 2.0f, -0.5f, 0.25f});
  testing::expect_identical(interpret(g, std::vector<Tensor>{positive})[0], positive.sin());
  const Tensor negative = -positive;
  testing::expect_identical(interpret(g, std::vector<Tensor>{negative})[0], negative * 2);
}

TEST(HigherOrderGraph, WhileLoopRunsTheBodyWhileTheConditionHolds) {
  Graph g = parse_graph(kWhileLoop);
  std::vector<Tensor> out =
      interpret(g, std::vector<Tensor>{scalar_tensor(int64_t{3}, kInt64), tensor({1.0f, -2.0f})});
  EXPECT_EQ(out[0].item<int64_t>(), 10);
  testing::expect_identical(out[1], tensor({128.0f, -256.0f}));
  // No iteration: the carries themselves, as kiln::while_loop returns them.
  const Tensor i = scalar_tensor(int64_t{12}, kInt64), x = tensor({1.0f, 1.0f});
  out = interpret(g, std::vector<Tensor>{i, x});
  EXPECT_TRUE(out[0].is_same(i));
  EXPECT_TRUE(out[1].is_same(x));
}

// Note [A while_loop's history] (src/aot/joint_graph.cpp): the same loop, also returning the
// iteration count and each carry before every iteration.
TEST(HigherOrderGraph, WhileLoopWithHistoryStacksTheCarriesOfEveryIteration) {
  const std::string text =
      "%0 : i64[] = placeholder(\"i\")\n"
      "%1 : f32[2] = placeholder(\"x\")\n"
      "%2 : i64[], %3 : f32[2], %4 : i64[], %5 : i64[u0], %6 : f32[u0, 2] = "
      "while_loop_with_history([%0, %1], [])\n"
      "  cond_fn {\n"
      "    %0 : i64[] = placeholder(\"carry0\")\n"
      "    %1 : f32[2] = placeholder(\"carry1\")\n"
      "    %2 : b8[] = lt.Scalar(%0, 10)\n"
      "    return (%2)\n"
      "  }\n"
      "  body_fn {\n"
      "    %0 : i64[] = placeholder(\"carry0\")\n"
      "    %1 : f32[2] = placeholder(\"carry1\")\n"
      "    %2 : i64[] = add.Scalar(%0, 1, alpha=1)\n"
      "    %3 : f32[2] = mul.Scalar(%1, 2)\n"
      "    return (%2, %3)\n"
      "  }\n"
      "return (%2, %3, %4, %5, %6)\n";
  Graph g = parse_graph(text);
  verify(g);
  std::vector<Tensor> out =
      interpret(g, std::vector<Tensor>{scalar_tensor(int64_t{7}, kInt64), tensor({1.0f, -2.0f})});
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].item<int64_t>(), 10);
  testing::expect_identical(out[1], tensor({8.0f, -16.0f}));
  EXPECT_EQ(out[2].item<int64_t>(), 3);
  EXPECT_EQ(out[3].to_vector<int64_t>(), (std::vector<int64_t>{7, 8, 9}));
  testing::expect_identical(out[4],
                            tensor({1.0f, -2.0f, 2.0f, -4.0f, 4.0f, -8.0f}).reshape({3, 2}));
  // No iteration: empty histories of the carries' shapes.
  out = interpret(g, std::vector<Tensor>{scalar_tensor(int64_t{10}, kInt64), tensor({1.0f, 1.0f})});
  EXPECT_EQ(out[2].item<int64_t>(), 0);
  EXPECT_EQ(out[4].sizes().vec(), (std::vector<int64_t>{0, 2}));
  // A history that is not its carry stacked is rejected, naming the output.
  std::string bad = text;
  bad.replace(bad.find("%6 : f32[u0, 2]"), 15, "%6 : f32[u0, 3]");
  const std::string wrong = error_of([&] { verify(parse_graph(bad)); });
  EXPECT_NE(wrong.find("the history of carry 1"), std::string::npos) << wrong;
}

TEST(HigherOrderGraph, GradientsFlowThroughTheInterpretedBody) {
  Graph g = parse_graph(kCond);
  const Tensor x = tensor({1.0f, 2.0f, 3.0f, 4.0f}).requires_grad_();
  const Tensor y = interpret(g, std::vector<Tensor>{x})[0];
  const Tensor dx = grad({y.sum()}, {x})[0];
  testing::expect_identical(dx, x.detach().cos());
}

TEST(HigherOrderGraph, NestedHigherOrderOpsRoundTripAndRun) {
  // A while loop whose body is a cond: x doubles when positive, else is negated, three times.
  const std::string text =
      "%0 : i64[] = placeholder(\"i\")\n"
      "%1 : f32[] = placeholder(\"x\")\n"
      "%2 : i64[], %3 : f32[] = while_loop([%0, %1], [])\n"
      "  cond_fn {\n"
      "    %0 : i64[] = placeholder(\"carry0\")\n"
      "    %1 : f32[] = placeholder(\"carry1\")\n"
      "    %2 : b8[] = lt.Scalar(%0, 3)\n"
      "    return (%2)\n"
      "  }\n"
      "  body_fn {\n"
      "    %0 : i64[] = placeholder(\"carry0\")\n"
      "    %1 : f32[] = placeholder(\"carry1\")\n"
      "    %2 : i64[] = add.Scalar(%0, 1, alpha=1)\n"
      "    %3 : b8[] = gt.Scalar(%1, 0)\n"
      "    %4 : f32[] = cond(%3, [%1])\n"
      "      true_fn {\n"
      "        %0 : f32[] = placeholder(\"operand0\")\n"
      "        %1 : f32[] = mul.Scalar(%0, 2)\n"
      "        return (%1)\n"
      "      }\n"
      "      false_fn {\n"
      "        %0 : f32[] = placeholder(\"operand0\")\n"
      "        %1 : f32[] = neg(%0)\n"
      "        return (%1)\n"
      "      }\n"
      "    return (%2, %4)\n"
      "  }\n"
      "return (%2, %3)\n";
  Graph g = parse_graph(text);
  EXPECT_EQ(to_string(g), text);
  verify(g);
  // -1 -> 1 -> 2 -> 4
  EXPECT_EQ(interpret(g, std::vector<Tensor>{scalar_tensor(int64_t{0}, kInt64),
                                             scalar_tensor(-1.0, kFloat32)})[1]
                .item<float>(),
            4.0f);
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(HigherOrderGraph, TheVerifierChecksEachBodyAgainstTheContract) {
  auto verify_error = [](const std::string& text) {
    return error_of([&] { verify(parse_graph(text)); });
  };
  // A branch whose output dtype differs from the node's.
  std::string msg = verify_error(replaced(kCond, "    %1 : f32[4] = mul.Scalar(%0, 2)\n    return",
                                          "    %1 : f64[4] = mul.Scalar(%0, 2)\n    return"));
  EXPECT_NE(msg.find("false_fn"), std::string::npos) << msg;
  // (the meta mismatch inside false_fn is what the subgraph's own verification reports)
  EXPECT_NE(msg.find("in subgraph `false_fn`"), std::string::npos) << msg;
  msg = verify_error(replaced(kCond, "%3 : f32[4] = cond", "%3 : f64[4] = cond"));
  EXPECT_NE(msg.find("true_fn returns f32[4] as its output 0 but the op needs f64[4]"),
            std::string::npos)
      << msg;
  // A branch taking a different number of operands.
  msg = verify_error(replaced(kCond, "  false_fn {\n    %0 : f32[4] = placeholder(\"operand0\")\n",
                              "  false_fn {\n    %0 : f32[4] = placeholder(\"operand0\")\n"
                              "    %5 : f32[4] = placeholder(\"operand1\")\n"));
  EXPECT_NE(msg.find("false_fn takes 2 inputs but the op passes it 1 operand"), std::string::npos)
      << msg;
  // A predicate that is not one bool.
  msg = verify_error(
      replaced(replaced(kCond, "%2 : b8[] = gt.Scalar(%1, 0)\n", ""), "cond(%2", "cond(%1"));
  EXPECT_NE(msg.find("pred %1 is f32[]; it must be a bool tensor with one element"),
            std::string::npos)
      << msg;
  // A body that returns its input itself.
  msg = verify_error(replaced(kCond, "    %1 : f32[4] = sin(%0)\n    return (%1)",
                              "    %1 : f32[4] = sin(%0)\n    return (%0)"));
  EXPECT_NE(msg.find("true_fn returns %0, which is its input %0 (operand0)"), std::string::npos)
      << msg;
  msg = verify_error(replaced(kCond, "    %1 : f32[4] = sin(%0)\n    return (%1)",
                              "    %1 : f32[4] = view(%0, [4])\n    return (%1)"));
  EXPECT_NE(msg.find("true_fn returns %1, which is a view of its input %0 (operand0)"),
            std::string::npos)
      << msg;
  msg = verify_error(replaced(kCond, "    %1 : f32[4] = sin(%0)\n    return (%1)",
                              "    %1 : f32[4] = mul_.Scalar(%0, 2)\n    return (%1)"));
  EXPECT_NE(msg.find("true_fn writes to its input %0 (operand0)"), std::string::npos) << msg;
  // A loop body that changes a carry's sizes.
  msg =
      verify_error(replaced(kWhileLoop, "    %3 : f32[2] = mul.Scalar(%1, 2)\n    return (%2, %3)",
                            "    %3 : f32[4] = cat([%1, %1], dim=0)\n    return (%2, %3)"));
  EXPECT_NE(msg.find("body_fn returns f32[4] as its output 1 but the op needs f32[2]"),
            std::string::npos)
      << msg;
  // A loop condition that is not one bool.
  msg = verify_error(replaced(kWhileLoop, "    %2 : b8[] = lt.Scalar(%0, 10)\n    return (%2)",
                              "    %2 : i64[] = add.Scalar(%0, 1, alpha=1)\n    return (%2)"));
  EXPECT_NE(msg.find("cond_fn returns 1 values (i64[]); it must return one bool tensor"),
            std::string::npos)
      << msg;
  // Missing, misnamed or misplaced subgraphs.
  msg = verify_error(replaced(kCond, "  false_fn {", "  else_fn {"));
  EXPECT_NE(msg.find("subgraph 1 is named `else_fn` but cond's subgraph 1 is `false_fn`"),
            std::string::npos)
      << msg;
  msg = verify_error(
      "%0 : f32[2] = placeholder(\"x\")\n"
      "%1 : b8[] = placeholder(\"p\")\n"
      "%2 : f32[2] = cond(%1, [%0])\n"
      "return (%2)\n");
  EXPECT_NE(msg.find("cond takes 2 subgraphs (true_fn, false_fn) but the node has 0 (none)"),
            std::string::npos)
      << msg;
  msg = verify_error(
      "%0 : f32[2] = placeholder(\"x\")\n"
      "%1 : f32[2] = sin(%0)\n"
      "  body_fn {\n"
      "    %0 : f32[2] = placeholder(\"x\")\n"
      "    return (%0)\n"
      "  }\n"
      "return (%1)\n");
  EXPECT_NE(msg.find("sin is not a higher-order op but the node has subgraphs"), std::string::npos)
      << msg;
}

TEST(HigherOrderGraph, TheParserNamesABrokenBlocksLine) {
  std::string msg = error_of([] {
    parse_graph(
        "%0 : f32[2] = placeholder(\"x\")\n"
        "  true_fn {\n"
        "  }\n"
        "return (%0)\n");
  });
  EXPECT_NE(msg.find("line 2:1: a subgraph block `true_fn {` that follows no call"),
            std::string::npos)
      << msg;
  msg = error_of([] {
    parse_graph(
        "%0 : f32[2] = placeholder(\"x\")\n"
        "%1 : b8[] = placeholder(\"p\")\n"
        "%2 : f32[2] = cond(%1, [%0])\n"
        "  true_fn {\n"
        "    %0 : f32[2] = placeholder(\"operand0\")\n"
        "    return (%0)\n");
  });
  EXPECT_NE(msg.find("line 4:1: subgraph `true_fn` has no closing `}`"), std::string::npos) << msg;
  // An error inside a block names the line in the whole text.
  msg = error_of([] {
    parse_graph(
        "%0 : f32[2] = placeholder(\"x\")\n"
        "%1 : b8[] = placeholder(\"p\")\n"
        "%2 : f32[2] = cond(%1, [%0])\n"
        "  true_fn {\n"
        "    %0 : f32[2] = no_such_op(%0)\n"
        "  }\n");
  });
  EXPECT_NE(msg.find("line 5:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown op 'no_such_op'"), std::string::npos) << msg;
}

TEST(HigherOrderGraph, CommonSubexpressionsNeedTheSameBodies) {
  // Two conds on the same operands with different bodies stay two nodes.
  Graph g = parse_graph(kCond);
  Node* first = g.calls().back();
  Graph other = parse_graph(replaced(kCond, "sin(%0)", "cos(%0)"));
  Node* second_source = other.calls().back();
  const std::vector<Value*> outs =
      g.add_call(first->op(), first->args(), {first->output()->meta()});
  outs[0]->producer()->set_subgraphs(second_source->subgraphs());
  Value* sum = testing::call1(
      g, "add", {testing::V(first->output()), testing::V(outs[0]), testing::C(IValue(Scalar(1)))});
  g.set_outputs({sum});
  verify(g);
  EXPECT_EQ(eliminate_common_subexpressions(g), 0);
  const Tensor x = tensor({1.0f, 2.0f, 3.0f, 4.0f});
  testing::expect_identical(interpret(g, std::vector<Tensor>{x})[0], x.sin() + x.cos());
  // The same bodies (shared by a clone of the node's subgraphs) merge.
  outs[0]->producer()->set_subgraphs(first->subgraphs());
  EXPECT_EQ(eliminate_common_subexpressions(g), 1);
  testing::expect_identical(interpret(g, std::vector<Tensor>{x})[0], x.sin() * 2);
}

TEST(HigherOrderGraph, AHigherOrderOpCalledWithoutItsSubgraphsRaises) {
  std::string msg = error_of([] {
    Stack args;
    args.emplace_back(scalar_tensor(true, kBool));
    args.emplace_back(std::vector<Tensor>{ones({2})});
    dispatch::call_for_tensors(op_id("cond"), args);
  });
  EXPECT_NE(msg.find("cond: a higher-order op runs only from a graph"), std::string::npos) << msg;
}

}  // namespace
}  // namespace kiln::graph
