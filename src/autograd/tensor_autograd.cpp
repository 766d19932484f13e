// The autograd methods of Tensor, kiln::grad and autograd::backward.
#include "kiln/ops/creation.h"
#include "src/autograd/accumulate_grad.h"
#include "src/autograd/engine.h"
#include "src/core/shape.h"
#include "src/core/tensor_factory.h"
#include "src/core/tracing_hooks.h"

namespace kiln {

using autograd::AutogradMeta;
using autograd::get_meta;

bool Tensor::requires_grad() const { return autograd::requires_grad(*this); }

const Tensor& Tensor::requires_grad_(bool requires_grad) const {
  AutogradMeta* m = get_meta(*this);
  if (!requires_grad && m != nullptr && m->grad_fn) {
    throw ValueError(fmt::format(
        "requires_grad_(false): the tensor ({} {}) is not a leaf (it was computed by {}); use "
        "detach() to get a tensor that does not require grad",
        dtype_name(dtype()), shape_str(sizes()), m->grad_fn->name()));
  }
  if (requires_grad) {
    KILN_CHECK(is_floating(dtype()), DTypeError,
               "requires_grad_: only floating-point tensors can require gradients, got {} {}; "
               "convert with .to(kiln::kFloat32) first",
               dtype_name(dtype()), shape_str(sizes()));
    autograd::ensure_meta(*this).requires_grad = true;
  } else if (m != nullptr) {
    m->requires_grad = false;
  }
  return *this;
}

const Tensor& Tensor::grad() const {
  static const Tensor undefined;
  const AutogradMeta* m = get_meta(*this);
  if (m == nullptr) return undefined;
  return m->retained_grad ? *m->retained_grad : m->grad;
}

Tensor& Tensor::mutable_grad() const {
  AutogradMeta& m = autograd::ensure_meta(*this);
  return m.retained_grad ? *m.retained_grad : m.grad;
}

bool Tensor::is_leaf() const {
  const AutogradMeta* m = get_meta(*this);
  return m == nullptr || m->grad_fn == nullptr;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  const AutogradMeta* m = get_meta(*this);
  return m != nullptr ? m->grad_fn : nullptr;
}

uint32_t Tensor::output_nr() const {
  const AutogradMeta* m = get_meta(*this);
  return m != nullptr ? m->output_nr : 0;
}

Tensor Tensor::detach() const {
  Tensor out =
      make_view(*this, SymDimVector(sym_sizes().begin(), sym_sizes().end()),
                SymDimVector(sym_strides().begin(), sym_strides().end()), impl()->sym_offset());
  out.impl()->set_keys(impl()->keys().remove(DispatchKey::Autograd));
  out.impl()->set_wrapped_number(impl()->is_wrapped_number());
  return out;
}

const Tensor& Tensor::detach_() const {
  if (AutogradMeta* m = get_meta(*this)) {
    KILN_CHECK(!m->view_base.defined(), NotImplementedError,
               "detach_: the tensor is a view of a tensor autograd tracks; use detach() instead");
    m->grad_fn.reset();
    m->output_nr = 0;
    m->requires_grad = false;
  }
  return *this;
}

void Tensor::retain_grad() const {
  AutogradMeta* m = get_meta(*this);
  KILN_CHECK(m != nullptr && (m->requires_grad || m->grad_fn), ValueError,
             "retain_grad: the tensor ({} {}) does not require grad", dtype_name(dtype()),
             shape_str(sizes()));
  if (!m->grad_fn || m->retains_grad) return;  // a leaf keeps its grad anyway
  m->retains_grad = true;
  m->retained_grad = std::make_shared<Tensor>();
  m->grad_fn->add_tensor_hook(m->output_nr, [slot = m->retained_grad](const Tensor& g) {
    *slot = slot->defined() ? *slot + g.detach() : g.detach().clone();
    return Tensor();
  });
}

bool Tensor::retains_grad() const {
  const AutogradMeta* m = get_meta(*this);
  return m != nullptr && m->retains_grad;
}

size_t Tensor::register_hook(GradHook hook) const {
  KILN_CHECK(requires_grad(), ValueError,
             "register_hook: the tensor ({} {}) does not require grad, so no gradient will reach "
             "it; call requires_grad_() first",
             dtype_name(dtype()), shape_str(sizes()));
  AutogradMeta& m = *get_meta(*this);
  if (m.grad_fn) return m.grad_fn->add_tensor_hook(m.output_nr, std::move(hook));
  const size_t id = autograd::next_hook_id();
  m.leaf_hooks.push_back({id, std::move(hook)});
  return id;
}

void Tensor::remove_hook(size_t id) const {
  AutogradMeta* m = get_meta(*this);
  if (m == nullptr) return;
  if (m->grad_fn) m->grad_fn->remove_tensor_hook(id);
  std::erase_if(m->leaf_hooks, [&](const AutogradMeta::Hook& h) { return h.id == id; });
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      const std::vector<Tensor>& inputs, std::source_location loc) const {
  // Note [Backward in a compiled function]: a fake tensor's backward() is a graph break.
  if (defined() && device() == Device::Meta) {
    if (TracingHooks* hooks = current_tracing_hooks()) {
      KILN_CHECK(inputs.empty(), NotImplementedError,
                 "backward: `inputs` is not supported inside a compiled function yet; call "
                 "backward() without it, or call it outside the compiled function");
      hooks->backward(*this, gradient, retain_graph, create_graph, loc);
      return;
    }
  }
  autograd::backward({*this},
                     gradient.defined() ? std::vector<Tensor>{gradient} : std::vector<Tensor>{},
                     retain_graph, create_graph, inputs);
}

namespace autograd {
namespace {

// The root edges and their gradients (ones for one-element outputs when none is given).
std::pair<std::vector<Edge>, TensorList> make_roots(const TensorList& outputs,
                                                    const TensorList& grad_outputs,
                                                    std::string_view caller) {
  KILN_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), ValueError,
             "{}: got {} outputs but {} gradients for them; pass one gradient per output", caller,
             outputs.size(), grad_outputs.size());
  std::vector<Edge> edges;
  TensorList grads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    KILN_CHECK(out.defined() && autograd::requires_grad(out), ValueError,
               "{}: element {} of the outputs does not require grad and has no grad_fn; "
               "nothing to differentiate (did a parameter miss requires_grad_(), or did the "
               "forward run under NoGradGuard?)",
               caller, i);
    Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[i];
    if (!g.defined()) {
      KILN_CHECK(out.numel() == 1, ValueError,
                 "{}: a gradient can be created implicitly only for one-element outputs, but "
                 "output {} has shape {}; pass its gradient explicitly",
                 caller, i, shape_str(out.sizes()));
      g = ones_like(out);
    } else {
      KILN_CHECK(g.sym_sizes() == out.sym_sizes(), ShapeError,
                 "{}: the gradient of output {} has shape {} but the output has shape {}", caller,
                 i, shape_str(g.sym_sizes()), shape_str(out.sym_sizes()));
    }
    edges.push_back(gradient_edge(out));
    grads.push_back(std::move(g));
  }
  return {std::move(edges), std::move(grads)};
}

}  // namespace

