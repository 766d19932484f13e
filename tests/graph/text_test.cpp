// The graph text format: printer output, parser, round trips, parse errors.
#include <cmath>
#include <limits>

#include "graph_test_util.h"
#include "src/graph/schema.h"

namespace kiln::graph {
namespace {

using namespace testing;

TEST(Printer, PrintsOneLinePerNodeLikeCode) {
  Graph g;
  Value* x = input(g, "arg0", kFloat32, {4, 784});
  Value* w = input(g, "model.fc1.weight", kFloat32, {512, 784});
  Value* b = g.add_placeholder("model.fc1.bias", TensorMeta::contiguous(kFloat32, {512}, true));
  Value* wt = call1(g, "transpose", {V(w), C(0), C(1)});
  Value* h = call1(g, "mm", {V(x), V(wt)});
  Value* a = call1(g, "add", {V(h), V(b), C(Scalar(1))});
  g.set_outputs({a, h});
  EXPECT_EQ(to_string(g),
            "%0 : f32[4, 784] = placeholder(\"arg0\")\n"
            "%1 : f32[512, 784] = placeholder(\"model.fc1.weight\")\n"
            "%2 : f32[512] requires_grad = placeholder(\"model.fc1.bias\")\n"
            "%3 : f32[784, 512]{1, 784} = transpose(%1, 0, 1)\n"
            "%4 : f32[4, 512] = mm(%0, %3)\n"
            "%5 : f32[4, 512] = add(%4, %2, alpha=1)\n"
            "return (%5, %4)\n");
}

TEST(Printer, ShowsOffsetsMultipleOutputsListsAndKeywordOnlyArguments) {
  Graph g;
  Value* x = input(g, "x", kFloat32, {4, 6});
  Value* y = input(g, "y", kFloat32, {2, 6});
  Value* row = call1(g, "select", {V(x), C(0), C(2)});
  std::vector<Value*> mx = call(g, "max.dim", {V(x), C(1), C(false)});
  Value* c = call1(g, "cat", {L({x, y}), C(0)});
  Value* mat = input(g, "m", kFloat32, {6, 3});
  Value* bias = input(g, "b", kFloat32, {3});
  Value* am = call1(g, "addmm", {V(bias), V(x), V(mat), C(Scalar(0.5)), C(Scalar(2))});
  g.set_outputs({row, mx[1], c, am});
  const std::string text = to_string(g);
  EXPECT_NE(text.find("%2 : f32[6]@12 = select(%0, 0, 2)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("%3 : f32[4], %4 : i64[4] = max.dim(%0, 1, False)\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("%5 : f32[6, 6] = cat([%0, %1], dim=0)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("%8 : f32[4, 3] = addmm(%7, %0, %6, beta=0.5, alpha=2)\n"), std::string::npos)
      << text;
}

TEST(Printer, ConstantsPrintReadably) {
  EXPECT_EQ(constant_to_string(IValue()), "None");
  EXPECT_EQ(constant_to_string(IValue(true)), "True");
  EXPECT_EQ(constant_to_string(IValue(int64_t{-3})), "-3");
  EXPECT_EQ(constant_to_string(IValue(1.0)), "1.0");
  EXPECT_EQ(constant_to_string(IValue(0.1)), "0.1");
  EXPECT_EQ(constant_to_string(IValue(1e20)), "1e+20");
  EXPECT_EQ(constant_to_string(IValue(std::numeric_limits<double>::infinity())), "inf");
  EXPECT_EQ(constant_to_string(IValue(-std::numeric_limits<double>::infinity())), "-inf");
  EXPECT_EQ(constant_to_string(IValue(std::nan(""))), "nan");
  EXPECT_EQ(constant_to_string(IValue(Scalar(2.0))), "2.0");
  EXPECT_EQ(constant_to_string(IValue(Scalar(false))), "False");
  EXPECT_EQ(constant_to_string(IValue(Scalar(uint64_t{18446744073709551615u}))),
            "18446744073709551615");
  EXPECT_EQ(constant_to_string(IValue(kBFloat16)), "bfloat16");
  EXPECT_EQ(constant_to_string(IValue(Device::Meta)), "meta");
  EXPECT_EQ(constant_to_string(IValue("say \"hi\"\n\\")), "\"say \\\"hi\\\"\\n\\\\\"");
  EXPECT_EQ(constant_to_string(IValue(std::vector<int64_t>{2, -1})), "[2, -1]");
  EXPECT_EQ(constant_to_string(IValue(std::vector<int64_t>{})), "[]");
}

// Builds a graph from many op families, prints it, parses it, prints again.
Graph many_ops_graph() {
  Graph g;
  Value* x = input(g, "arg0", kFloat32, {4, 6});
  Value* y = input(g, "arg1", kFloat32, {4, 6});
  Value* idx = input(g, "arg2", kInt64, {3});
  Value* w = input(g, "model.weight", kFloat32, {6});
  Value* s = call1(g, "add", {V(x), V(y), C(Scalar(2))});
  Value* s2 = call1(g, "mul.Scalar", {V(s), C(Scalar(0.5))});
  Value* s3 = call1(g, "add.Scalar", {V(s2), C(Scalar(true)), C(Scalar(-1))});
  Value* v = call1(g, "view", {V(s3), C(std::vector<int64_t>{6, 4})});
  Value* p = call1(g, "permute", {V(v), C(std::vector<int64_t>{1, 0})});
  Value* c = call1(g, "cat", {L({x, p, y}), C(0)});
  Value* gathered = call1(g, "index", {V(c), L({idx, nullptr})});
  std::vector<Value*> mx = call(g, "max.dim", {V(c), C(1), C(true)});
  Value* sm = call1(g, "sum", {V(c), C(std::vector<int64_t>{0}), C(false), C(IValue())});
  Value* cast = call1(g, "_to_copy", {V(sm), C(kFloat64)});
  Value* full = call1(g, "full",
                      {C(std::vector<int64_t>{2, 3}), C(Scalar(1.5)), C(kFloat32), C(Device::CPU)});
  Value* gl = call1(g, "gelu", {V(full), C("tanh")});
  Value* ln =
      call1(g, "layer_norm", {V(x), C(std::vector<int64_t>{6}), V(w), C(IValue()), C(1e-5)});
  Value* nn = call1(g, "nan_to_num",
                    {V(x), C(0.0), C(std::numeric_limits<double>::infinity()), C(IValue())});
  Value* loss = call1(g, "mse_loss", {V(x), V(y), C("sum")});
  g.set_outputs({gathered, mx[0], mx[1], cast, gl, ln, nn, loss});
  return g;
}

TEST(Parser, RoundTripsGraphsOfManyOps) {
  Graph g = many_ops_graph();
  EXPECT_NO_THROW(verify(g));
  const std::string text = to_string(g);
  Graph parsed = parse_graph(text);
  EXPECT_EQ(to_string(parsed), text);
  EXPECT_NO_THROW(verify(parsed));
  // Same structure, not only the same text: constants, lists with None, outputs.
  const std::vector<Node*> a = g.nodes(), b = parsed.nodes();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i]->args().size(), b[i]->args().size());
    for (size_t j = 0; j < a[i]->args().size(); ++j) {
      const Arg& x = a[i]->args()[j];
      const Arg& y = b[i]->args()[j];
      ASSERT_EQ(x.kind(), y.kind());
      if (x.is_constant()) {
        EXPECT_TRUE(constants_equal(x.as_constant(), y.as_constant())) << i << "," << j;
      }
      if (x.is_list()) {
        ASSERT_EQ(x.as_list().size(), y.as_list().size());
        for (size_t k = 0; k < x.as_list().size(); ++k)
          EXPECT_EQ(x.as_list()[k] == nullptr, y.as_list()[k] == nullptr);
      }
    }
    for (size_t j = 0; j < a[i]->outputs().size(); ++j)
      EXPECT_TRUE(a[i]->outputs()[j]->meta() == b[i]->outputs()[j]->meta());
  }
}

TEST(Parser, KeepsScalarKindsAndFloatBits) {
  const double values[] = {0.1,
                           -0.0,
                           1e-300,
                           1.7976931348623157e308,
                           5e-324,
                           3.0,
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity()};
  for (double d : values) {
    const std::string text = "%0 : f32[3] = placeholder(\"x\")\n%1 : f32[3] = add.Scalar(%0, " +
                             constant_to_string(IValue(Scalar(d))) + ", alpha=1)\nreturn (%1)\n";
    Graph g = parse_graph(text);
    EXPECT_EQ(to_string(g), text);
    const IValue& c = g.calls()[0]->args()[1].as_constant();
    ASSERT_TRUE(c.is_scalar());
    EXPECT_EQ(c.scalar().kind(), Scalar::Kind::Double);
    const double back = c.scalar().to_double();
    EXPECT_EQ(std::memcmp(&back, &d, sizeof d), 0) << text;
  }
  Graph nan = parse_graph("%0 : f32[3] = placeholder(\"x\")\n%1 : f32[3] = fill_(%0, nan)\n");
  EXPECT_TRUE(std::isnan(nan.calls()[0]->args()[1].as_constant().scalar().to_double()));
  struct Case {
    const char* literal;
    Scalar::Kind kind;
  };
  for (const Case& k :
       {Case{"1", Scalar::Kind::Int}, Case{"1.0", Scalar::Kind::Double},
        Case{"True", Scalar::Kind::Bool}, Case{"18446744073709551615", Scalar::Kind::UInt}}) {
    Graph g =
        parse_graph(std::string("%0 : u64[3] = placeholder(\"x\")\n%1 : u64[3] = fill_(%0, ") +
                    k.literal + ")\n");
    const IValue& c = g.calls()[0]->args()[1].as_constant();
    ASSERT_TRUE(c.is_scalar()) << k.literal;
    EXPECT_EQ(c.scalar().kind(), k.kind) << k.literal;
    EXPECT_EQ(constant_to_string(c), k.literal);
  }
}

TEST(Parser, ReadsEveryConstantKind) {
  // Semantics do not matter here (the verifier would object): the parser keeps what it reads.
  Graph g = parse_graph(
      "%0 : f32[2, 3]{1, 2}@4 requires_grad = placeholder(\"a \\\"b\\\"\\tc\")\n"
      "%1 : f64[2, 3] = _to_copy(%0, float64)\n"
      "%2 : f32[2] = mse_loss(%0, %1, reduction=\"it's\")\n"
      "%3 : f32[2] = empty([2, 3], bfloat16, meta)\n"
      "%4 : f32[2] = eye(2, None, float32, cpu)\n"
      "%5 : b8[] = index(%0, [None, %1, None])\n"
      "return (%2)\n");
  EXPECT_EQ(g.placeholders()[0]->producer()->source(), "a \"b\"\tc");
  const TensorMeta& m = g.placeholders()[0]->meta();
  EXPECT_TRUE(m.requires_grad);
  EXPECT_EQ(m.offset.raw(), 4);
  EXPECT_EQ(m.strides[0].raw(), 1);
  const std::vector<Node*> calls = g.calls();
  EXPECT_EQ(calls[0]->args()[1].as_constant().dtype(), kFloat64);
  EXPECT_EQ(calls[1]->args()[2].as_constant().string(), "it's");
  EXPECT_EQ(calls[2]->args()[1].as_constant().dtype(), kBFloat16);
  EXPECT_EQ(calls[2]->args()[2].as_constant().device(), Device::Meta);
  EXPECT_TRUE(calls[3]->args()[1].as_constant().is_none());
  ASSERT_TRUE(calls[4]->args()[1].is_list());
  EXPECT_EQ(calls[4]->args()[1].as_list()[0], nullptr);
  EXPECT_EQ(calls[4]->args()[1].as_list()[1], g.value(1));
  // Printing again gives the same text (single quotes come back double-quoted).
  Graph again = parse_graph(to_string(g));
  EXPECT_EQ(to_string(again), to_string(g));
}

TEST(Parser, FillsSkippedArgumentsFromSchemaDefaults) {
  Graph g = parse_graph(
      "%0 : f32[3] = placeholder(\"bias\")\n"
      "%1 : f32[2, 3] = placeholder(\"y\")\n"
      "%2 : f32[3, 3] = placeholder(\"m\")\n"
      "%3 : f32[2, 3] = addmm(%0, %1, %2, alpha=2)\n"
      "%4 : f32[2, 3] = add(%1, %1)\n"
      "return (%3, %4)\n");
  const Node* addmm = g.calls()[0];
  ASSERT_EQ(addmm->args().size(), 5u);
  EXPECT_EQ(addmm->args()[3].as_constant().scalar().kind(), Scalar::Kind::Int);
  EXPECT_EQ(addmm->args()[3].as_constant().scalar().to_int64(), 1);
  EXPECT_EQ(g.calls()[1]->args().size(), 2u);  // trailing defaults stay absent
  const std::string text = to_string(g);
  EXPECT_NE(text.find("addmm(%0, %1, %2, beta=1, alpha=2)"), std::string::npos) << text;
  EXPECT_NO_THROW(verify(g));
}

TEST(Parser, KeepsIdsAndAcceptsCommentsAndBlankLines) {
  Graph g = parse_graph(
      "# an input\n"
      "%7 : f32[3] = placeholder(\"x\")\n"
      "\n"
      "%2 : f32[3] = neg(%7)   # trailing comment\n"
      "return (%2)\n");
  EXPECT_EQ(g.placeholders()[0]->id(), 7);
  EXPECT_EQ(g.outputs()[0]->id(), 2);
  Value* fresh = call1(g, "neg", {V(g.outputs()[0])});
  EXPECT_EQ(fresh->id(), 8);
}

TEST(Parser, ErrorsNameLineAndColumn) {
  const std::string x = "%0 : f32[3] = placeholder(\"x\")\n";
  expect_error<ValueError>([&] { parse_graph(x + "%1 : f32[3] = frobnicate(%0)\n"); },
                           {"line 2:15", "unknown op 'frobnicate'"});
  expect_error<ValueError>([&] { parse_graph(x + "%1 : f32[3] = neg(%5)\n"); },
                           {"line 2:19", "%5 is used but not defined"});
  expect_error<ValueError>([&] { parse_graph(x + "%1 : q32[3] = neg(%0)\n"); },
                           {"line 2:6", "unknown dtype 'q32'"});
  expect_error<ValueError>([&] { parse_graph(x + "%1 : f32[3] = add(%0, %0, beta=2)\n"); },
                           {"line 2", "no argument named 'beta'", "Scalar alpha=1"});
  expect_error<ValueError>([&] { parse_graph(x + "%1 : f32[3] = neg(%0\n"); },
                           {"line 2:21", "expected ',' or ')'", "the end of the line"});
  expect_error<ValueError>([&] { parse_graph(x + "%0 : f32[3] = neg(%0)\n"); },
                           {"line 2:1", "%0 is defined twice"});
  expect_error<ValueError>([&] { parse_graph(x + "return (%0)\n%1 : f32[3] = neg(%0)\n"); },
                           {"line 3", "after `return`"});
  expect_error<ValueError>(
      [&] { parse_graph(x + "%1 : f32[3] = neg(%0)\n%2 : f32[3] = placeholder(\"y\")\n"); },
      {"line 3", "placeholders must come before"});
  expect_error<ValueError>([&] { parse_graph(x + "%1 : f32[3] = add(%0, alpha=1, %0)\n"); },
                           {"line 2", "positional argument after a keyword"});
  expect_error<ValueError>(
      [&] { parse_graph(x + "%1 : f32[3] = add(%0, %0, alpha=1, alpha=2)\n"); },
      {"line 2", "'alpha' is given twice"});
  expect_error<ValueError>([&] { parse_graph(x + "%1 : f32[3] = fill_(%0, \"open)\n"); },
                           {"line 2", "unterminated string"});
  expect_error<ValueError>([&] { parse_graph(x + "%1 : f32[3] = neg(%0) junk\n"); },
                           {"line 2:23", "unexpected text"});
  expect_error<ValueError>([&] { parse_graph(x + "%1 : f32[3, 4+] = neg(%0)\n"); }, {"line 2:13"});
  expect_error<ValueError>([&] { parse_graph(x + "%1 : f32[3] = view(%0, [%0, 2])\n"); },
                           {"line 2", "list of values may only hold values"});
  expect_error<ValueError>([&] { parse_graph(x + "%1 : f32[3] = add(%0, alpha=2)\n"); },
                           {"line 2", "add: argument 'other' is missing"});
}

TEST(Schema, ParsesNamesTypesDefaultsAndMutation) {
  const Schema s = parse_schema(
      "addmm_(Tensor(a!) self, Tensor? mat1, int[2] k=1, *, Scalar beta=1, str m=\"a,b\") -> "
      "(Tensor(a!), Tensor)");
  EXPECT_EQ(s.name, "addmm_");
  ASSERT_EQ(s.args.size(), 5u);
  EXPECT_TRUE(s.args[0].mutated);
  EXPECT_EQ(s.args[0].type, "Tensor");
  EXPECT_TRUE(s.args[1].optional());
  EXPECT_TRUE(s.args[2].is_int_list());
  EXPECT_EQ(*s.args[2].default_text, "1");
  EXPECT_TRUE(s.args[3].kwarg_only);
  EXPECT_EQ(*s.args[4].default_text, "\"a,b\"");
  EXPECT_EQ(s.num_returns, 2);
  EXPECT_TRUE(s.mutates_an_argument);
  EXPECT_EQ(s.num_required(), 2);
  EXPECT_TRUE(parse_schema("split(Tensor(a -> *) self, SymInt n) -> Tensor(a)[]").returns_list);
  EXPECT_THROW(parse_schema("broken"), ValueError);
  // Every op of the table has a schema the graph can use.
  for (const auto& op : OpRegistry::instance().ops()) EXPECT_NO_THROW(schema_of(*op)) << op->name;
}

}  // namespace
}  // namespace kiln::graph

