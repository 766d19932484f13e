#include "src/autograd/accumulate_grad.h"

namespace kiln::autograd {

AccumulateGrad::AccumulateGrad(Tensor leaf) : leaf_(std::move(leaf)) { add_input_metadata(leaf_); }

Tensor AccumulateGrad::run_leaf_hooks(Tensor grad) const {
  const AutogradMeta* m = get_meta(leaf_);
  if (m == nullptr) return grad;
  for (const AutogradMeta::Hook& hook : m->leaf_hooks) {
    Tensor replaced = hook.fn(grad);
    if (replaced.defined()) grad = std::move(replaced);
  }
  return grad;
}

TensorList AccumulateGrad::apply(TensorList&& grads) {
  Tensor incoming = run_leaf_hooks(std::move(grads[0]));
  if (!incoming.defined()) return {};
  AutogradMeta& m = ensure_meta(leaf_);
  if (GradMode::is_enabled()) {
    // create_graph: the accumulated gradient keeps its history so it can be differentiated.
    m.grad = m.grad.defined() ? m.grad + incoming : incoming;
    return {};
  }
  if (!m.grad.defined()) {
    // Steal the buffer when nothing else holds it; otherwise copy, so a later in-place
    // accumulation never writes into a tensor the caller (or another gradient) still uses.
    Tensor detached = incoming.detach();
    const bool sole_owner =
        incoming.impl()->use_count() == 1 && incoming.impl()->storage()->use_count() == 2;
    m.grad = sole_owner && detached.is_contiguous() ? detached : detached.clone();
  } else {
    m.grad.add_(incoming);
  }
  return {};
}

std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
  AutogradMeta& m = ensure_meta(leaf);
  if (auto existing = m.grad_accumulator.lock()) return existing;
  auto node = std::make_shared<AccumulateGrad>(leaf);
  m.grad_accumulator = node;
  return node;
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* m = get_meta(t);
  if (m == nullptr) return {};
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  if (m->requires_grad) return {grad_accumulator(t), 0};
  return {};
}

}  // namespace kiln::autograd
