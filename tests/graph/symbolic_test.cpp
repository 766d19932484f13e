// Graphs with symbolic sizes: printing, parsing, interpreting with symbols bound from inputs.
#include "graph_test_util.h"
#include "src/sym/expr.h"

namespace kiln::graph {
namespace {

using namespace testing;

const std::string kDynamicMlp =
    "%0 : f32[s0, 784] = placeholder(\"arg0\")\n"
    "%1 : f32[512, 784] = placeholder(\"model.fc1.weight\")\n"
    "%2 : f32[784, 512]{1, 784} = transpose(%1, 0, 1)\n"
    "%3 : f32[s0, 512] = mm(%0, %2)\n"
    "%4 : f32[2*s0, 512] = cat([%3, %3], dim=0)\n"
    "%5 : f32[s0, 2, 256] = view(%3, [s0, 2, 256])\n"
    "%6 : f32[512*s0] = view(%3, [512*s0])\n"
    "%7 : f32[512] = select(%3, 0, s0 - 1)\n"
    "%8 : f32[s0 - 1, 512]@512 = slice(%3, 0, 1, None, 1)\n"
    "return (%4, %5, %6, %7, %8)\n";

TEST(Symbolic, PrintsAndParsesSymbolicSizesAndConstants) {
  Graph g = parse_graph(kDynamicMlp);
  EXPECT_EQ(to_string(g), kDynamicMlp);
  const SymInt s0 = SymInt::from_expr(sym::symbol("s0"));
  EXPECT_TRUE(same(g.placeholders()[0]->meta().sizes[0], s0));
  EXPECT_TRUE(same(g.value(4)->meta().sizes[0], s0 * 2));
  const IntArrayRef words = raw_words(g.value(5)->producer()->args()[1].as_constant());
  EXPECT_TRUE(same(SymInt::from_raw(words[0]), s0));
  EXPECT_EQ(words[1], 2);
  // Symbolic strides and offsets round-trip too.
  const std::string strided =
      "%0 : f32[s0, s1]{1, s0}@(s0 + 4) = placeholder(\"x\")\n"
      "%1 : f32[s0, s1]{1, s0} = neg(%0)\n"
      "return (%1)\n";
  EXPECT_EQ(to_string(parse_graph(strided)), strided);
  EXPECT_NO_THROW(verify(g));  // symbolic metas: structure checked, meta re-run skipped
}

TEST(Symbolic, BuiltGraphsPrintThroughTheSymPrinter) {
  Graph g;
  const SymInt s0 = SymInt::from_expr(sym::symbol("s0"));
  Value* x = g.add_placeholder("x", TensorMeta::contiguous(kFloat32, {s0, 3}));
  Value* r = g.add_call1(op_id("view"), {V(x), C(IValue(DimVector{(s0 * 3).raw()}))},
                         TensorMeta::contiguous(kFloat32, {s0 * 3}));
  g.set_outputs({r});
  EXPECT_EQ(to_string(g),
            "%0 : f32[s0, 3] = placeholder(\"x\")\n"
            "%1 : f32[3*s0] = view(%0, [3*s0])\n"
            "return (%1)\n");
}

TEST(Symbolic, InterpreterBindsSymbolsFromInputs) {
  Graph g = parse_graph(kDynamicMlp);
  for (int64_t n : {3, 5}) {
    manual_seed(static_cast<uint64_t>(n));
    const Tensor x = randn({n, 784}), w = randn({512, 784});
    const std::vector<Tensor> out = interpret(g, std::vector<Tensor>{x, w});
    const Tensor h = mm(x, w.t());
    expect_identical(out[0], cat({h, h}, 0));
    expect_identical(out[1], h.view({n, 2, 256}));
    expect_identical(out[2], h.view({512 * n}));
    expect_identical(out[3], h.select(0, n - 1));
    expect_identical(out[4], h.slice(0, 1, std::nullopt, 1));
  }
}

TEST(Symbolic, UnbackedSymbolsBindFromOutputs) {
  Graph g = parse_graph(
      "%0 : f32[s0] = placeholder(\"x\")\n"
      "%1 : i64[u0, 1] = nonzero(%0)\n"
      "%2 : i64[u0] = view(%1, [u0])\n"
      "%3 : f32[u0] = index(%0, [%2])\n"
      "%4 : f32[2, u0] = expand(%3, [2, u0])\n"
      "return (%3, %4)\n");
  const Tensor x = kiln::arange(Scalar(-2), Scalar(4), Scalar(1), TensorOptions().dtype(kFloat32));
  const std::vector<Tensor> out = interpret(g, std::vector<Tensor>{x});
  const Tensor picked = kiln::index(x, {x.nonzero().view({-1})});
  expect_identical(out[0], picked);
  expect_identical(out[1], picked.expand({2, picked.size(0)}));
}

TEST(Symbolic, InconsistentInputsAreErrors) {
  Graph g = parse_graph(
      "%0 : f32[s0, 4] = placeholder(\"arg0\")\n"
      "%1 : f32[s0, 4] = placeholder(\"arg1\")\n"
      "%2 : f32[2*s0] = placeholder(\"arg2\")\n"
      "%3 : f32[s0, 4] = add(%0, %1, alpha=1)\n"
      "return (%3)\n");
  expect_error<ValueError>(
      [&] {
        interpret(g, std::vector<Tensor>{randn({3, 4}), randn({5, 4}), randn({6})});
      },
      {"'arg1'", "size 0 is 5", "symbol s0 is 3"});
  expect_error<ValueError>(
      [&] {
        interpret(g, std::vector<Tensor>{randn({3, 4}), randn({3, 4}), randn({7})});
      },
      {"'arg2'", "size 0 is 7", "2*s0 = 6"});
  EXPECT_NO_THROW(interpret(g, std::vector<Tensor>{randn({3, 4}), randn({3, 4}), randn({6})}));
}

TEST(Symbolic, AnUnboundSymbolInAnArgumentIsAnError) {
  Graph g = parse_graph(
      "%0 : f32[s0] = placeholder(\"x\")\n"
      "%1 : f32[s0, 1] = view(%0, [s7, 1])\n"
      "return (%1)\n");
  expect_error<ValueError>([&] { interpret(g, std::vector<Tensor>{randn({4})}); },
                           {"view(%0, [s7, 1])", "uses s7", "no input size"});
}

TEST(Symbolic, MalformedExpressionsNameTheirPosition) {
  expect_error<ValueError>([&] { parse_graph("%0 : f32[s0 +] = placeholder(\"x\")\n"); },
                           {"line 1:10"});
  expect_error<ValueError>([&] { parse_graph("%0 : f32[s0 < 2] = placeholder(\"x\")\n"); },
                           {"line 1:10", "condition"});
}

}  // namespace
}  // namespace kiln::graph