namespace kiln::graph {
namespace {

// Bad input never crashes: every truncation and many one-character edits of a valid text either
// parse (and then verify or fail with a kiln::Error) or fail with a kiln::ValueError.
TEST(Parser, DamagedTextNeverCrashes) {
  const std::string text = to_string(many_ops_graph()) +
                           "%40 : f32[s0 - 1, 2*s1]{1, s0}@(s1 + 3) = placeholder(\"late\")\n";
  auto attempt = [](const std::string& damaged) {
    try {
      Graph g = parse_graph(damaged);
      try {
        verify(g);
      } catch (const Error&) {
      }
      (void)to_string(g);
    } catch (const ValueError&) {
    }
  };
  for (size_t n = 0; n <= text.size(); ++n) attempt(text.substr(0, n));
  const char junk[] = {'%', '[', ']', '(', ')', ',', '=', '"',
                       '@', '{', '}', '-', '9', 's', ' ', '\n'};
  for (size_t i = 0; i < text.size(); i += 3)
    for (char c : junk) {
      std::string damaged = text;
      damaged[i] = c;
      attempt(damaged);
    }
}

}  // namespace
}  // namespace kiln::graph

namespace kiln::graph {
namespace {

TEST(Parser, IntegersInTheSymbolicRangeAreErrorsExceptForScalars) {
  const std::string x = "%0 : i64[3] = placeholder(\"x\")\n";
  Graph g = parse_graph(x + "%1 : i64[3] = fill_(%0, -9223372036854775808)\n");
  const IValue& c = g.calls()[0]->args()[1].as_constant();
  EXPECT_EQ(c.scalar().to_int64(), INT64_MIN);
  EXPECT_EQ(to_string(parse_graph(to_string(g))), to_string(g));
  testing::expect_error<ValueError>(
      [&] { parse_graph(x + "%1 : i64[3] = select(%0, 0, -9223372036854775808)\n"); },
      {"line 2:29", "reserved for symbolic sizes"});
  testing::expect_error<ValueError>(
      [&] { parse_graph(x + "%1 : i64[3] = view(%0, [-9223372036854775808])\n"); },
      {"line 2", "int list may only hold"});
  testing::expect_error<ValueError>(
      [&] { parse_graph("%0 : i64[-9223372036854775807] = placeholder(\"x\")\n"); },
      {"line 1:10", "reserved for symbolic sizes"});
}

}  // namespace
}  // namespace kiln::graph

