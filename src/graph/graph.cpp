#include "src/graph/graph.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <unordered_set>

#include "src/graph/schema.h"
#include "src/sym/expr.h"

namespace kiln::graph {

// ---- TensorMeta ----

SymDimVector TensorMeta::contiguous_strides(const SymDimVector& sizes) {
  SymDimVector strides(sizes.size());
  SymInt running = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = running;
    const SymInt s = sizes[d];
    running = running * (s.is_symbolic() || s.raw() > 1 ? s : SymInt(1));
  }
  return strides;
}

TensorMeta TensorMeta::contiguous(ScalarType dtype, SymDimVector sizes, bool requires_grad) {
  TensorMeta m;
  m.dtype = dtype;
  m.strides = contiguous_strides(sizes);
  m.sizes = std::move(sizes);
  m.requires_grad = requires_grad;
  return m;
}

TensorMeta TensorMeta::of(const Tensor& t) {
  TensorMeta m;
  m.dtype = t.dtype();
  const SymIntArrayRef sizes = t.impl()->sym_sizes();
  const SymIntArrayRef strides = t.impl()->sym_strides();
  m.sizes = SymDimVector(sizes.begin(), sizes.end());
  m.strides = SymDimVector(strides.begin(), strides.end());
  m.offset = t.impl()->sym_offset();
  m.requires_grad = t.requires_grad();
  m.wrapped_number = t.impl()->is_wrapped_number();
  return m;
}

bool TensorMeta::is_symbolic() const {
  auto symbolic = [](SymInt s) { return s.is_symbolic(); };
  return offset.is_symbolic() || std::any_of(sizes.begin(), sizes.end(), symbolic) ||
         std::any_of(strides.begin(), strides.end(), symbolic);
}

bool TensorMeta::has_contiguous_strides() const {
  if (strides.size() != sizes.size()) return false;
  const SymDimVector expected = contiguous_strides(sizes);
  for (size_t i = 0; i < sizes.size(); ++i)
    if (!same(expected[i], strides[i])) return false;
  return true;
}

bool operator==(const TensorMeta& a, const TensorMeta& b) {
  auto same_dims = [](const SymDimVector& x, const SymDimVector& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!same(x[i], y[i])) return false;
    return true;
  };
  return a.dtype == b.dtype && same_dims(a.sizes, b.sizes) && same_dims(a.strides, b.strides) &&
         same(a.offset, b.offset) && a.requires_grad == b.requires_grad &&
         a.wrapped_number == b.wrapped_number;
}

// ---- Value ----

std::string Value::name() const { return fmt::format("%{}", id_); }

// ---- Arg ----

std::vector<Value*> Arg::values() const {
  if (is_value()) return {as_value()};
  std::vector<Value*> out;
  if (is_list())
    for (Value* v : as_list())
      if (v != nullptr) out.push_back(v);
  return out;
}

namespace {

// A number boxed as int, float, bool or Scalar, as the Scalar an op would see.
std::optional<Scalar> as_number(const IValue& v) {
  if (v.is_int() || v.is_double() || v.is_bool() || v.is_scalar()) return v.scalar();
  return std::nullopt;
}

bool scalars_identical(const Scalar& a, const Scalar& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Scalar::Kind::Double:
      return std::bit_cast<uint64_t>(a.to_double()) == std::bit_cast<uint64_t>(b.to_double());
    case Scalar::Kind::UInt:
      return a.to_uint64() == b.to_uint64();
    default:
      return a.to_int64() == b.to_int64();
  }
}

}  // namespace

