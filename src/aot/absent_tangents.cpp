// Note [Absent tangents] (absent_tangents.h).
#include "src/aot/absent_tangents.h"

#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "kiln/error.h"
#include "src/graph/meta_inference.h"
#include "src/graph/schema.h"

namespace kiln::aot {
namespace {

using graph::Arg;
using graph::Node;
using graph::TensorMeta;
using graph::Value;

// How an op's result depends on an argument that is zero.
enum class ZeroRule {
  kNone,      // not known to be linear: a zero argument is materialized
  kFirstArg,  // linear in argument 0 (the others are not gradients): zero when it is
  kAnyArg,    // a product of its tensor arguments: zero when any is
  kSum,       // add / sub: the other operand
  kAllArgs,   // cat, stack, where's two branches: zero when every candidate is
};

// Ops linear in their first argument, named; plus every op whose first argument is called
// grad_output, grad_out or grad (the derivative ops: linear in the incoming gradient).
const std::unordered_set<std::string_view>& first_arg_linear_ops() {
  static const std::unordered_set<std::string_view> ops = {
      "neg",          "clone",       "_to_copy",   "sum",
      "mean",         "cumsum",      "flip",       "roll",
      "repeat",       "as_strided",  "diagonal",   "expand",
      "permute",      "reshape",     "select",     "slice",
      "squeeze",      "squeeze.dim", "transpose",  "unfold",
      "unsqueeze",    "view",        "tril",       "triu",
      "index_select", "gather",      "mul.Scalar", "div.Scalar",
      "div",          "chunk",       "split",      "split_with_sizes"};
  return ops;
}

bool constant_is(const Arg& a, double value) {
  if (!a.is_constant()) return false;
  const IValue& c = a.as_constant();
  if (c.is_none()) return value == 0;
  if (c.is_scalar()) return c.scalar().to_double() == value;
  if (c.is_int() || c.is_double()) return c.to_double() == value;
  if (c.is_bool()) return static_cast<double>(c.to_bool()) == value;
  return false;
}

ZeroRule rule_of(const Node& node) {
  const OpDef& def = node.op_def();
  const std::string_view name = def.name;
  if (first_arg_linear_ops().count(name) != 0) return ZeroRule::kFirstArg;
  if (name == "mul" || name == "mm" || name == "bmm" || name == "matmul") return ZeroRule::kAnyArg;
  if (name == "add" || name == "sub") return ZeroRule::kSum;
  if (name == "cat" || name == "stack" || name == "where" || name == "where.ScalarOther" ||
      name == "where.ScalarSelf")
    return ZeroRule::kAllArgs;
  // masked_fill(zero, mask, 0) and a constant pad with 0 stay zero; other values do not.
  if (name == "masked_fill")
    return constant_is(node.args().at(2), 0) ? ZeroRule::kFirstArg : ZeroRule::kNone;
  if (name == "pad") {
    const bool constant_mode = node.args().size() < 3 || !node.args()[2].is_constant() ||
                               node.args()[2].as_constant().is_none() ||
                               node.args()[2].as_constant().string() == "constant";
    const bool zero_value = node.args().size() < 4 || constant_is(node.args()[3], 0);
    return constant_mode && zero_value ? ZeroRule::kFirstArg : ZeroRule::kNone;
  }
  const graph::Schema& schema = graph::schema_of(def);
  if (!schema.args.empty()) {
    const std::string& first = schema.args[0].name;
    if (first == "grad_output" || first == "grad_out" || first == "grad")
      return ZeroRule::kFirstArg;
  }
  return ZeroRule::kNone;
}

class Specializer {
 public:
  Specializer(const graph::Graph& backward, int num_saved, const std::vector<bool>& absent,
              bool keep_absent_inputs)
      : backward_(backward),
        num_saved_(num_saved),
        absent_(absent),
        keep_absent_inputs_(keep_absent_inputs) {}

  SpecializedBackward run() {
    const auto placeholders = backward_.placeholders();
    KILN_CHECK(placeholders.size() == static_cast<size_t>(num_saved_) + absent_.size(), ValueError,
               "specialize_for_absent_tangents: the backward graph has {} inputs, expected {} "
               "saved values and {} tangents",
               placeholders.size(), num_saved_, absent_.size());
    for (size_t i = 0; i < placeholders.size(); ++i) {
      const Value* v = placeholders[i];
      const bool is_absent = i >= static_cast<size_t>(num_saved_) && absent_[i - num_saved_];
      if (is_absent) {
        zero_.insert(v);
        if (keep_absent_inputs_) out_.add_placeholder(v->producer()->source(), v->meta());
      } else {
        env_[v] = out_.add_placeholder(v->producer()->source(), v->meta());
      }
    }
    for (const Node* node : backward_.calls()) copy_call(*node);
    SpecializedBackward result;
    std::vector<Value*> outputs;
    for (const Value* v : backward_.outputs()) {
      const bool defined = zero_.count(v) == 0;
      result.grad_defined.push_back(defined);
      if (defined) outputs.push_back(env_.at(v));
    }
    out_.set_outputs(std::move(outputs));
    graph::eliminate_dead_code(out_);
    result.graph = std::move(out_);
    return result;
  }

 private:
  bool is_zero(const Value* v) const { return v != nullptr && zero_.count(v) != 0; }

  // A real zeros tensor for the zero value v (one per value).
  Value* materialize(const Value* v) {
    auto it = materialized_.find(v);
    if (it != materialized_.end()) return it->second;
    const TensorMeta& m = v->meta();
    Value* z = out_.add_call1(op_id("full"),
                              {Arg::constant(IValue(m.sizes)), Arg::constant(IValue(Scalar(0))),
                               Arg::constant(IValue(m.dtype)), Arg::constant(IValue(Device::CPU))},
                              TensorMeta::contiguous(m.dtype, m.sizes));
    materialized_[v] = z;
    return z;
  }

