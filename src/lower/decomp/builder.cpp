#include "src/lower/decomp/builder.h"

#include <fmt/format.h>

#include "src/graph/meta_inference.h"
#include "src/graph/schema.h"

namespace kiln::lower {

ScalarType opmath_dtype(ScalarType t) { return t == kFloat16 || t == kBFloat16 ? kFloat32 : t; }

DimVector dim_range(int64_t begin, int64_t end) {
  DimVector dims;
  for (int64_t d = begin; d < end; ++d) dims.push_back(d);
  return dims;
}

DecompBuilder::DecompBuilder(graph::Graph& g, graph::Node& node) : g_(g), node_(node) {}

Value* DecompBuilder::input(size_t i) const {
  if (i >= node_.args().size()) return nullptr;
  const graph::Arg& a = node_.args()[i];
  if (a.is_value()) return a.as_value();
  KILN_CHECK(a.is_constant() && a.as_constant().is_none(), ValueError,
             "decompose: `{}`: argument {} should be a tensor", graph::to_string(node_), i);
  return nullptr;
}

IValue DecompBuilder::constant(size_t i) const {
  if (i < node_.args().size()) {
    const graph::Arg& a = node_.args()[i];
    KILN_CHECK(a.is_constant(), ValueError, "decompose: `{}`: argument {} should be a constant",
               graph::to_string(node_), i);
    return a.as_constant();
  }
  const graph::Schema& schema = graph::schema_of(node_.op_def());
  KILN_CHECK(i < schema.args.size() && schema.args[i].default_text.has_value(), ValueError,
             "decompose: `{}`: argument {} is missing and has no default; schema: {}",
             graph::to_string(node_), i, node_.op_def().schema);
  return graph::default_value(schema.args[i], op_name());
}

graph::Arg DecompBuilder::arg(size_t i) const {
  if (i < node_.args().size()) return node_.args()[i];
  return graph::Arg::constant(constant(i));
}

const graph::TensorMeta& DecompBuilder::output_meta(size_t i) const {
  return node_.output(i)->meta();
}

bool DecompBuilder::requires_grad_for(const std::vector<graph::Arg>& args) const {
  if (node_.grad_mode() == graph::Node::GradMode::Disabled) return false;
  for (const graph::Arg& a : args)
    for (const Value* v : a.values())
      if (v->meta().requires_grad) return true;
  return false;
}

std::vector<Value*> DecompBuilder::call(std::string_view op, std::vector<graph::Arg> args) {
  const OpId id = op_id(op);
  std::optional<std::vector<graph::TensorMeta>> metas;
  try {
    metas = graph::infer_symbolic_output_metas(id, args);
  } catch (const Error& e) {
    throw Error(fmt::format(
        "decompose: `{}`: the decomposition's call of {} was rejected by its meta function: {}",
        graph::to_string(node_), op, e.what()));
  }
  KILN_CHECK(metas.has_value(), Error,
             "decompose: `{}`: the decomposition called {}, whose output metas cannot be computed "
             "ahead of time",
             graph::to_string(node_), op);
  const bool grad = requires_grad_for(args);
  for (graph::TensorMeta& m : *metas) m.requires_grad = grad && is_floating(m.dtype);
  graph::Graph::InsertPoint at(g_, &node_);
  std::vector<Value*> outs = g_.add_call(id, std::move(args), std::move(*metas));
  if (!outs.empty()) {
    graph::Node* created = outs[0]->producer();
    created->set_grad_mode(node_.grad_mode());
    emitted_.push_back(created);
  }
  return outs;
}

Value* DecompBuilder::call1(std::string_view op, std::vector<graph::Arg> args) {
  std::vector<Value*> outs = call(op, std::move(args));
  KILN_CHECK(outs.size() == 1, Error, "decompose: {} returned {} outputs, expected 1", op,
             outs.size());
  return outs[0];
}

Value* DecompBuilder::binary(std::string_view op, Value* a, const Scalar& b) {
  const std::string name =
      op == "pow" ? std::string("pow.Tensor_Scalar") : std::string(op) + ".Scalar";
  return call1(name, {V(a), C(IValue(b))});
}

Value* DecompBuilder::where(Value* cond, Value* a, Value* b) {
  return call1("where", {V(cond), V(a), V(b)});
}
Value* DecompBuilder::where(Value* cond, const Scalar& a, Value* b) {
  return call1("where.ScalarSelf", {V(cond), C(IValue(a)), V(b)});
}
Value* DecompBuilder::where(Value* cond, Value* a, const Scalar& b) {
  return call1("where.ScalarOther", {V(cond), V(a), C(IValue(b))});
}

Value* DecompBuilder::clamp(Value* x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  return call1("clamp", {V(x), C(IValue(lo)), C(IValue(hi))});
}

Value* DecompBuilder::sum(Value* x, const DimVector& dims, bool keepdim,
                          std::optional<ScalarType> dtype) {
  return call1("sum", {V(x), C(IValue(dims)), C(IValue(keepdim)), C(IValue(dtype))});
}
Value* DecompBuilder::amax(Value* x, const DimVector& dims, bool keepdim) {
  return call1("amax", {V(x), C(IValue(dims)), C(IValue(keepdim))});
}
Value* DecompBuilder::amin(Value* x, const DimVector& dims, bool keepdim) {
  return call1("amin", {V(x), C(IValue(dims)), C(IValue(keepdim))});
}

// Note [Symbolic element counts]
// mean, var and the norms divide by the number of reduced elements. When the reduced sizes are
// concrete that is a Scalar constant; when one is symbolic no constant can hold it (a Scalar is
// concrete; converting would guard). The count then comes from the graph itself: the sum of a
// float64 tensor of ones with just the reduced sizes (cheap: it has only the reduced elements,
// once, not per output), exact below 2^53, converted to the dividend's dtype.
DecompBuilder::Count DecompBuilder::count(Value* x, const DimVector& dims) {
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

Value* DecompBuilder::div(Value* x, const Count& n) {
  if (n.value) return div(x, Scalar(*n.value));
  return div(x, to(n.tensor, x->meta().dtype));
}

Value* DecompBuilder::to(Value* x, ScalarType dtype) {
  if (x->meta().dtype == dtype) return x;
  return copy_as(x, dtype);
}

Value* DecompBuilder::copy_as(Value* x, ScalarType dtype) {
  return call1("_to_copy", {V(x), C(IValue(dtype))});
}

Value* DecompBuilder::full(const SymDimVector& sizes, const Scalar& value, ScalarType dtype) {
  return call1("full",
               {C(IValue(sizes)), C(IValue(value)), C(IValue(dtype)), C(IValue(Device::CPU))});
}

Value* DecompBuilder::view(Value* x, const SymDimVector& sizes) {
  return call1("view", {V(x), C(IValue(sizes))});
}

Value* DecompBuilder::reshape(Value* x, const SymDimVector& sizes) {
  if (!x->meta().has_contiguous_strides()) x = call1("clone", {V(x)});
  return view(x, sizes);
}

Value* DecompBuilder::copy_into(Value* dst, Value* src) {
  Value* written = call1("copy_", {V(dst), V(src)});
  const std::vector<graph::Node*> users(dst->users().begin(), dst->users().end());
  for (graph::Node* user : users) {
    if (user == written->producer() || user == &node_) continue;
    if (user->kind() == graph::NodeKind::Output) {
      std::vector<Value*> outs(g_.outputs().begin(), g_.outputs().end());
      for (Value*& v : outs)
        if (v == dst) v = written;
      g_.set_outputs(std::move(outs));
      continue;
    }
    if (user->kind() != graph::NodeKind::Call || !g_.comes_before(&node_, user)) continue;
    for (size_t a = 0; a < user->args().size(); ++a) {
      const graph::Arg& arg = user->args()[a];
      if (arg.is_value() && arg.as_value() == dst) {
        user->set_arg(a, graph::Arg::value(written));
      } else if (arg.kind() == graph::Arg::Kind::List) {
        std::vector<Value*> list = arg.as_list();
        bool changed = false;
        for (Value*& v : list)
          if (v == dst) v = written, changed = true;
        if (changed) user->set_arg(a, graph::Arg::list(std::move(list)));
      }
    }
  }
  return written;
}

}  // namespace kiln::lower
