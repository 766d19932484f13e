// The graph verifier: the invariants every pass must keep (STYLE.md: one IR, a spec, an
// interpreter). Checked in program order; the first violation throws, naming the node's line.
#include <unordered_map>
#include <unordered_set>

#include "src/graph/graph.h"
#include "src/graph/higher_order.h"
#include "src/graph/meta_inference.h"
#include "src/graph/schema.h"

namespace kiln::graph {
namespace {

[[noreturn]] void fail(const Node& node, const std::string& what) {
  throw ValueError(fmt::format("verify: `{}`: {}", to_string(node), what));
}

// Users lists as sets, built on first use (a value may have thousands of users).
class UserSets {
 public:
  bool contains(const Value* v, const Node* user) {
    auto [it, inserted] = sets_.try_emplace(v);
    if (inserted) it->second.insert(v->users().begin(), v->users().end());
    return it->second.count(user) != 0;
  }

 private:
  std::unordered_map<const Value*, std::unordered_set<const Node*>> sets_;
};

void check_uses(const Graph& g, const Node& node, const std::unordered_set<const Value*>& defined,
                UserSets& user_sets) {
  for (const Arg& a : node.args()) {
    for (const Value* v : a.values()) {
      if (v->producer()->owning_graph() != &g) fail(node, v->name() + " belongs to another graph");
      if (v->producer()->erased())
        fail(node, v->name() + " is an output of an erased node; replace its uses before erasing");
      if (defined.count(v) == 0) fail(node, v->name() + " is used before it is defined");
      if (!user_sets.contains(v, &node))
        fail(node, "internal: the users list of " + v->name() + " does not contain this node");
    }
  }
}

// Each argument's form (value, list, constant) must fit its schema type.
void check_arg_kinds(const Node& node, const Schema& schema) {
  for (size_t i = 0; i < node.args().size() && i < schema.args.size(); ++i) {
    const Arg& a = node.args()[i];
    const SchemaArg& s = schema.args[i];
    const bool none = a.is_constant() && a.as_constant().is_none();
    bool ok = true;
    if (s.is_tensor())
      ok = a.is_value() || (none && s.optional());
    else if (s.is_tensor_list())
      ok = a.is_list() || (none && s.optional());
    else
      ok = a.is_constant() && (!none || s.optional() || s.default_text == "None");
    if (!ok)
      fail(node,
           fmt::format("argument {} ('{}') has schema type {} but is {}", i, s.name, s.type,
                       a.is_value()  ? "a value"
                       : a.is_list() ? "a list of values"
                                     : "the constant " + constant_to_string(a.as_constant())));
  }
}

void check_call(const Node& node) {
  const auto& ops = OpRegistry::instance().ops();
  if (node.op() >= ops.size())
    fail(node, fmt::format("op id {} is not in the op table", node.op()));
  const Schema& schema = schema_of(node.op_def());
  const size_t n = node.args().size();
  if (n > schema.args.size() || n < static_cast<size_t>(schema.num_required()))
    fail(node, fmt::format(
                   "{} arguments, but the schema `{}` takes {}{}", n, node.op_def().schema,
                   schema.num_required() == static_cast<int>(schema.args.size()) ? "" : "at most ",
                   schema.args.size()));
  check_arg_kinds(node, schema);
  if (!schema.returns_list && node.outputs().size() != static_cast<size_t>(schema.num_returns))
    fail(node, fmt::format("{} outputs, but the schema `{}` returns {}", node.outputs().size(),
                           node.op_def().schema, schema.num_returns));
}

void check_meta(const Node& node) {
  std::optional<std::vector<TensorMeta>> inferred;
  try {
    inferred = infer_output_metas(node.op(), node.args());
  } catch (const NotImplementedError&) {
    return;  // a data-dependent output size (outside a trace): nothing to compare against
  } catch (const Error& e) {
    fail(node, std::string("the op's meta function rejects the input metas: ") + e.what());
  }
  if (!inferred) return;  // symbolic or data-dependent: nothing to compare against
  if (inferred->size() != node.outputs().size())
    fail(node, fmt::format("the op's meta function gives {} outputs, the node has {}",
                           inferred->size(), node.outputs().size()));
  for (size_t i = 0; i < inferred->size(); ++i) {
    TensorMeta expected = (*inferred)[i];
    const TensorMeta& actual = node.outputs()[i]->meta();
    expected.requires_grad = actual.requires_grad;  // depends on grad mode, not on the op
    // The strides of a tensor with no elements are never used; kernels choose them freely.
    bool empty = false;
    for (SymInt s : actual.sizes) empty |= s.is_concrete() && s.expect_int() == 0;
    if (empty) expected.strides = actual.strides;
    if (!(expected == actual))
      fail(node, fmt::format("output {} has meta {} but the op's meta function gives {}",
                             node.outputs()[i]->name(), to_string(actual), to_string(expected)));
  }
}

}  // namespace

void verify(const Graph& g) {
  std::unordered_set<const Value*> defined;
  UserSets user_sets;
  bool seen_call = false;
  for (const Node* node : g.nodes()) {
    if (node->erased()) fail(*node, "internal: an erased node is still in program order");
    if (node->kind() == NodeKind::Placeholder && seen_call)
      fail(*node, "a placeholder after a call; inputs come first");
    seen_call |= node->kind() == NodeKind::Call;
    check_uses(g, *node, defined, user_sets);
    if (node->kind() == NodeKind::Call) {
      check_call(*node);
      if (is_higher_order(*node)) {
        verify_higher_order(*node);
      } else {
        if (!node->subgraphs().empty())
          fail(*node, fmt::format("{} is not a higher-order op but the node has subgraphs",
                                  node->op_def().name));
        check_meta(*node);
      }
    }
    if (node->kind() == NodeKind::Output) {
      for (const Value* v : node->args()[0].as_list())
        if (v == nullptr) fail(*node, "a graph output is null");
    }
    for (const Value* v : node->outputs()) {
      if (v->producer() != node) fail(*node, "internal: " + v->name() + " names another producer");
      if (!defined.insert(v).second) fail(*node, v->name() + " is defined twice");
      if (v->meta().strides.size() != v->meta().sizes.size())
        fail(*node, fmt::format("{} has {} sizes but {} strides", v->name(), v->meta().sizes.size(),
                                v->meta().strides.size()));
    }
  }
  if (g.output_node() == nullptr)
    throw ValueError("verify: the graph has no return; call Graph::set_outputs");
}

}  // namespace kiln::graph