void backward(const TensorList& roots, const TensorList& grad_roots,
              std::optional<bool> retain_graph, bool create_graph, const TensorList& inputs) {
  auto [edges, grads] = make_roots(roots, grad_roots, "backward");
  EngineOptions options;
  options.keep_graph = retain_graph.value_or(create_graph);
  options.create_graph = create_graph;
  std::vector<size_t> non_leaf_inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    KILN_CHECK(autograd::requires_grad(inputs[i]), ValueError,
               "backward: inputs[{}] does not require grad", i);
    options.capture.push_back(gradient_edge(inputs[i]));
    if (!inputs[i].is_leaf()) non_leaf_inputs.push_back(i);
  }
  options.accumulate_only_captured = true;
  TensorList captured = run_backward(edges, std::move(grads), options);
  // Non-leaf inputs get their gradient in grad() as if they retained it.
  for (size_t i : non_leaf_inputs) {
    if (!captured[i].defined()) continue;
    Tensor& g = inputs[i].mutable_grad();
    NoGradGuard no_grad;
    g = g.defined() ? g + captured[i] : captured[i].detach();
  }
}

}  // namespace autograd

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph,
                         bool create_graph, bool allow_unused) {
  auto [edges, grads] = autograd::make_roots(outputs, grad_outputs, "kiln::grad");
  autograd::EngineOptions options;
  options.keep_graph = retain_graph.value_or(create_graph);
  options.create_graph = create_graph;
  for (size_t i = 0; i < inputs.size(); ++i) {
    KILN_CHECK(inputs[i].defined() && autograd::requires_grad(inputs[i]), ValueError,
               "kiln::grad: inputs[{}] does not require grad; call requires_grad_() on it "
               "before the forward pass",
               i);
    options.capture.push_back(autograd::gradient_edge(inputs[i]));
  }
  autograd::TensorList result = autograd::run_backward(edges, std::move(grads), options);
  for (size_t i = 0; i < result.size(); ++i) {
    KILN_CHECK(result[i].defined() || allow_unused, ValueError,
               "kiln::grad: inputs[{}] was not used to compute the outputs; pass "
               "allow_unused=true to get an undefined gradient for it",
               i);
  }
  return result;
}

}  // namespace kiln