bool constants_equal(const IValue& a, const IValue& b) {
  const bool a_sym = a.is_int() && a.to_sym_int().is_symbolic();
  const bool b_sym = b.is_int() && b.to_sym_int().is_symbolic();
  if (a_sym || b_sym) return a_sym && b_sym && a.to_sym_int().raw() == b.to_sym_int().raw();
  const std::optional<Scalar> na = as_number(a), nb = as_number(b);
  if (na || nb) return na && nb && scalars_identical(*na, *nb);
  if (a.is_none() || b.is_none()) return a.is_none() && b.is_none();
  if (a.is_int_list() && b.is_int_list()) {
    const IntArrayRef x = raw_words(a), y = raw_words(b);
    return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin());
  }
  if (a.is_dtype() && b.is_dtype()) return a.dtype() == b.dtype();
  if (a.is_device() && b.is_device()) return a.device() == b.device();
  if (a.is_string() && b.is_string()) return a.string() == b.string();
  if (a.is_tensor() && b.is_tensor()) return a.tensor().impl() == b.tensor().impl();
  return false;
}

bool args_equal(const Arg& a, const Arg& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Arg::Kind::Value:
      return a.as_value() == b.as_value();
    case Arg::Kind::List:
      return a.as_list() == b.as_list();
    case Arg::Kind::Constant:
      return constants_equal(a.as_constant(), b.as_constant());
  }
  return false;
}

// ---- Node ----

OpId Node::op() const {
  KILN_CHECK(kind_ == NodeKind::Call, Error, "internal: op() of a node that is not a call");
  return op_;
}

const OpDef& Node::op_def() const { return OpRegistry::instance().get(op()); }

std::vector<Value*> Node::inputs() const {
  std::vector<Value*> out;
  for (const Arg& a : args_)
    for (Value* v : a.values())
      if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  return out;
}

bool Node::uses(const Value* v) const {
  for (const Arg& a : args_)
    for (Value* u : a.values())
      if (u == v) return true;
  return false;
}

// Called for a new node, or right after remove_use_of_args: the node is in no users list yet, and
// inputs() is distinct, so a plain push_back keeps each user once (no search: a value read by
// thousands of nodes must not make building the graph quadratic).
void Node::add_use_of_args() {
  for (Value* v : inputs()) v->users_.push_back(this);
}

void Node::remove_use_of_args() {
  for (Value* v : inputs()) std::erase(v->users_, this);
}

void Node::set_arg(size_t i, Arg arg) {
  KILN_CHECK(i < args_.size(), IndexError, "Node::set_arg: index {} out of range for {} arguments",
             i, args_.size());
  if (graph_ != nullptr) graph_->check_owned(arg, "Node::set_arg");
  remove_use_of_args();
  args_[i] = std::move(arg);
  add_use_of_args();
}

bool Node::mutates() const {
  if (kind_ != NodeKind::Call) return false;
  const OpDef& def = op_def();
  if (def.has_tag(kTagInplace)) return true;
  const Schema& schema = schema_of(def);
  if (!schema.mutates_an_argument) return false;
  // A written optional argument passed as None writes nothing (batch_norm without running
  // statistics).
  for (size_t i = 0; i < schema.args.size() && i < args_.size(); ++i)
    if (schema.args[i].mutated && !args_[i].is_constant()) return true;
  return false;
}

namespace {

// Note [A node that defines a size]
// nonzero(x) : [u0, 1] or x[mask] : [u0] introduces u0: the executor binds it from the output's
// size right after the node runs. A later node may use u0 without reading the output (`x *
// x.nonzero().size(0)`), so such a node stays live when nothing reads its output, like
// `_local_scalar_dense` (kTagDefinesSymbol). It defines a size when an output size is a symbol
// that none of its arguments (tensor sizes, integers) mentions.
bool defines_a_size(const Node& node) {
  bool symbolic_output = false;
  for (const Value* out : node.outputs())
    for (SymInt s : out->meta().sizes) symbolic_output |= s.is_symbolic();
  if (!symbolic_output) return false;
  std::unordered_set<sym::ExprPtr> mentioned;
  auto mention = [&](SymInt v) {
    if (!v.is_symbolic()) return;
    for (sym::ExprPtr s : sym::free_symbols(v.expr())) mentioned.insert(s);
  };
  for (const Arg& a : node.args()) {
    for (const Value* v : a.values())
      for (SymInt s : v->meta().sizes) mention(s);
    if (!a.is_constant()) continue;
    const IValue& c = a.as_constant();
    if (c.is_int()) mention(c.to_sym_int());
    if (c.is_int_list())
      for (SymInt v : c.sym_int_list()) mention(v);
  }
  for (const Value* out : node.outputs())
    for (SymInt s : out->meta().sizes)
      if (s.is_symbolic() && s.expr()->is_symbol() && !mentioned.contains(s.expr())) return true;
  return false;
}

}  // namespace