  Value* mapped(const Value* v) { return is_zero(v) ? materialize(v) : env_.at(v); }

  // The node's outputs are zero when this returns true.
  bool outputs_are_zero(const Node& node, ZeroRule rule) const {
    const std::vector<Arg>& args = node.args();
    switch (rule) {
      case ZeroRule::kNone:
        return false;
      case ZeroRule::kFirstArg:
        return !args.empty() && args[0].is_value() && is_zero(args[0].as_value());
      case ZeroRule::kAnyArg:
        for (const Arg& a : args)
          if (a.is_value() && is_zero(a.as_value())) return true;
        return false;
      case ZeroRule::kSum:
        return args.size() >= 2 && args[0].is_value() && args[1].is_value() &&
               is_zero(args[0].as_value()) && is_zero(args[1].as_value());
      case ZeroRule::kAllArgs: {
        // cat/stack: every list element; where(condition, a, b): a and b, each a zero tensor or
        // the constant 0 (a ReLU's backward is where(x > 0, grad, 0)).
        if (node.op_def().name.starts_with("where")) {
          auto zero_branch = [&](size_t i) {
            return i < args.size() &&
                   (args[i].is_value() ? is_zero(args[i].as_value()) : constant_is(args[i], 0));
          };
          return zero_branch(1) && zero_branch(2);
        }
        if (args.empty() || !args[0].is_list()) return false;
        for (const Value* v : args[0].as_list())
          if (v == nullptr || !is_zero(v)) return false;
        return true;
      }
    }
    return false;
  }

  // add(a, b, alpha) or sub(a, b, alpha) with one zero operand: the other one, when it already is
  // the result (same meta, so no broadcast or type promotion happened, and alpha does not scale
  // it); nullptr otherwise.
  const Value* passed_through(const Node& node) const {
    const std::vector<Arg>& args = node.args();
    if (args.size() < 2 || !args[0].is_value() || !args[1].is_value()) return nullptr;
    const Value* a = args[0].as_value();
    const Value* b = args[1].as_value();
    const TensorMeta& result = node.output()->meta();
    const bool alpha_one = args.size() < 3 || constant_is(args[2], 1);
    if (is_zero(b) && !is_zero(a) && a->meta() == result) return a;
    if (is_zero(a) && !is_zero(b) && node.op_def().name == "add" && alpha_one &&
        b->meta() == result)
      return b;
    return nullptr;
  }

  void copy_call(const Node& node) {
    bool reads_zero = false;
    for (const Arg& a : node.args())
      for (const Value* v : a.values()) reads_zero |= is_zero(v);
    if (reads_zero && !node.has_side_effects()) {
      const ZeroRule rule = rule_of(node);
      if (outputs_are_zero(node, rule)) {
        for (const Value* out : node.outputs()) zero_.insert(out);
        return;
      }
      if (rule == ZeroRule::kSum) {
        if (const Value* other = passed_through(node)) {
          env_[node.output()] = env_.at(other);
          return;
        }
      }
    }
    std::vector<Arg> args;
    bool metas_changed = false;
    for (const Arg& a : node.args()) {
      if (a.is_value()) {
        Value* v = mapped(a.as_value());
        metas_changed |= !(v->meta() == a.as_value()->meta());
        args.push_back(Arg::value(v));
      } else if (a.is_list()) {
        std::vector<Value*> list;
        for (const Value* v : a.as_list()) {
          list.push_back(v == nullptr ? nullptr : mapped(v));
          metas_changed |= v != nullptr && !(list.back()->meta() == v->meta());
        }
        args.push_back(Arg::list(std::move(list)));
      } else {
        args.push_back(a);
      }
    }
    std::vector<TensorMeta> metas;
    for (const Value* out : node.outputs()) metas.push_back(out->meta());
    // A materialized zero is contiguous; where the value it stands for was not, the op's output
    // layout may differ from the recorded one.
    if (metas_changed) {
      if (auto inferred = graph::infer_symbolic_output_metas(node.op(), args)) {
        for (size_t i = 0; i < metas.size() && i < inferred->size(); ++i) {
          (*inferred)[i].requires_grad = metas[i].requires_grad;
          metas[i] = (*inferred)[i];
        }
      }
    }
    std::vector<Value*> outs = out_.add_call(node.op(), std::move(args), std::move(metas));
    Node* copy = outs.empty() ? nullptr : outs[0]->producer();
    if (copy != nullptr) {
      copy->set_grad_mode(node.grad_mode());
      if (node.has_side_effects()) copy->set_has_side_effects(true);
      copy->set_subgraphs(node.subgraphs());  // a higher-order op's bodies
    }
    for (size_t i = 0; i < outs.size(); ++i) env_[node.outputs()[i]] = outs[i];
  }

  const graph::Graph& backward_;
  int num_saved_;
  const std::vector<bool>& absent_;
  bool keep_absent_inputs_ = false;
  graph::Graph out_;
  std::unordered_map<const Value*, Value*> env_;
  std::unordered_set<const Value*> zero_;
  std::unordered_map<const Value*, Value*> materialized_;
};

}  // namespace

SpecializedBackward specialize_for_absent_tangents(const graph::Graph& backward, int num_saved,
                                                   const std::vector<bool>& absent,
                                                   bool keep_absent_inputs) {
  return Specializer(backward, num_saved, absent, keep_absent_inputs).run();
}

}  // namespace kiln::aot
