#include "src/autograd/autograd_meta.h"

#include <atomic>

#include "src/dispatch/dispatcher.h"

namespace kiln::autograd {
namespace {
std::atomic<uint64_t> next_sequence_nr{0};
std::atomic<size_t> hook_counter{0};
}  // namespace

size_t next_hook_id() { return ++hook_counter; }

Node::Node() : sequence_nr_(next_sequence_nr++) {}

uint32_t Node::add_input_metadata(const Tensor& t) {
  input_metadata_.push_back({SymDimVector(t.sym_sizes().begin(), t.sym_sizes().end()), t.dtype()});
  return static_cast<uint32_t>(input_metadata_.size() - 1);
}

size_t Node::add_tensor_hook(uint32_t output_nr, GradHook hook) {
  const size_t id = next_hook_id();
  tensor_hooks_.push_back({id, output_nr, std::move(hook)});
  return id;
}

void Node::remove_tensor_hook(size_t id) {
  std::erase_if(tensor_hooks_, [&](const TensorHook& h) { return h.id == id; });
}

TensorList Node::run(TensorList&& grad_outputs) {
  for (const TensorHook& hook : tensor_hooks_) {
    Tensor& g = grad_outputs[hook.output_nr];
    if (!g.defined()) continue;
    Tensor replaced = hook.fn(g);
    if (replaced.defined()) g = std::move(replaced);
  }
  for (const PreHook& hook : pre_hooks_) {
    if (auto replaced = hook(grad_outputs)) grad_outputs = std::move(*replaced);
  }
  if (post_hooks_.empty()) return apply(std::move(grad_outputs));
  const TensorList incoming = grad_outputs;
  TensorList grad_inputs = apply(std::move(grad_outputs));
  for (const PostHook& hook : post_hooks_) {
    if (auto replaced = hook(grad_inputs, incoming)) grad_inputs = std::move(*replaced);
  }
  return grad_inputs;
}

AutogradMeta* get_meta(const Tensor& t) {
  return t.defined() ? static_cast<AutogradMeta*>(t.impl()->autograd_meta()) : nullptr;
}

AutogradMeta& ensure_meta(const Tensor& t) {
  KILN_CHECK(t.defined(), ValueError,
             "autograd: the tensor is undefined (a default-constructed Tensor); gradients are "
             "tracked only for defined tensors");
  TensorImpl* impl = t.impl();
  if (impl->autograd_meta() == nullptr) {
    impl->set_autograd_meta(std::make_unique<AutogradMeta>());
    impl->set_keys(impl->keys().add(DispatchKey::Autograd));
  }
  return *static_cast<AutogradMeta*>(impl->autograd_meta());
}

void set_history(const Tensor& t, const std::shared_ptr<Node>& node, uint32_t output_nr) {
  AutogradMeta& m = ensure_meta(t);
  m.grad_fn = node;
  m.output_nr = output_nr;
  m.requires_grad = false;
  m.grad_accumulator.reset();
}

}  // namespace kiln::autograd
