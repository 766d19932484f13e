// The reference interpreter runs graphs through the dispatcher; results equal eager calls.
#include "graph_test_util.h"

namespace kiln::graph {
namespace {

using namespace testing;

// x[4, 8] -> relu(x @ w1^T + b1) @ w2^T + b2
Graph mlp_graph() {
  return parse_graph(
      "%0 : f32[4, 8] = placeholder(\"arg0\")\n"
      "%1 : f32[16, 8] = placeholder(\"fc1.weight\")\n"
      "%2 : f32[16] = placeholder(\"fc1.bias\")\n"
      "%3 : f32[3, 16] = placeholder(\"fc2.weight\")\n"
      "%4 : f32[3] = placeholder(\"fc2.bias\")\n"
      "%5 : f32[8, 16]{1, 8} = transpose(%1, 0, 1)\n"
      "%6 : f32[4, 16] = mm(%0, %5)\n"
      "%7 : f32[4, 16] = add(%6, %2, alpha=1)\n"
      "%8 : f32[4, 16] = relu(%7)\n"
      "%9 : f32[16, 3]{1, 16} = transpose(%3, 0, 1)\n"
      "%10 : f32[4, 3] = mm(%8, %9)\n"
      "%11 : f32[4, 3] = add(%10, %4, alpha=1)\n"
      "return (%11, %8)\n");
}

std::vector<Tensor> mlp_inputs() {
  manual_seed(7);
  return {randn({4, 8}), randn({16, 8}), randn({16}), randn({3, 16}), randn({3})};
}

TEST(Interpreter, MlpEqualsEagerOps) {
  Graph g = mlp_graph();
  verify(g);
  const std::vector<Tensor> in = mlp_inputs();
  const std::vector<Tensor> out = interpret(g, in);
  ASSERT_EQ(out.size(), 2u);
  const Tensor hidden = relu(mm(in[0], in[1].t()).add(in[2]));
  const Tensor expected = mm(hidden, in[3].t()).add(in[4]);
  expect_identical(out[0], expected);
  expect_identical(out[1], hidden);
}

TEST(Interpreter, AutogradRecordsThroughTheInterpretedOps) {
  Graph g = mlp_graph();
  std::vector<Tensor> in = mlp_inputs();
  for (size_t i = 1; i < in.size(); ++i) in[i].requires_grad_();
  interpret(g, in)[0].sum().backward();
  std::vector<Tensor> eager = mlp_inputs();
  for (size_t i = 1; i < eager.size(); ++i) eager[i].requires_grad_();
  mm(relu(mm(eager[0], eager[1].t()).add(eager[2])), eager[3].t()).add(eager[4]).sum().backward();
  for (size_t i = 1; i < in.size(); ++i) expect_identical(in[i].grad(), eager[i].grad());
}

TEST(Interpreter, ViewsCatAndMultipleOutputs) {
  Graph g;
  Value* x = input(g, "x", kFloat32, {4, 6});
  Value* y = input(g, "y", kFloat32, {2, 6});
  Value* v = call1(g, "view", {V(x), C(std::vector<int64_t>{6, 4})});
  Value* p = call1(g, "permute", {V(v), C(std::vector<int64_t>{1, 0})});
  Value* s = call1(g, "slice", {V(p), C(0), C(1), C(3), C(1)});
  Value* c = call1(g, "cat", {L({s, y, s}), C(0)});
  std::vector<Value*> mx = call(g, "max.dim", {V(c), C(1), C(false)});
  g.set_outputs({c, mx[0], mx[1], p});
  verify(g);
  manual_seed(3);
  const Tensor xt = randn({4, 6}), yt = randn({2, 6});
  const std::vector<Tensor> out = interpret(g, std::vector<Tensor>{xt, yt});
  const Tensor pe = xt.view({6, 4}).permute({1, 0});
  const Tensor se = pe.slice(0, 1, 3, 1);
  const Tensor ce = cat({se, yt, se}, 0);
  auto [values, indices] = ce.max(1, false);
  expect_identical(out[0], ce);
  expect_identical(out[1], values);
  expect_identical(out[2], indices);
  expect_identical(out[3], pe);
  EXPECT_EQ(out[3].impl()->storage().get(), xt.impl()->storage().get());  // a view, as in eager
}

TEST(Interpreter, InPlaceAddOnAnInputMutatesTheCallersTensor) {
  Graph g = parse_graph(
      "%0 : f32[5] = placeholder(\"state\")\n"
      "%1 : f32[5] = placeholder(\"delta\")\n"
      "%2 : f32[5] = add_(%0, %1, alpha=2)\n"
      "%3 : f32[5] = mul(%2, %1)\n"
      "return (%3)\n");
  verify(g);
  manual_seed(5);
  const Tensor state = randn({5}), delta = randn({5});
  const Tensor eager_state = state.clone();
  const Tensor eager_out = eager_state.add_(delta, 2).mul(delta);
  const std::vector<Tensor> out = interpret(g, std::vector<Tensor>{state, delta});
  expect_identical(state, eager_state);
  expect_identical(out[0], eager_out);
}

TEST(Interpreter, WrongInputsNameThePlaceholder) {
  Graph g = mlp_graph();
  std::vector<Tensor> in = mlp_inputs();
  expect_error<ValueError>([&] { interpret(g, std::span<const Tensor>(in).first(2)); },
                           {"takes 5 inputs", "arg0, fc1.weight", "got 2"});
  std::vector<Tensor> bad_dtype = in;
  bad_dtype[2] = bad_dtype[2].to(kFloat64);
  expect_error<ValueError>([&] { interpret(g, bad_dtype); },
                           {"'fc1.bias'", "f32[16]", "float64", "[16]"});
  std::vector<Tensor> bad_rank = in;
  bad_rank[0] = randn({32});
  expect_error<ValueError>([&] { interpret(g, bad_rank); }, {"'arg0'", "f32[4, 8]", "[32]"});
  std::vector<Tensor> bad_size = in;
  bad_size[0] = randn({5, 8});
  expect_error<ValueError>([&] { interpret(g, bad_size); },
                           {"'arg0'", "size 0 is 5", "traced with 4"});
  std::vector<Tensor> undefined = in;
  undefined[4] = Tensor();
  expect_error<ValueError>([&] { interpret(g, undefined); }, {"'fc2.bias'", "undefined"});
}

TEST(Interpreter, AnOpErrorNamesTheNodeAndKeepsItsKind) {
  // Not verified on purpose: the metas lie, the op refuses the real shapes.
  Graph g = parse_graph(
      "%0 : f32[2, 3] = placeholder(\"x\")\n"
      "%1 : f32[2, 2] = mm(%0, %0)\n"
      "return (%1)\n");
  expect_error<ShapeError>(
      [&] {
        interpret(g, std::vector<Tensor>{randn({2, 3})});
      },
      {"interpret: %1 : f32[2, 2] = mm(%0, %0): ", "mm"});
}

TEST(Interpreter, UseBeforeDefinitionIsAnErrorNotACrash) {
  Graph g;
  Value* x = input(g, "x", kFloat32, {3});
  Value* a = call1(g, "neg", {V(x)});
  Value* b = call1(g, "neg", {V(x)});
  a->producer()->set_arg(0, V(b));  // a now reads b, defined after it
  g.set_outputs({a});
  expect_error<ValueError>([&] { interpret(g, std::vector<Tensor>{randn({3})}); },
                           {b->name(), "used before it is defined"});
}

}  // namespace
}  // namespace kiln::graph
