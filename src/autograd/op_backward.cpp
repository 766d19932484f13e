#include "src/autograd/op_backward.h"

#include <cctype>

#include "kiln/ops/creation.h"
#include "src/autograd/copy_slices.h"
#include "src/core/shape.h"

namespace kiln::autograd {

std::string backward_name(std::string_view op_name) {
  std::string out;
  bool upper = true;
  for (char c : op_name) {
    if (c == '.') break;  // overload names do not matter to the reader
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out + "Backward";
}

std::string OpBackward::name() const { return backward_name(op_.name); }

void OpBackward::release_variables() {
  for (auto& list : saved_args_)
    for (SavedVariable& v : list) v.release();
  for (SavedVariable& v : saved_outputs_) v.release();
}

TensorList OpBackward::apply(TensorList&& grads) {
  TensorList results(next_edges_.size());
  GradContext ctx(*this, grads, results);
  def_.backward(ctx);
  return results;
}

// ---- GradContext ----

Tensor GradContext::grad(size_t i) const {
  if (has_grad(i)) return grads_[i];
  const GradMeta& m = node_.input_metadata()[i];
  return zeros(m.sizes, m.dtype);
}

size_t GradContext::num_args() const { return node_.args_.size(); }

DimVector int_sizes(SymIntArrayRef sizes) {
  DimVector out;
  for (SymInt s : sizes) out.push_back(s.guard_int());
  return out;
}

DimVector GradContext::int_sizes(size_t i) const { return autograd::int_sizes(sizes(i)); }

const IValue& GradContext::arg(size_t i) const {
  KILN_CHECK(i < node_.args_.size(), Error, "internal: {} formula reads argument {} of {}",
             node_.name(), i, node_.args_.size());
  return node_.args_[i];
}

const ArgMeta& GradContext::meta(size_t i) const {
  static const ArgMeta none{};  // an optional tensor argument that was None
  if (i < node_.args_.size() && node_.args_[i].is_none() && node_.arg_meta_[i].empty()) return none;
  KILN_CHECK(i < node_.arg_meta_.size() && node_.arg_meta_[i].size() == 1, Error,
             "internal: {} formula reads tensor argument {}, which is not a tensor", node_.name(),
             i);
  return node_.arg_meta_[i][0];
}

const std::vector<ArgMeta>& GradContext::list_meta(size_t i) const { return node_.arg_meta_[i]; }

const GradMeta& GradContext::output_meta(size_t i) const { return node_.input_metadata()[i]; }

bool GradContext::needs_grad(size_t i) const {
  for (const ArgMeta& m : node_.arg_meta_[i])
    if (m.needs_grad) return true;
  return false;
}

bool GradContext::needs_grad(size_t i, size_t j) const {
  return j < node_.arg_meta_[i].size() && node_.arg_meta_[i][j].needs_grad;
}

Tensor GradContext::input(size_t i) const {
  KILN_CHECK((node_.def_.save_args >> i) & 1u, Error,
             "internal: {} formula reads input {} but its derivative entry does not save it",
             node_.name(), i);
  if (node_.saved_args_[i].empty()) return Tensor();  // an optional tensor that was None
  return node_.saved_args_[i][0].unpack(node_.shared_from_this(),
                                        fmt::format("input {} of {}", i, node_.op_.name));
}

std::vector<Tensor> GradContext::input_list(size_t i) const {
  KILN_CHECK((node_.def_.save_args >> i) & 1u, Error,
             "internal: {} formula reads input {} but its derivative entry does not save it",
             node_.name(), i);
  std::vector<Tensor> out;
  for (const SavedVariable& v : node_.saved_args_[i])
    out.push_back(
        v.unpack(node_.shared_from_this(), fmt::format("input {} of {}", i, node_.op_.name)));
  return out;
}

Tensor GradContext::output(size_t i) const {
  KILN_CHECK((node_.def_.save_outputs >> i) & 1u, Error,
             "internal: {} formula reads output {} but its derivative entry does not save it",
             node_.name(), i);
  return node_.saved_outputs_[i].unpack(node_.shared_from_this(),
                                        fmt::format("output {} of {}", i, node_.op_.name));
}

void GradContext::set_grad(size_t i, Tensor g) { set_grad(i, 0, std::move(g)); }

void GradContext::set_grad(size_t i, size_t j, Tensor g) {
  if (j >= node_.arg_meta_[i].size()) return;  // None: nothing receives it
  const ArgMeta& m = node_.arg_meta_[i][j];
  if (m.edge >= 0) results_[m.edge] = std::move(g);
}

// ---- recording ----

namespace {

bool any_requires_grad(const Stack& args) {
  for (const IValue& v : args) {
    if (v.is_tensor()) {
      if (requires_grad(v.tensor())) return true;
    } else if (v.is_tensor_list()) {
      for (const Tensor& t : v.tensor_list())
        if (requires_grad(t)) return true;
    }
  }
  return false;
}

ArgMeta arg_meta_of(const Tensor& t) {
  ArgMeta m;
  m.defined = t.defined();
  if (!m.defined) return m;
  m.needs_grad = requires_grad(t);
  m.sizes = SymDimVector(t.sym_sizes().begin(), t.sym_sizes().end());
  m.dtype = t.dtype();
  return m;
}

std::string describe_call(const OpDef& op, const Stack& args) {
  std::string s = op.name + "(";
  bool first = true;
  for (const IValue& v : args) {
    if (!v.is_tensor() || !v.tensor().defined()) continue;
    if (!first) s += ", ";
    first = false;
    s += fmt::format("{}{}", dtype_name(v.tensor().dtype()), shape_str(v.tensor().sizes()));
  }
  return s + ")";
}

void run_below(const OpDef& op, Stack& args, Stack& outputs, DispatchKeySet keys) {
  dispatch::ExcludeKeysGuard guard(DispatchKey::Autograd);
  dispatch::redispatch(op, args, outputs, keys.remove(DispatchKey::Autograd));
}

void check_inplace_target(const OpDef& op, const Tensor& self) {
  const AutogradMeta* m = get_meta(self);
  if (m != nullptr && m->view_base.defined()) {
    const AutogradMeta* base = get_meta(m->view_base);
    KILN_CHECK(base == nullptr || !base->requires_grad || !GradMode::is_enabled(), Error,
               "{}: a view ({} {}) of a leaf tensor that requires grad is used in an in-place "
               "operation. Modify the leaf under kiln::NoGradGuard, or clone it first",
               op.name, dtype_name(self.dtype()), shape_str(self.sizes()));
  }
  KILN_CHECK(m == nullptr || !m->requires_grad || !GradMode::is_enabled(), Error,
             "{}: a leaf tensor that requires grad ({} {}) is used in an in-place operation. "
             "Modify it under kiln::NoGradGuard (as optimizers do), or clone it first",
             op.name, dtype_name(self.dtype()), shape_str(self.sizes()));
}

}  // namespace

void record(const OpDef& op, const DerivativeDef& def, Stack& args, Stack& outputs,
            DispatchKeySet keys) {
  const bool inplace = op.has_tag(kTagInplace);
  Tensor inplace_view_base;  // Note [In-place on a view]
  if (inplace) {
    check_inplace_target(op, args[0].tensor());
    if (const AutogradMeta* m = get_meta(args[0].tensor())) inplace_view_base = m->view_base;
  }
  Tensor view_base;
  if (op.has_tag(kTagView) && args[0].is_tensor()) {
    const AutogradMeta* m = get_meta(args[0].tensor());
    view_base = m != nullptr && m->view_base.defined() ? m->view_base : args[0].tensor();
  }

  auto node = std::make_shared<OpBackward>(op, def);
  node->args_.resize(args.size());
  node->arg_meta_.resize(args.size());
  node->saved_args_.resize(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const IValue& v = args[i];
    const bool save = (def.save_args >> i) & 1u;
    if (v.is_tensor()) {
      const Tensor& t = v.tensor();
      ArgMeta m = arg_meta_of(t);
      KILN_CHECK(!m.needs_grad || !((def.nondifferentiable_args >> i) & 1u), NotImplementedError,
                 "{}: argument {} requires grad, but the op has no derivative with respect to "
                 "it; detach() it",
                 op.name, i);
      if (m.needs_grad) {
        m.edge = static_cast<int>(node->next_edges_.size());
        node->next_edges_.push_back(gradient_edge(t));
      }
      node->arg_meta_[i].push_back(std::move(m));
      if (save) {
        // In-place: the formula wants self as it was before the op (Note [Derivative formulas]).
        const bool clone_self = inplace && i == 0;
        // The clone is recorded (a CloneBackward on self's old history), so double backward
        // through the saved old value reaches that history.
        node->saved_args_[i].emplace_back(clone_self && t.defined() ? t.clone() : t,
                                          /*is_output=*/false);
      }
    } else if (v.is_tensor_list()) {
      for (const Tensor& t : v.tensor_list()) {
        ArgMeta m = arg_meta_of(t);
        if (m.needs_grad) {
          m.edge = static_cast<int>(node->next_edges_.size());
          node->next_edges_.push_back(gradient_edge(t));
        }
        node->arg_meta_[i].push_back(std::move(m));
        if (save) node->saved_args_[i].emplace_back(t, /*is_output=*/false);
      }
    } else {
      node->args_[i] = v;
    }
  }
  if (AnomalyMode::is_enabled()) node->set_forward_context(describe_call(op, args));

  run_below(op, args, outputs, keys);

  node->saved_outputs_.resize(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    KILN_CHECK(outputs[i].is_tensor(), NotImplementedError,
               "{}: autograd does not support ops returning lists; call it under NoGradGuard",
               op.name);
    const Tensor& out = outputs[i].tensor();
    const uint32_t nr = node->add_input_metadata(out);
    if (is_floating(out.dtype())) {
      set_history(out, node, nr);
      if (view_base.defined()) get_meta(out)->view_base = view_base;
    }
  }
  if (inplace_view_base.defined()) {
    const bool view_edge = !node->arg_meta_[0].empty() && node->arg_meta_[0][0].edge == 0;
    rebase_view_history(args[0].tensor(), inplace_view_base, node, view_edge);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if ((def.save_outputs >> i) & 1u)
      node->saved_outputs_[i] =
          SavedVariable(outputs[i].tensor(), /*is_output=*/true, static_cast<uint32_t>(i));
  }
}

// The Autograd key's fallback handler.
void autograd_handler(const OpDef& op, Stack& args, Stack& outputs, DispatchKeySet keys) {
  if (!GradMode::is_enabled() || !any_requires_grad(args) || op.has_tag(kTagNondifferentiable)) {
    run_below(op, args, outputs, keys);
    return;
  }
  const DerivativeDef* def = find_derivative(op.id);
  KILN_CHECK(def != nullptr, NotImplementedError,
             "{}: an input requires grad but the op has no derivative formula; compute it under "
             "kiln::NoGradGuard or detach() the inputs",
             op.name);
  record(op, *def, args, outputs, keys);
}

}  // namespace kiln::autograd