bool Node::has_side_effects() const {
  if (side_effects_flag_) return true;
  if (kind_ != NodeKind::Call) return kind_ == NodeKind::Output;
  return mutates() || op_def().has_tag(kTagRandom) || op_def().has_tag(kTagDefinesSymbol) ||
         defines_a_size(*this);
}

// ---- Graph ----

Graph::Graph() = default;
Graph::~Graph() = default;
Graph::Graph(Graph&& other) noexcept { *this = std::move(other); }

Graph& Graph::operator=(Graph&& other) noexcept {
  nodes_ = std::move(other.nodes_);
  pending_ids_ = std::move(other.pending_ids_);
  erased_ = std::move(other.erased_);
  output_holder_ = std::move(other.output_holder_);
  output_node_ = std::exchange(other.output_node_, nullptr);
  placeholders_ = std::move(other.placeholders_);
  values_by_id_ = std::move(other.values_by_id_);
  insert_before_ = std::exchange(other.insert_before_, nullptr);
  next_id_ = std::exchange(other.next_id_, 0);
  for (auto& n : nodes_) n->graph_ = this;
  for (auto& n : erased_) n->graph_ = this;
  if (output_holder_) output_holder_->graph_ = this;
  return *this;
}

Value* Graph::new_value(Node* producer, int index, TensorMeta meta) {
  // Empty strides mean contiguous (metas written by hand); see TensorMeta.
  if (meta.strides.empty() && !meta.sizes.empty())
    meta.strides = TensorMeta::contiguous_strides(meta.sizes);
  int id = 0;
  if (!pending_ids_.empty()) {
    id = pending_ids_.back();
    pending_ids_.pop_back();
    next_id_ = std::max(next_id_, id + 1);
  } else {
    while (values_by_id_.count(next_id_) != 0) ++next_id_;
    id = next_id_++;
  }
  auto value = std::unique_ptr<Value>(new Value(producer, index, id, std::move(meta)));
  Value* v = value.get();
  values_by_id_[v->id_] = v;
  producer->owned_outputs_.push_back(std::move(value));
  producer->output_ptrs_.push_back(v);
  return v;
}

void Graph::set_next_value_ids(std::vector<int> ids) {
  for (size_t i = 0; i < ids.size(); ++i) {
    KILN_CHECK(ids[i] >= 0 && values_by_id_.count(ids[i]) == 0 &&
                   std::find(ids.begin(), ids.begin() + i, ids[i]) == ids.begin() + i,
               ValueError, "value id %{} is negative or already defined in this graph", ids[i]);
  }
  pending_ids_.assign(ids.rbegin(), ids.rend());
}

Value* Graph::value(int id) const {
  auto it = values_by_id_.find(id);
  return it == values_by_id_.end() ? nullptr : it->second;
}

void Graph::check_owned(const Arg& arg, std::string_view caller, std::string_view op) const {
  // `what` is formatted only on failure: add_call is on the tracer's hot path.
  auto what = [&] { return op.empty() ? std::string(caller) : fmt::format("{}({})", caller, op); };
  auto check = [&](const Value* v) {
    KILN_CHECK(v == nullptr || v->producer()->owning_graph() == this, ValueError,
               "{}: value {} belongs to another graph; values can only be used in the graph that "
               "defines them (clone the graph or add a placeholder)",
               what(), v->name());
  };
  if (arg.is_value()) check(arg.as_value());
  if (arg.is_list())
    for (const Value* v : arg.as_list()) check(v);
  if (arg.is_constant())
    KILN_CHECK(!arg.as_constant().is_tensor() && !arg.as_constant().is_tensor_list(), ValueError,
               "{}: a tensor cannot be a constant argument; make it a placeholder", what());
}