namespace kiln::graph {
namespace {
TEST(Text, GradModeOfANodeRoundTrips) {
  const std::string text =
      "%0 : f32[3] = placeholder(\"w\")\n"
      "%1 : f32[3] = mul.Scalar(%0, 2)  # no_grad\n"
      "%2 : f32[3] = mul.Scalar(%0, 2)  # enable_grad\n"
      "%3 : f32[3] = mul.Scalar(%0, 2)\n"
      "return (%1, %2, %3)\n";
  Graph g = parse_graph(text);
  EXPECT_EQ(to_string(g), text);
  EXPECT_EQ(eliminate_common_subexpressions(g), 0);  // different grad modes never merge
  Tensor w = ones({3}).requires_grad_();
  std::vector<Tensor> out = interpret(g, std::vector<Tensor>{w});
  EXPECT_FALSE(out[0].requires_grad());
  EXPECT_TRUE(out[1].requires_grad());
  EXPECT_TRUE(out[2].requires_grad());
  NoGradGuard no_grad;
  out = interpret(g, std::vector<Tensor>{w});
  EXPECT_TRUE(out[1].requires_grad());  // enable_grad wins over the caller's mode
  EXPECT_FALSE(out[2].requires_grad());
}
}  // namespace
}  // namespace kiln::graph
