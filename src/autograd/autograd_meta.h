// AutogradMeta: what a tensor carries once autograd knows about it (requires_grad, its grad,
// the node that produced it). Tensors autograd never touched have none, and their TensorImpl has
// no Autograd dispatch key, so ops on them never enter the autograd handler (the eager hot path).
#pragma once

#include <memory>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/tensor.h"

namespace kiln::autograd {

struct AutogradMeta final : AutogradMetaInterface {
  Tensor grad;                           // leaves (and non-leaves that retain_grad)
  std::shared_ptr<Node> grad_fn;         // null for leaves
  std::weak_ptr<Node> grad_accumulator;  // leaves: their AccumulateGrad node, made on demand
  uint32_t output_nr = 0;                // which output of grad_fn this tensor is
  bool requires_grad = false;            // the leaf flag (non-leaves require grad by grad_fn)
  bool retains_grad = false;
  // retain_grad() of a non-leaf: the hook on grad_fn writes here. Shared, so the hook never
  // points into a meta that died with its tensor.
  std::shared_ptr<Tensor> retained_grad;
  struct Hook {
    size_t id;
    GradHook fn;
  };
  std::vector<Hook> leaf_hooks;  // tensor hooks of a leaf, run by AccumulateGrad
  // Set on outputs of view ops recorded by autograd: the tensor whose storage they view. An
  // in-place op on such a view is refused (Kiln does not rebase the base's history yet).
  Tensor view_base;
};

// The meta of `t`, or null.
AutogradMeta* get_meta(const Tensor& t);  // null for an undefined tensor too
// The meta of `t`, created (and the Autograd key added) if missing.
AutogradMeta& ensure_meta(const Tensor& t);

inline bool requires_grad(const Tensor& t) {
  const AutogradMeta* m = t.defined() ? get_meta(t) : nullptr;
  return m != nullptr && (m->requires_grad || m->grad_fn != nullptr);
}

// The edge a gradient for `t` flows into: its grad_fn (at output_nr) or, for a leaf that requires
// grad, its AccumulateGrad node. Invalid when `t` does not require grad.
Edge gradient_edge(const Tensor& t);

// Makes `t` an output of `node` (output number `output_nr`).
void set_history(const Tensor& t, const std::shared_ptr<Node>& node, uint32_t output_nr);

// A new id for a tensor or node hook.
size_t next_hook_id();

}  // namespace kiln::autograd
