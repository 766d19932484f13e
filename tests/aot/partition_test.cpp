// Joint graphs (src/aot/joint_graph.h) and the partitioners (src/aot/partition.h) on graphs whose
// best partition is known.
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "src/aot/partition.h"
#include "src/graph/graph.h"

namespace kiln::aot {
namespace {

graph::Graph parse(const char* text) { return graph::parse_graph(text); }

std::vector<std::string> saved_names(const Partition& p) {
  std::vector<std::string> names;
  for (const SavedValue& s : p.saved) names.push_back(s.name);
  return names;
}

bool contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

TEST(JointGraph, HoldsTheForwardThenTheGradients) {
  graph::Graph fwd = parse(
      "%0 : f32[4] = placeholder(\"x\")\n"
      "%1 : f32[4] = placeholder(\"y\")\n"
      "%2 : f32[4] = mul(%0, %1)\n"
      "return (%2)\n");
  JointGraph joint = build_joint_graph(fwd, {true, false});
  EXPECT_EQ(joint.num_primals, 2);
  EXPECT_EQ(joint.num_tangents, 1);
  EXPECT_EQ(joint.num_forward_outputs, 1);
  EXPECT_EQ(joint.tangent_of_output, (std::vector<int>{0}));
  // y does not require grad: only x gets a gradient, and it is tangent * y.
  EXPECT_EQ(joint.grad_primals, (std::vector<int>{0}));
  const std::string text = graph::to_string(joint.graph);
  EXPECT_TRUE(contains(text, "placeholder(\"tangent0\")")) << text;
  EXPECT_EQ(joint.graph.outputs().size(), 2u) << text;
  int muls = 0;
  for (const graph::Node* n : joint.graph.calls()) muls += n->op_def().name == "mul";
  EXPECT_EQ(muls, 2) << text;  // the forward mul and tangent * y; no gradient for y
}

TEST(JointGraph, IntegerOutputsHaveNoTangent) {
  graph::Graph fwd = parse(
      "%0 : f32[4] = placeholder(\"x\")\n"
      "%1 : i64[] = argmax(%0, None, False)\n"
      "%2 : f32[4] = exp(%0)\n"
      "return (%1, %2)\n");
  JointGraph joint = build_joint_graph(fwd, {true});
  EXPECT_EQ(joint.tangent_of_output, (std::vector<int>{-1, 0}));
  EXPECT_EQ(joint.num_tangents, 1);
}

TEST(JointGraph, UnsupportedGraphsAreRejected) {
  // Symbolic sizes need the trace's ShapeEnv (Note [AOT autograd with symbolic sizes]).
  graph::Graph symbolic = parse(
      "%0 : f32[s0] = placeholder(\"x\")\n"
      "%1 : f32[s0] = exp(%0)\n"
      "return (%1)\n");
  EXPECT_THROW(build_joint_graph(symbolic, {true}), NotImplementedError);
  graph::Graph inplace = parse(
      "%0 : f32[4] = placeholder(\"x\")\n"
      "%1 : f32[4] = exp(%0)\n"
      "%2 : f32[4] = add_(%1, %0, alpha=1)\n"
      "return (%2)\n");
  EXPECT_THROW(build_joint_graph(inplace, {true}), NotImplementedError);
  graph::Graph fwd = parse(
      "%0 : f32[4] = placeholder(\"x\")\n"
      "return (%0)\n");
  EXPECT_THROW(build_joint_graph(fwd, {true, true}), ValueError);
  graph::Graph ints = parse(
      "%0 : i64[4] = placeholder(\"x\")\n"
      "%1 : i64[4] = neg(%0)\n"
      "return (%1)\n");
  EXPECT_THROW(build_joint_graph(ints, {true}), DTypeError);
}

// The example: for sin(cos(x)) min-cut saves only x (cos(x) is recomputed in the
// backward), while the default partitioner saves x and cos(x).
TEST(Partition, SinOfCosSavesOnlyXWithMinCut) {
  graph::Graph fwd = parse(
      "%0 : f32[1000] = placeholder(\"x\")\n"
      "%1 : f32[1000] = cos(%0)\n"
      "%2 : f32[1000] = sin(%1)\n"
      "return (%2)\n");
  JointGraph joint = build_joint_graph(fwd, {true});
  Partition by_default = partition(joint, Partitioner::Default);
  Partition min_cut = partition(joint, Partitioner::MinCut);
  EXPECT_EQ(saved_names(by_default),
            (std::vector<std::string>{"%0 = x", "%1 : f32[1000] = cos(%0)"}));
  EXPECT_EQ(by_default.saved_bytes, 8000);
  EXPECT_EQ(by_default.recomputed_ops, 0);
  ASSERT_EQ(min_cut.saved.size(), 1u);
  EXPECT_EQ(min_cut.saved[0].name, "%0 = x");
  EXPECT_EQ(min_cut.saved_bytes, 4000);
  EXPECT_EQ(min_cut.recomputed_ops, 1);  // cos(x), again in the backward
  // The backward graph reads the saved x and the tangent; it recomputes cos.
  const std::string bw = graph::to_string(min_cut.backward);
  EXPECT_TRUE(contains(bw, "placeholder(\"saved0\")")) << bw;
  EXPECT_TRUE(contains(bw, "placeholder(\"tangent0\")")) << bw;
  EXPECT_TRUE(contains(bw, "cos(")) << bw;
  // The forward returns its output, then what it saves.
  EXPECT_EQ(min_cut.forward.outputs().size(), 2u);
  EXPECT_EQ(by_default.forward.outputs().size(), 3u);
}

// A matrix product is never recomputed: min-cut saves its output when the backward needs it,
// even where recomputing from the (smaller) inputs would cost fewer bytes.
TEST(Partition, MatrixProductsAreSavedNotRecomputed) {
  graph::Graph fwd = parse(
      "%0 : f32[2, 3] = placeholder(\"a\")\n"
      "%1 : f32[3, 64] = placeholder(\"b\")\n"
      "%2 : f32[2, 64] = mm(%0, %1)\n"
      "%3 : f32[2, 64] = tanh(%2)\n"
      "return (%3)\n");
  JointGraph joint = build_joint_graph(fwd, {true, true});
  Partition p = partition(joint, Partitioner::MinCut);
  // The backward's only products are the two gradient ones (g b^T and a^T g), not the forward's.
  int products = 0;
  for (const graph::Node* n : p.backward.calls()) products += n->op_def().name == "mm";
  EXPECT_EQ(products, 2) << graph::to_string(p.backward);
  bool saved_product_or_tanh = false;
  for (const SavedValue& s : p.saved)
    saved_product_or_tanh |= contains(s.name, "mm(") || contains(s.name, "tanh(");
  EXPECT_TRUE(saved_product_or_tanh);
}

// Attention's backward formula computes q k^T and the softmax again (the forward op is one fused
// call that keeps neither). Those products are backward work: min-cut leaves them in the
// backward, and the forward runs attention once and saves its inputs, not the scores.
TEST(Partition, ProductsOnlyTheBackwardNeedsStayInTheBackward) {
  graph::Graph fwd = parse(
      "%0 : f32[2, 16, 8] = placeholder(\"q\")\n"
      "%1 : f32[2, 16, 8] = placeholder(\"k\")\n"
      "%2 : f32[2, 16, 8] = placeholder(\"v\")\n"
      "%3 : f32[2, 16, 8] = scaled_dot_product_attention(%0, %1, %2, None, 0.0, False, None)\n"
      "return (%3)\n");
  JointGraph joint = build_joint_graph(fwd, {true, true, true});
  Partition p = partition(joint, Partitioner::MinCut);
  for (const graph::Node* n : p.forward.calls()) {
    const std::string_view name = n->op_def().name;
    EXPECT_TRUE(name == "scaled_dot_product_attention" || n->op_def().has_tag(kTagView))
        << "the forward computes " << name << ":\n"
        << graph::to_string(p.forward);
  }
  for (const SavedValue& s : p.saved)
    EXPECT_TRUE(contains(s.name, "placeholder") || contains(s.name, "= q") ||
                contains(s.name, "= k") || contains(s.name, "= v"))
        << s.name;
  EXPECT_EQ(p.saved_bytes, 3 * 2 * 16 * 8 * 4);
}

// A random draw is made once: min-cut never recomputes a random op, it saves the (smaller) mask
// computed from it. (dropout itself is a function of its seed and offset, so its backward is
// dropout of the gradient, not a recomputation.)
TEST(Partition, RandomOpsAreNeverRecomputed) {
  graph::Graph fwd;
  graph::Value* x = fwd.add_placeholder("x", graph::TensorMeta::contiguous(kFloat32, {256}));
  graph::Value* r = fwd.add_call1(
      OpRegistry::instance().id("rand"),
      {graph::Arg::constant(IValue(std::vector<int64_t>{256})),
       graph::Arg::constant(IValue(kFloat32)), graph::Arg::constant(IValue(Device::CPU)),
       graph::Arg::constant(IValue(int64_t{1})), graph::Arg::constant(IValue(int64_t{0}))},
      graph::TensorMeta::contiguous(kFloat32, {256}));
  graph::Value* mask =
      fwd.add_call1(OpRegistry::instance().id("lt.Scalar"),
                    {graph::Arg::value(r), graph::Arg::constant(IValue(Scalar(0.5)))},
                    graph::TensorMeta::contiguous(kBool, {256}));
  graph::Value* y = fwd.add_call1(OpRegistry::instance().id("mul"),
                                  {graph::Arg::value(x), graph::Arg::value(mask)},
                                  graph::TensorMeta::contiguous(kFloat32, {256}));
  graph::Value* z = fwd.add_call1(OpRegistry::instance().id("exp"), {graph::Arg::value(y)},
                                  graph::TensorMeta::contiguous(kFloat32, {256}));
  fwd.set_outputs({z});
  graph::verify(fwd);
  JointGraph joint = build_joint_graph(fwd, {true});
  for (Partitioner which : {Partitioner::MinCut, Partitioner::Default}) {
    Partition p = partition(joint, which);
    for (const graph::Node* n : p.backward.calls())
      EXPECT_FALSE(n->op_def().has_tag(kTagRandom)) << graph::to_string(p.backward);
    bool saved_mask = false;
    for (const SavedValue& s : p.saved) saved_mask |= s.meta.dtype == kBool;
    EXPECT_TRUE(saved_mask || which == Partitioner::Default) << graph::to_string(p.forward);
  }
}

// A sum over a large row shrinks its input 1000x: the backward loads the small result instead of
// the input it would need to recompute it.
TEST(Partition, LargeReductionsAreSavedNotRecomputed) {
  graph::Graph fwd = parse(
      "%0 : f32[4, 1000] = placeholder(\"x\")\n"
      "%1 : f32[4, 1000] = exp(%0)\n"
      "%2 : f32[4] = sum(%1, [1], False, None)\n"
      "%3 : f32[4] = log(%2)\n"
      "return (%3)\n");
  JointGraph joint = build_joint_graph(fwd, {true});
  Partition p = partition(joint, Partitioner::MinCut);
  for (const graph::Node* n : p.backward.calls())
    EXPECT_FALSE(n->op_def().has_tag(kTagReduction) && n->inputs()[0]->meta().sizes.size() == 2 &&
                 n->output()->meta().sizes.size() == 1)
        << graph::to_string(p.backward);
}

TEST(Partition, UnknownPartitionerNamesTheChoices) {
  try {
    parse_partitioner("greedy");
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_TRUE(contains(e.what(), "unknown partitioner 'greedy'")) << e.what();
    EXPECT_TRUE(contains(e.what(), "min_cut")) << e.what();
  }
  EXPECT_EQ(parse_partitioner("default"), Partitioner::Default);
  EXPECT_EQ(parse_partitioner("min_cut"), Partitioner::MinCut);
}

}  // namespace
}  // namespace kiln::aot