Value* Graph::add_placeholder(std::string source, TensorMeta meta) {
  auto node = std::unique_ptr<Node>(new Node(this, NodeKind::Placeholder));
  node->source_ = std::move(source);
  Node* n = node.get();
  // After the last placeholder: inputs stay in front of every call.
  auto pos = nodes_.begin();
  if (!placeholders_.empty()) pos = std::next(placeholders_.back()->producer()->position_);
  n->position_ = nodes_.insert(pos, std::move(node));
  Value* v = new_value(n, 0, std::move(meta));
  placeholders_.push_back(v);
  return v;
}

std::vector<Value*> Graph::add_call(OpId op, std::vector<Arg> args,
                                    std::vector<TensorMeta> outputs) {
  KILN_CHECK(op < OpRegistry::instance().ops().size(), ValueError,
             "Graph::add_call: op id {} is not in the op table", op);
  for (const Arg& a : args) check_owned(a, "Graph::add_call", OpRegistry::instance().get(op).name);
  KILN_CHECK(
      insert_before_ == nullptr || insert_before_->kind_ != NodeKind::Placeholder, ValueError,
      "Graph::add_call({}): the insertion point is a placeholder, but calls come after every "
      "placeholder; insert before a call",
      OpRegistry::instance().get(op).name);
  auto node = std::unique_ptr<Node>(new Node(this, NodeKind::Call));
  Node* n = node.get();
  n->op_ = op;
  n->args_ = std::move(args);
  auto pos = insert_before_ != nullptr && !insert_before_->erased_ &&
                     insert_before_->kind_ != NodeKind::Output
                 ? insert_before_->position_
                 : nodes_.end();
  n->position_ = nodes_.insert(pos, std::move(node));
  for (size_t i = 0; i < outputs.size(); ++i)
    new_value(n, static_cast<int>(i), std::move(outputs[i]));
  n->add_use_of_args();
  return n->output_ptrs_;
}

Value* Graph::add_call1(OpId op, std::vector<Arg> args, TensorMeta output) {
  std::vector<TensorMeta> outs;
  outs.push_back(std::move(output));
  return add_call(op, std::move(args), std::move(outs))[0];
}

void Graph::set_outputs(std::vector<Value*> outputs) {
  Arg arg = Arg::list(std::move(outputs));
  check_owned(arg, "Graph::set_outputs");
  for (Value* v : arg.as_list())
    KILN_CHECK(v != nullptr, ValueError, "Graph::set_outputs: an output is null");
  if (output_node_ == nullptr) {
    output_holder_ = std::unique_ptr<Node>(new Node(this, NodeKind::Output));
    output_node_ = output_holder_.get();
    output_node_->args_.push_back(std::move(arg));
    output_node_->add_use_of_args();
  } else {
    output_node_->set_arg(0, std::move(arg));
  }
}

std::span<Value* const> Graph::outputs() const {
  if (output_node_ == nullptr) return {};
  return output_node_->args_[0].as_list();
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size() + 1);
  for (const auto& n : nodes_) out.push_back(n.get());
  if (output_node_ != nullptr) out.push_back(output_node_);
  return out;
}

std::vector<Node*> Graph::calls() const {
  std::vector<Node*> out;
  for (const auto& n : nodes_)
    if (n->kind_ == NodeKind::Call) out.push_back(n.get());
  return out;
}

void Graph::replace_all_uses(Value* from, Value* to) {
  if (from == to) return;
  KILN_CHECK(from->producer()->owning_graph() == this && to->producer()->owning_graph() == this,
             ValueError, "Graph::replace_all_uses({}, {}): both values must belong to this graph",
             from->name(), to->name());
  const std::vector<Node*> users = from->users_;
  std::unordered_set<const Node*> to_users(to->users_.begin(), to->users_.end());
  for (Node* user : users) {
    for (Arg& a : user->args_) {
      if (a.is_value() && a.as_value() == from) {
        a = Arg::value(to);
      } else if (a.is_list()) {
        std::vector<Value*> list = a.as_list();
        std::replace(list.begin(), list.end(), from, to);
        a = Arg::list(std::move(list));
      }
    }
    if (to_users.insert(user).second) to->users_.push_back(user);
  }
  from->users_.clear();
}

