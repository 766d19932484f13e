#include "src/graph/node_rewriter.h"

#include <fmt/format.h>

#include "src/graph/meta_inference.h"
#include "src/graph/schema.h"

namespace kiln::graph {

ScalarType opmath_dtype(ScalarType t) { return t == kFloat16 || t == kBFloat16 ? kFloat32 : t; }

DimVector dim_range(int64_t begin, int64_t end) {
  DimVector dims;
  for (int64_t d = begin; d < end; ++d) dims.push_back(d);
  return dims;
}

NodeRewriter::NodeRewriter(Graph& g, Node& node) : g_(g), node_(node) {}

Value* NodeRewriter::input(size_t i) const {
  if (i >= node_.args().size()) return nullptr;
  const Arg& a = node_.args()[i];
  if (a.is_value()) return a.as_value();
  KILN_CHECK(a.is_constant() && a.as_constant().is_none(), ValueError,
             "decompose: `{}`: argument {} should be a tensor", to_string(node_), i);
  return nullptr;
}

IValue NodeRewriter::constant(size_t i) const {
  if (i < node_.args().size()) {
    const Arg& a = node_.args()[i];
    KILN_CHECK(a.is_constant(), ValueError, "decompose: `{}`: argument {} should be a constant",
               to_string(node_), i);
    return a.as_constant();
  }
  const Schema& schema = schema_of(node_.op_def());
  KILN_CHECK(i < schema.args.size() && schema.args[i].default_text.has_value(), ValueError,
             "decompose: `{}`: argument {} is missing and has no default; schema: {}",
             to_string(node_), i, node_.op_def().schema);
  return default_value(schema.args[i], op_name());
}

Arg NodeRewriter::arg(size_t i) const {
  if (i < node_.args().size()) return node_.args()[i];
  return Arg::constant(constant(i));
}

const TensorMeta& NodeRewriter::output_meta(size_t i) const { return node_.output(i)->meta(); }

bool NodeRewriter::requires_grad_for(const std::vector<Arg>& args) const {
  if (node_.grad_mode() == Node::GradMode::Disabled) return false;
  for (const Arg& a : args)
    for (const Value* v : a.values())
      if (v->meta().requires_grad) return true;
  return false;
}

std::vector<Value*> NodeRewriter::call(std::string_view op, std::vector<Arg> args) {
  const OpId id = op_id(op);
  std::optional<std::vector<TensorMeta>> metas;
  try {
    metas = infer_symbolic_output_metas(id, args);
  } catch (const Error& e) {
    throw Error(fmt::format(
        "decompose: `{}`: the decomposition's call of {} was rejected by its meta function: {}",
        to_string(node_), op, e.what()));
  }
  KILN_CHECK(metas.has_value(), Error,
             "decompose: `{}`: the decomposition called {}, whose output metas cannot be computed "
             "ahead of time",
             to_string(node_), op);
  const bool grad = requires_grad_for(args);
  for (TensorMeta& m : *metas) m.requires_grad = grad && is_floating(m.dtype);
  Graph::InsertPoint at(g_, &node_);
  std::vector<Value*> outs = g_.add_call(id, std::move(args), std::move(*metas));
  if (!outs.empty()) {
    Node* created = outs[0]->producer();
    created->set_grad_mode(node_.grad_mode());
    emitted_.push_back(created);
  }
  return outs;
}

Value* NodeRewriter::call1(std::string_view op, std::vector<Arg> args) {
  std::vector<Value*> outs = call(op, std::move(args));
  KILN_CHECK(outs.size() == 1, Error, "decompose: {} returned {} outputs, expected 1", op,
             outs.size());
  return outs[0];
}

Value* NodeRewriter::binary(std::string_view op, Value* a, const Scalar& b) {
  const std::string name =
      op == "pow" ? std::string("pow.Tensor_Scalar") : std::string(op) + ".Scalar";
  return call1(name, {V(a), C(IValue(b))});
}

Value* NodeRewriter::where(Value* cond, Value* a, Value* b) {
  return call1("where", {V(cond), V(a), V(b)});
}
Value* NodeRewriter::where(Value* cond, const Scalar& a, Value* b) {
  return call1("where.ScalarSelf", {V(cond), C(IValue(a)), V(b)});
}
Value* NodeRewriter::where(Value* cond, Value* a, const Scalar& b) {
  return call1("where.ScalarOther", {V(cond), V(a), C(IValue(b))});
}

Value* NodeRewriter::clamp(Value* x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  return call1("clamp", {V(x), C(IValue(lo)), C(IValue(hi))});
}

Value* NodeRewriter::sum(Value* x, const DimVector& dims, bool keepdim,
                         std::optional<ScalarType> dtype) {
  return call1("sum", {V(x), C(IValue(dims)), C(IValue(keepdim)), C(IValue(dtype))});
}
Value* NodeRewriter::amax(Value* x, const DimVector& dims, bool keepdim) {
  return call1("amax", {V(x), C(IValue(dims)), C(IValue(keepdim))});
}
Value* NodeRewriter::amin(Value* x, const DimVector& dims, bool keepdim) {
  return call1("amin", {V(x), C(IValue(dims)), C(IValue(keepdim))});
}

// Note [Symbolic element counts]
// mean, var and the norms divide by the number of reduced elements. When the reduced sizes are
// concrete that is a Scalar constant; when one is symbolic no constant can hold it (a Scalar is
// concrete; converting would guard). The count then comes from the graph itself: the sum of a
// float64 tensor of ones with just the reduced sizes (cheap: it has only the reduced elements,
// once, not per output), exact below 2^53, converted to the dividend's dtype.
NodeRewriter::Count NodeRewriter::count(Value* x, const DimVector& dims) {
  const SymDimVector& sizes = x->meta().sizes;
  const int64_t rank = static_cast<int64_t>(sizes.size());
  DimVector all = dims;
  if (all.empty()) all = dim_range(0, rank);
  SymDimVector reduced;
  int64_t n = 1;
  bool symbolic = false;
  for (int64_t d : all) {
    if (d < 0) d += rank;
    if (d < 0 || d >= rank) continue;  // dim 0 of a 0-dim tensor: one element
    const SymInt s = sizes[static_cast<size_t>(d)];
    reduced.push_back(s);
    if (s.is_symbolic()) {
      symbolic = true;
    } else {
      n *= s.raw();
    }
  }
  if (!symbolic) return Count{.value = n};
  Value* ones = full(reduced, Scalar(1.0), kFloat64);
  return Count{.tensor = sum(ones, {}, false)};
}

Value* NodeRewriter::div(Value* x, const Count& n) {
  if (n.value) return div(x, Scalar(*n.value));
  return div(x, to(n.tensor, x->meta().dtype));
}

Value* NodeRewriter::to(Value* x, ScalarType dtype) {
  if (x->meta().dtype == dtype) return x;
  return copy_as(x, dtype);
}

Value* NodeRewriter::copy_as(Value* x, ScalarType dtype) {
  return call1("_to_copy", {V(x), C(IValue(dtype))});
}

Value* NodeRewriter::full(const SymDimVector& sizes, const Scalar& value, ScalarType dtype) {
  return call1("full",
               {C(IValue(sizes)), C(IValue(value)), C(IValue(dtype)), C(IValue(Device::CPU))});
}

Value* NodeRewriter::view(Value* x, const SymDimVector& sizes) {
  return call1("view", {V(x), C(IValue(sizes))});
}

Value* NodeRewriter::reshape(Value* x, const SymDimVector& sizes) {
  if (!x->meta().has_contiguous_strides()) x = call1("clone", {V(x)});
  return view(x, sizes);
}

Value* NodeRewriter::copy_into(Value* dst, Value* src) {
  Value* written = call1("copy_", {V(dst), V(src)});
  const std::vector<Node*> users(dst->users().begin(), dst->users().end());
  for (Node* user : users) {
    if (user == written->producer() || user == &node_) continue;
    if (user->kind() == NodeKind::Output) {
      std::vector<Value*> outs(g_.outputs().begin(), g_.outputs().end());
      for (Value*& v : outs)
        if (v == dst) v = written;
      g_.set_outputs(std::move(outs));
      continue;
    }
    if (user->kind() != NodeKind::Call || !g_.comes_before(&node_, user)) continue;
    for (size_t a = 0; a < user->args().size(); ++a) {
      const Arg& arg = user->args()[a];
      if (arg.is_value() && arg.as_value() == dst) {
        user->set_arg(a, Arg::value(written));
      } else if (arg.kind() == Arg::Kind::List) {
        std::vector<Value*> list = arg.as_list();
        bool changed = false;
        for (Value*& v : list)
          if (v == dst) v = written, changed = true;
        if (changed) user->set_arg(a, Arg::list(std::move(list)));
      }
    }
  }
  return written;
}

}  // namespace kiln::graph
