#include "src/aot/functionalize.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>

#include "kiln/error.h"
#include "src/dispatch/dispatcher.h"
#include "src/graph/decompose.h"
#include "src/graph/meta_inference.h"
#include "src/graph/node_rewriter.h"

namespace kiln::aot {
namespace {

using graph::Arg;
using graph::Node;
using graph::Value;

bool mutates_through_schema(const OpDef& op) {
  return !op.has_tag(kTagInplace) && op.schema.find('!') != std::string::npos;
}

// Note [Batch norm's running statistics, functionalized]
// A training-mode native_batch_norm writes its running statistics. Decomposing it here, to
// functionalize that write, would make the joint graph's backward autograd through the mean and
// variance: one more reduction pass over the activations per layer than
// native_batch_norm_backward's closed form. Instead the op runs without running statistics, and
// the update is computed under no_grad from the statistics it saves: var = 1/invstd^2 - eps,
// made unbiased with n / (n - 1), then r * (1 - momentum) + stat * momentum, as the decomposition
// (Note [Running statistics in decomposed batch_norm]) computes it up to float rounding. The
// joint graph then holds native_batch_norm and native_batch_norm_backward, which aot_compile
// decomposes before partitioning, so min-cut can still recompute the normalization's pointwise
// part. Only for float32/float64 inputs with running statistics of their dtype and a static,
// non-empty batch (a reduced dtype's saved invstd is too coarse for the variance); the rest is
// decomposed here as before.
void functionalize_batch_norm(graph::Graph& g) {
  for (Node* node : g.calls()) {
    if (node->op_def().name != "native_batch_norm") continue;
    graph::NodeRewriter b(g, *node);
    Value* x = b.input(0);
    Value *running_mean = b.input(3), *running_var = b.input(4);
    const ScalarType dt = x->meta().dtype;
    if (!b.constant(5).to_bool() || running_mean == nullptr || running_var == nullptr ||
        (dt != kFloat32 && dt != kFloat64) || running_mean->meta().dtype != dt ||
        running_var->meta().dtype != dt)
      continue;
    const SymDimVector& sizes = x->meta().sizes;
    int64_t n = 1;
    bool known = sizes.size() >= 2;
    for (size_t d = 0; known && d < sizes.size(); ++d) {
      known = !sizes[d].is_symbolic();
      if (known && d != 1) n *= sizes[d].raw();
    }
    if (!known || n == 0) continue;
    const double momentum = b.constant(6).to_double(), eps = b.constant(7).to_double();
    const graph::Arg none = graph::NodeRewriter::C(IValue());
    const std::vector<Value*> outs =
        b.call("native_batch_norm",
               {b.arg(0), b.arg(1), b.arg(2), none, none, b.arg(5), b.arg(6), b.arg(7)});
    std::vector<Value*> update;
    auto keep = [&](Value* v) {
      update.push_back(v);
      return v;
    };
    Value* square = keep(b.mul(outs[2], outs[2]));
    Value* var = keep(b.sub(keep(b.unary("reciprocal", square)), Scalar(eps)));
    Value* unbiased = n > 1 ? keep(b.mul(var, Scalar(static_cast<double>(n) / (n - 1)))) : var;
    for (auto [running, stat] :
         {std::pair{running_mean, outs[1]}, std::pair{running_var, unbiased}}) {
      Value* old = keep(b.mul(running, Scalar(1.0 - momentum)));
      Value* updated = keep(b.add(old, keep(b.mul(stat, Scalar(momentum)))));
      keep(b.copy_into(running, updated));
    }
    for (Value* v : update) v->producer()->set_grad_mode(Node::GradMode::Disabled);
    for (size_t i = 0; i < outs.size(); ++i) g.replace_all_uses(node->output(i), outs[i]);
    g.erase_node(node);
  }
}

// Decomposes the ops that write an argument through their schema (Note [Functionalization]),
// leaving every other op as it is.
void decompose_schema_mutations(graph::Graph& g) {
  functionalize_batch_norm(g);
  bool any = false;
  for (const Node* node : g.calls())
    any |= mutates_through_schema(node->op_def()) && node->mutates();
  if (!any) return;
  std::vector<std::string> names;
  for (const std::string& name : graph::decomposed_op_names())
    if (!mutates_through_schema(OpRegistry::instance().get(OpRegistry::instance().id(name))))
      names.push_back(name);
  std::vector<std::string_view> keep(names.begin(), names.end());
  graph::decompose(g, keep);
  for (const Node* node : g.calls())
    KILN_CHECK(!mutates_through_schema(node->op_def()) || !node->mutates(), NotImplementedError,
               "functionalize: {} writes an argument and has no decomposition",
               graph::to_string(*node));
}

OpId op(std::string_view name) { return OpRegistry::instance().id(name); }

// `v` as `meta`'s dtype (a copy only when the dtype differs).
Value* cast_to(graph::Graph& g, Value* v, const graph::TensorMeta& meta) {
  if (v->meta().dtype == meta.dtype) return v;
  graph::TensorMeta m = graph::TensorMeta::contiguous(meta.dtype, v->meta().sizes);
  return g.add_call1(op("_to_copy"), {Arg::value(v), Arg::constant(IValue(meta.dtype))}, m);
}

// The functional value an in-place node computes, inserted before it.
Value* functional_value(graph::Graph& g, Node& node) {
  const OpDef& def = node.op_def();
  const graph::TensorMeta& out = node.output()->meta();
  graph::Graph::InsertPoint at(g, &node);
  if (def.name == "copy_") {
    Value* src = node.args()[1].as_value();
    Value* cast = cast_to(g, src, out);
    if (cast->meta().sizes != out.sizes) {
      // Broadcast (a view: stride 0 in the new dims), then materialized by clone.
      graph::TensorMeta view = cast->meta();
      view.sizes = out.sizes;
      view.strides = SymDimVector(out.sizes.size(), SymInt(0));
      const size_t lead = out.sizes.size() - cast->meta().sizes.size();
      for (size_t d = 0; d < cast->meta().sizes.size(); ++d)
        if (cast->meta().sizes[d] == out.sizes[lead + d])
          view.strides[lead + d] = cast->meta().strides[d];
      cast = g.add_call1(op("expand"), {Arg::value(cast), Arg::constant(IValue(out.sizes))}, view);
    }
    return g.add_call1(op("clone"), {Arg::value(cast)},
                       graph::TensorMeta::contiguous(out.dtype, out.sizes));
  }
  if (def.name == "fill_") {
    return g.add_call1(op("full"),
                       {Arg::constant(IValue(out.sizes)), node.args()[1],
                        Arg::constant(IValue(out.dtype)), Arg::constant(IValue(Device::CPU))},
                       graph::TensorMeta::contiguous(out.dtype, out.sizes));
  }
  std::string name = def.name;
  const size_t dot = name.find('.');
  const std::string base = name.substr(0, dot),
                    overload = dot == std::string::npos ? "" : name.substr(dot);
  KILN_CHECK(!base.empty() && base.back() == '_', NotImplementedError,
             "functionalize: in-place op {} has no functional form", def.name);
  const OpDef* functional = OpRegistry::instance().find(base.substr(0, base.size() - 1) + overload);
  KILN_CHECK(functional != nullptr && def.name != "index_put_", NotImplementedError,
             "functionalize: in-place op {} has no functional form yet; the graph runs through "
             "the eager autograd engine",
             def.name);
  std::optional<std::vector<graph::TensorMeta>> metas =
      graph::infer_output_metas(functional->id, node.args());
  KILN_CHECK(metas && metas->size() == 1, NotImplementedError,
             "functionalize: cannot compute the output of {}", functional->name);
  Value* result = g.add_call1(functional->id, node.args(), (*metas)[0]);
  result->producer()->set_grad_mode(node.grad_mode());
  return cast_to(g, result, out);
}

}  // namespace

FunctionalGraph functionalize(const graph::Graph& input) {
  FunctionalGraph result;
  graph::Graph& g = result.graph;
  g = input.clone();
  decompose_schema_mutations(g);
  result.num_outputs = static_cast<int>(g.outputs().size());

  std::unordered_map<const Value*, int> placeholder_index;
  for (size_t i = 0; i < g.placeholders().size(); ++i)
    placeholder_index[g.placeholders()[i]] = static_cast<int>(i);
  // Per mutated input, its latest value.
  std::vector<std::pair<int, Value*>> latest;

  for (Node* node : g.calls()) {
    if (!node->op_def().has_tag(kTagInplace)) continue;
    Value* target = node->args()[0].as_value();
    const Node* producer = target->producer();
    KILN_CHECK(producer->kind() != graph::NodeKind::Call || !producer->op_def().has_tag(kTagView),
               NotImplementedError,
               "functionalize: {} mutates a view; mutations through views run through the eager "
               "autograd engine for now",
               graph::to_string(*node));
    for (const Node* user : target->users())
      KILN_CHECK(user->kind() != graph::NodeKind::Call || !user->op_def().has_tag(kTagView),
                 NotImplementedError,
                 "functionalize: {} mutates a tensor that a view ({}) aliases; such graphs run "
                 "through the eager autograd engine for now",
                 graph::to_string(*node), graph::to_string(*user));
    Value* functional = functional_value(g, *node);
    Value* old = node->output();
    g.replace_all_uses(old, functional);
    g.erase_node(node);
    // Find the input this chain of mutations started from.
    const Value* root = target;
    for (const auto& [index, value] : latest)
      if (value == target) root = g.placeholders()[index];
    if (auto it = placeholder_index.find(root); it != placeholder_index.end()) {
      bool found = false;
      for (auto& [index, value] : latest)
        if (index == it->second) value = functional, found = true;
      if (!found) latest.emplace_back(it->second, functional);
    }
  }
  std::vector<Value*> outputs(g.outputs().begin(), g.outputs().end());
  for (const auto& [index, value] : latest) {
    outputs.push_back(value);
    result.mutated_inputs.push_back(index);
  }
  g.set_outputs(std::move(outputs));
  for (const Node* node : g.calls())
    KILN_CHECK(!node->mutates(), NotImplementedError, "functionalize: {} still mutates",
               graph::to_string(*node));
  return result;
}

graph::Graph functionalize_with_copy_back(const graph::Graph& g) {
  FunctionalGraph f = functionalize(g);
  graph::Graph& out = f.graph;
  const std::vector<Value*> all(out.outputs().begin(), out.outputs().end());
  std::vector<Value*> outputs(all.begin(), all.begin() + f.num_outputs);
  const auto placeholders = out.placeholders();
  const std::vector<Node*> calls = out.calls();
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < calls.size(); ++i) position[calls[i]] = i;
  for (size_t k = 0; k < f.mutated_inputs.size(); ++k) {
    Value* input = placeholders[f.mutated_inputs[k]];
    Value* value = all[f.num_outputs + k];
    // As early as possible: once the final value exists and the old one has been read for the
    // last time, so that the store lands next to the computation that feeds it (one kernel).
    std::optional<size_t> last;
    auto after = [&](const Node* node) {
      if (auto it = position.find(node); it != position.end())
        last = std::max(last.value_or(0), it->second);
    };
    after(value->producer());
    for (const Node* user : input->users()) after(user);
    std::optional<graph::Graph::InsertPoint> at;
    if (last && *last + 1 < calls.size()) at.emplace(out, calls[*last + 1]);
    Value* copied =
        out.add_call1(op("copy_"), {Arg::value(input), Arg::value(value)}, input->meta());
    for (Value*& o : outputs)
      if (o == value) o = copied;
  }
  out.set_outputs(std::move(outputs));
  return std::move(f.graph);
}

}  // namespace kiln::aot
