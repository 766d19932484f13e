// The verifier catches each kind of broken graph and names the node's line.
#include "graph_test_util.h"

namespace kiln::graph {
namespace {

using namespace testing;

const std::string kInputs =
    "%0 : f32[2, 3] = placeholder(\"x\")\n"
    "%1 : f32[3, 4] = placeholder(\"w\")\n";

TEST(Verifier, AcceptsWellFormedGraphs) {
  EXPECT_NO_THROW(verify(parse_graph(kInputs + "%2 : f32[2, 4] = mm(%0, %1)\n"
                                               "%3 : f32[4, 2]{1, 4} = transpose(%2, 0, 1)\n"
                                               "%4 : f32[8, 2] = cat([%3, %3], dim=0)\n"
                                               "%5 : f32[2, 3] = full([2, 3], 1.5, float32, cpu)\n"
                                               "return (%4, %5)\n")));
}

TEST(Verifier, CatchesUseBeforeDefinition) {
  Graph g;
  Value* x = input(g, "x", kFloat32, {3});
  Value* a = call1(g, "neg", {V(x)});
  Value* b = call1(g, "neg", {V(x)});
  a->producer()->set_arg(0, V(b));
  g.set_outputs({a});
  expect_error<ValueError>([&] { verify(g); },
                           {"verify: `" + a->name() + " : f32[3] = neg(" + b->name() + ")`",
                            b->name() + " is used before it is defined"});
}

TEST(Verifier, CatchesUseOfAnErasedNode) {
  Graph g;
  Value* x = input(g, "x", kFloat32, {3});
  Value* a = call1(g, "neg", {V(x)});
  Value* b = call1(g, "neg", {V(x)});
  g.set_outputs({b});
  g.erase_node(a->producer());
  b->producer()->set_arg(0, V(a));
  expect_error<ValueError>([&] { verify(g); }, {"neg(" + a->name() + ")", "erased node"});
}

TEST(Verifier, CatchesWrongArity) {
  expect_error<ValueError>(
      [&] { verify(parse_graph(kInputs + "%2 : f32[2, 4] = mm(%0, %1, %1)\nreturn (%2)\n")); },
      {"`%2 : f32[2, 4] = mm(%0, %1, %1)`", "3 arguments", "mm(Tensor self, Tensor mat2)",
       "takes 2"});
  expect_error<ValueError>(
      [&] { verify(parse_graph(kInputs + "%2 : f32[2, 4] = mm(%0)\nreturn (%2)\n")); },
      {"mm(%0)", "1 arguments"});
  expect_error<ValueError>(
      [&] {
        verify(parse_graph(kInputs + "%2 : f32[2, 4], %3 : f32[2, 4] = mm(%0, %1)\nreturn (%2)\n"));
      },
      {"2 outputs", "returns 1"});
}

TEST(Verifier, CatchesArgumentsOfTheWrongKind) {
  expect_error<ValueError>(
      [&] { verify(parse_graph(kInputs + "%2 : f32[2, 3] = relu(2)\nreturn (%2)\n")); },
      {"relu(2)", "argument 0 ('self') has schema type Tensor but is the constant 2"});
  expect_error<ValueError>(
      [&] { verify(parse_graph(kInputs + "%2 : f32[2, 3] = add.Scalar(%0, %1)\nreturn (%2)\n")); },
      {"argument 1 ('other') has schema type Scalar but is a value"});
}

TEST(Verifier, CatchesMetasThatDisagreeWithTheOp) {
  expect_error<ValueError>(
      [&] { verify(parse_graph(kInputs + "%2 : f32[2, 5] = mm(%0, %1)\nreturn (%2)\n")); },
      {"`%2 : f32[2, 5] = mm(%0, %1)`", "has meta f32[2, 5]", "gives f32[2, 4]"});
  expect_error<ValueError>(
      [&] { verify(parse_graph(kInputs + "%2 : f64[2, 4] = mm(%0, %1)\nreturn (%2)\n")); },
      {"has meta f64[2, 4]", "gives f32[2, 4]"});
  expect_error<ValueError>(
      [&] { verify(parse_graph(kInputs + "%2 : f32[3, 2] = transpose(%0, 0, 1)\nreturn (%2)\n")); },
      {"has meta f32[3, 2]", "gives f32[3, 2]{1, 3}"});
  expect_error<ValueError>(
      [&] { verify(parse_graph(kInputs + "%2 : f32[2, 4] = mm(%1, %0)\nreturn (%2)\n")); },
      {"mm(%1, %0)", "meta function rejects"});
}

TEST(Verifier, CatchesAMissingReturnAndMalformedMetas) {
  expect_error<ValueError>([&] { verify(parse_graph(kInputs)); }, {"no return"});
  Graph g = parse_graph(kInputs + "return (%0)\n");
  g.value(1)->mutable_meta().strides.pop_back();
  expect_error<ValueError>([&] { verify(g); },
                           {"placeholder(\"w\")", "%1 has 2 sizes but 1 strides"});
}

TEST(Verifier, SkipsMetaCheckForDataDependentOps) {
  EXPECT_NO_THROW(verify(parse_graph(kInputs + "%2 : i64[7, 2] = nonzero(%0)\nreturn (%2)\n")));
}

// A wrapped number (the 2.5 of `2.5 - t`) promotes as a Scalar: i32 tensor - wrapped f64 is f32.
// Its meta says so, in the text too; without the flag the meta function gives f64.
TEST(Verifier, WrappedNumbersPromoteAsScalars) {
  const std::string wrapped =
      "%0 : i32[3] = placeholder(\"x\")\n"
      "%1 : f64[] wrapped = placeholder(\"s\")\n"
      "%2 : f32[3] = sub(%1, %0, alpha=1)\n"
      "return (%2)\n";
  const Graph g = parse_graph(wrapped);
  EXPECT_TRUE(g.placeholders()[1]->meta().wrapped_number);
  EXPECT_EQ(to_string(g), wrapped);
  EXPECT_NO_THROW(verify(g));
  std::string plain = wrapped;
  plain.replace(plain.find(" wrapped"), std::string(" wrapped").size(), "");
  expect_error<ValueError>([&] { verify(parse_graph(plain)); },
                           {"output %2 has meta f32[3] but the op's meta function gives f64[3]"});
}

// What the verifier cannot or need not compare: the strides of a tensor with no elements, and
// the output of an op whose size depends on its input's values (outside a trace).
TEST(Verifier, IgnoresStridesOfEmptyTensorsAndDataDependentSizes) {
  EXPECT_NO_THROW(
      verify(parse_graph("%0 : f32[0, 3] = placeholder(\"x\")\n"
                         "%1 : f32[0, 3]{1, 0} = neg(%0)\n"
                         "return (%1)\n")));
  EXPECT_NO_THROW(
      verify(parse_graph("%0 : f32[3, 4] = placeholder(\"x\")\n"
                         "%1 : b8[3] = placeholder(\"mask\")\n"
                         "%2 : f32[4] = placeholder(\"v\")\n"
                         "%3 : f32[3, 4] = index_put_(%0, [%1], %2, accumulate=False)\n"
                         "return (%3)\n")));
}

}  // namespace
}  // namespace kiln::graph
