// The graph IR's core: values, nodes, users lists, editing, clone.
#include "graph_test_util.h"

namespace kiln::graph {
namespace {

using namespace testing;

struct Mlp {
  Graph g;
  Value *x, *w, *wt, *h, *r;
};

Mlp make_mlp() {
  Mlp m;
  m.x = input(m.g, "arg0", kFloat32, {4, 8});
  m.w = input(m.g, "model.fc.weight", kFloat32, {16, 8});
  m.wt = call1(m.g, "transpose", {V(m.w), C(0), C(1)});
  m.h = call1(m.g, "mm", {V(m.x), V(m.wt)});
  m.r = call1(m.g, "relu", {V(m.h)});
  m.g.set_outputs({m.r});
  return m;
}

TEST(Graph, NodesAreInProgramOrderWithPlaceholdersFirst) {
  Mlp m = make_mlp();
  Value* late = input(m.g, "arg2", kFloat32, {3});  // added after calls, still an input
  const std::vector<Node*> nodes = m.g.nodes();
  ASSERT_EQ(nodes.size(), 7u);
  EXPECT_EQ(nodes[0]->kind(), NodeKind::Placeholder);
  EXPECT_EQ(nodes[2]->output(), late);
  EXPECT_EQ(nodes[3]->kind(), NodeKind::Call);
  EXPECT_EQ(nodes[3]->op_def().name, "transpose");
  EXPECT_EQ(nodes[6]->kind(), NodeKind::Output);
  EXPECT_EQ(m.g.placeholders().size(), 3u);
  EXPECT_EQ(m.g.calls().size(), 3u);
  EXPECT_EQ(nodes[1]->source(), "model.fc.weight");
}

TEST(Graph, ValuesKnowProducerIndexNameAndMeta) {
  Mlp m = make_mlp();
  EXPECT_EQ(m.h->name(), "%" + std::to_string(m.h->id()));
  EXPECT_EQ(m.h->producer()->op_def().name, "mm");
  EXPECT_EQ(m.h->output_index(), 0);
  EXPECT_EQ(m.h->meta().dtype, kFloat32);
  ASSERT_EQ(m.h->meta().sizes.size(), 2u);
  EXPECT_EQ(m.h->meta().sizes[0].raw(), 4);
  EXPECT_EQ(m.h->meta().sizes[1].raw(), 16);
  EXPECT_EQ(m.g.value(m.h->id()), m.h);
  // Ids are distinct.
  std::set<int> ids;
  for (const Node* n : m.g.nodes())
    for (const Value* v : n->outputs()) EXPECT_TRUE(ids.insert(v->id()).second);
}

TEST(Graph, UsersListsFollowEveryEdit) {
  Mlp m = make_mlp();
  ASSERT_EQ(m.x->users().size(), 1u);
  EXPECT_EQ(m.x->users()[0], m.h->producer());
  ASSERT_EQ(m.r->users().size(), 1u);
  EXPECT_EQ(m.r->users()[0], m.g.output_node());
  // A node that reads a value twice is one user.
  Value* sq = call1(m.g, "mul", {V(m.r), V(m.r)});
  EXPECT_EQ(m.r->users().size(), 2u);
  // set_arg moves the use.
  sq->producer()->set_arg(1, V(m.h));
  EXPECT_EQ(m.r->users().size(), 2u);
  EXPECT_EQ(m.h->users().size(), 2u);
  sq->producer()->set_arg(0, V(m.h));
  EXPECT_EQ(m.r->users().size(), 1u);
  // replace_all_uses moves every use, the graph outputs included.
  m.g.replace_all_uses(m.r, sq);
  EXPECT_TRUE(m.r->users().empty());
  EXPECT_EQ(m.g.outputs()[0], sq);
  m.g.erase_node(m.r->producer());
  EXPECT_EQ(m.h->users().size(), 1u);
  EXPECT_NO_THROW(verify(m.g));
}

TEST(Graph, ErasingANodeWithUsersIsAnError) {
  Mlp m = make_mlp();
  expect_error<ValueError>([&] { m.g.erase_node(m.h->producer()); },
                           {"erase_node", m.h->name(), "still has 1 user", "relu("});
  expect_error<ValueError>([&] { m.g.erase_node(m.g.output_node()); }, {"output node"});
}

TEST(Graph, ValuesOfAnotherGraphAreRejected) {
  Mlp a = make_mlp();
  Mlp b = make_mlp();
  expect_error<ValueError>([&] { a.g.add_call(op_id("relu"), {V(b.h)}, {b.h->meta()}); },
                           {"add_call(relu)", "another graph"});
  expect_error<ValueError>([&] { a.g.set_outputs({b.r}); }, {"set_outputs", "another graph"});
  expect_error<ValueError>(
      [&] { a.g.add_call(op_id("relu"), {C(kiln::ones({2}))}, {b.h->meta()}); },
      {"tensor cannot be a constant"});
}

TEST(Graph, InsertPointPutsNewCallsBeforeANode) {
  Mlp m = make_mlp();
  Value* neg = nullptr;
  {
    Graph::InsertPoint at(m.g, m.h->producer());
    neg = call1(m.g, "neg", {V(m.x)});
  }
  const std::vector<Node*> calls = m.g.calls();
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[1], neg->producer());
  EXPECT_EQ(calls[2], m.h->producer());
  EXPECT_TRUE(m.g.comes_before(neg->producer(), m.h->producer()));
  EXPECT_FALSE(m.g.comes_before(m.h->producer(), neg->producer()));
  {
    Graph::InsertPoint at(m.g, m.x->producer());
    expect_error<ValueError>([&] { call1(m.g, "neg", {V(m.x)}); },
                             {"add_call(neg)", "insertion point is a placeholder"});
  }
  // After the scope, calls go to the end again.
  Value* last = call1(m.g, "neg", {V(m.r)});
  EXPECT_EQ(m.g.calls().back(), last->producer());
}

TEST(Graph, CloneIsIndependentAndKeepsIds) {
  Mlp m = make_mlp();
  m.h->producer()->set_has_side_effects(true);
  std::unordered_map<const Value*, Value*> mapping;
  Graph copy = m.g.clone(&mapping);
  EXPECT_EQ(to_string(copy), to_string(m.g));
  EXPECT_NE(mapping.at(m.h), m.h);
  EXPECT_EQ(mapping.at(m.h)->id(), m.h->id());
  EXPECT_TRUE(mapping.at(m.h)->producer()->has_side_effects());
  // Editing the copy leaves the original alone.
  Value* r2 = mapping.at(m.r);
  Value* extra = call1(copy, "neg", {V(r2)});
  copy.set_outputs({extra});
  EXPECT_EQ(m.g.outputs()[0], m.r);
  EXPECT_EQ(m.r->users().size(), 1u);
  EXPECT_NO_THROW(verify(copy));
  // New values in the copy do not reuse ids.
  EXPECT_EQ(copy.value(m.r->id()), r2);
  EXPECT_NE(extra->id(), m.r->id());
}

TEST(Graph, MovedGraphKeepsWorking) {
  Mlp m = make_mlp();
  Graph moved = std::move(m.g);
  EXPECT_EQ(m.r->producer()->owning_graph(), &moved);
  Value* extra = call1(moved, "neg", {V(m.r)});
  moved.set_outputs({extra});
  EXPECT_NO_THROW(verify(moved));
}

TEST(Graph, EmptyStridesMeanContiguous) {
  Graph g;
  TensorMeta meta;
  meta.dtype = kInt32;
  meta.sizes = {2, 1, 3};
  Value* x = g.add_placeholder("x", meta);
  ASSERT_EQ(x->meta().strides.size(), 3u);
  EXPECT_EQ(x->meta().strides[0].raw(), 3);
  EXPECT_EQ(x->meta().strides[1].raw(), 3);
  EXPECT_EQ(x->meta().strides[2].raw(), 1);
  EXPECT_TRUE(x->meta() == TensorMeta::contiguous(kInt32, {2, 1, 3}));
  EXPECT_EQ(to_string(x->meta()), "i32[2, 1, 3]");
}

TEST(Graph, SideEffectsComeFromTagsSchemaOrFlag) {
  Graph g;
  Value* x = input(g, "x", kFloat32, {3});
  Value* y = input(g, "y", kFloat32, {3});
  EXPECT_FALSE(call1(g, "add", {V(x), V(y), C(Scalar(1))})->producer()->has_side_effects());
  EXPECT_TRUE(call1(g, "add_", {V(x), V(y), C(Scalar(1))})->producer()->has_side_effects());
  EXPECT_TRUE(call1(g, "dropout", {V(x), C(0.5), C(1), C(0)})->producer()->has_side_effects());
  Node* relu = call1(g, "relu", {V(x)})->producer();
  relu->set_has_side_effects(true);
  EXPECT_TRUE(relu->has_side_effects());
}

}  // namespace
}  // namespace kiln::graph