void Graph::erase_node(Node* node) {
  KILN_CHECK(node->graph_ == this && !node->erased_, ValueError,
             "Graph::erase_node: the node is not a live node of this graph");
  KILN_CHECK(node->kind_ != NodeKind::Output, ValueError,
             "Graph::erase_node: the output node cannot be erased; use set_outputs");
  for (Value* v : node->output_ptrs_)
    KILN_CHECK(v->users_.empty(), ValueError,
               "Graph::erase_node: {} still has {} user(s) (first: {}); replace its uses first",
               v->name(), v->users_.size(), to_string(*v->users_[0]));
  if (insert_before_ == node) insert_before_ = nullptr;
  node->remove_use_of_args();
  node->erased_ = true;
  for (Value* v : node->output_ptrs_) values_by_id_.erase(v->id_);
  if (node->kind_ == NodeKind::Placeholder) std::erase(placeholders_, node->output_ptrs_[0]);
  erased_.splice(erased_.end(), nodes_, node->position_);
}

bool Graph::comes_before(const Node* a, const Node* b) const {
  if (b == output_node_) return a != output_node_;
  for (const auto& n : nodes_) {
    if (n.get() == a) return a != b;
    if (n.get() == b) return false;
  }
  return false;
}

Graph Graph::clone(std::unordered_map<const Value*, Value*>* mapping) const {
  Graph g;
  std::unordered_map<const Value*, Value*> local;
  std::unordered_map<const Value*, Value*>& map = mapping != nullptr ? *mapping : local;
  auto lookup = [&](const Value* v) {
    auto it = map.find(v);
    KILN_CHECK(it != map.end(), ValueError,
               "Graph::clone: {} is used before it is defined or by an erased node; run verify()",
               v->name());
    return it->second;
  };
  auto remap = [&](const Arg& a) {
    if (a.is_value()) return Arg::value(lookup(a.as_value()));
    if (a.is_list()) {
      std::vector<Value*> list;
      for (Value* v : a.as_list()) list.push_back(v == nullptr ? nullptr : lookup(v));
      return Arg::list(std::move(list));
    }
    return a;
  };
  for (const auto& n : nodes_) {
    std::vector<int> ids;
    for (const Value* v : n->output_ptrs_) ids.push_back(v->id_);
    g.set_next_value_ids(std::move(ids));
    std::vector<Value*> outs;
    if (n->kind_ == NodeKind::Placeholder) {
      outs.push_back(g.add_placeholder(n->source_, n->output_ptrs_[0]->meta_));
    } else {
      std::vector<Arg> args;
      for (const Arg& a : n->args_) args.push_back(remap(a));
      auto node = std::unique_ptr<Node>(new Node(&g, NodeKind::Call));
      Node* c = node.get();
      c->op_ = n->op_;
      c->args_ = std::move(args);
      c->side_effects_flag_ = n->side_effects_flag_;
      c->grad_mode_ = n->grad_mode_;
      c->subgraphs_ =
          n->subgraphs_;  // immutable, so shared (Note [Subgraphs of a higher-order op])
      c->position_ = g.nodes_.insert(g.nodes_.end(), std::move(node));
      for (Value* v : n->output_ptrs_) outs.push_back(g.new_value(c, v->output_index_, v->meta_));
      c->add_use_of_args();
    }
    for (size_t i = 0; i < outs.size(); ++i) map[n->output_ptrs_[i]] = outs[i];
  }
  if (output_node_ != nullptr) g.set_outputs(remap(output_node_->args_[0]).as_list());
  g.next_id_ = std::max(g.next_id_, next_id_);
  return g;
}

}  // namespace kiln::graph
