// torch::autograd::Function's graph side (See Note [Custom functions] in kiln/torch/autograd.h).
#include <cxxabi.h>
#include <fmt/format.h>

#include <cstdlib>

#include "kiln/ops/creation.h"
#include "kiln/torch/autograd.h"
#include "src/autograd/autograd_meta.h"
#include "src/autograd/saved_variable.h"
#include "src/core/tracing_hooks.h"

namespace torch::autograd {

namespace detail {

struct SavedState {
  variable_list to_save;  // what forward passed to save_for_backward
  bool saved_called = false;
  std::vector<kiln::autograd::SavedVariable> saved;  // filled by record()
  std::weak_ptr<kiln::autograd::Node> node;          // the node unpacking them
  bool recorded = false;
};

namespace {

std::string demangled(const std::string& mangled) {
  int status = 0;
  char* name = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && name != nullptr ? name : mangled;
  std::free(name);
  return out;
}

class FunctionNode : public kiln::autograd::Node {
 public:
  FunctionNode(std::shared_ptr<AutogradContext> ctx, std::string name, BackwardFn backward,
               std::vector<bool> is_tensor)
      : ctx_(std::move(ctx)),
        name_(std::move(name)),
        backward_(backward),
        is_tensor_(std::move(is_tensor)) {}

  std::string name() const override { return name_ + "Backward"; }

  kiln::autograd::TensorList apply(kiln::autograd::TensorList&& grad_outputs) override {
    if (ctx_->materialize_grads()) {
      for (size_t i = 0; i < grad_outputs.size(); ++i) {
        if (grad_outputs[i].defined()) continue;
        const kiln::autograd::GradMeta& meta = input_metadata()[i];
        grad_outputs[i] = kiln::zeros(meta.sizes, meta.dtype);
      }
    }
    variable_list grads = backward_(ctx_.get(), std::move(grad_outputs));
    // Extra trailing gradients are allowed when undefined: those of forward's defaulted
    // arguments that the call left out (as LibTorch).
    while (grads.size() > is_tensor_.size() && !grads.back().defined()) grads.pop_back();
    KILN_CHECK(grads.size() == is_tensor_.size(), ValueError,
               "{}::backward returned {} gradients, but forward takes {} arguments after ctx; "
               "return one per argument (an undefined Tensor for those with no gradient)",
               name_, grads.size(), is_tensor_.size());
    kiln::autograd::TensorList input_grads;
    for (size_t i = 0; i < grads.size(); ++i) {
      if (is_tensor_[i]) {
        input_grads.push_back(std::move(grads[i]));
      } else {
        KILN_CHECK(!grads[i].defined(), ValueError,
                   "{}::backward returned a defined gradient for argument {}, which is not a "
                   "tensor; return an undefined Tensor() there",
                   name_, i);
      }
    }
    return input_grads;
  }

  void release_variables() override {
    for (kiln::autograd::SavedVariable& v : saved_state(*ctx_).saved) v.release();
  }

 private:
  std::shared_ptr<AutogradContext> ctx_;
  std::string name_;
  BackwardFn backward_;
  std::vector<bool> is_tensor_;
};

}  // namespace

SavedState& saved_state(AutogradContext& ctx) { return *ctx.state_; }

void record(const std::shared_ptr<AutogradContext>& ctx, const std::string& name,
            BackwardFn backward, const ForwardArguments& arguments, variable_list& outputs) {
  SavedState& state = saved_state(*ctx);
  bool needs_grad = false;
  if (kiln::GradMode::is_enabled())
    for (const Tensor& t : arguments.tensors) needs_grad = needs_grad || t.requires_grad();
  // An output that is an argument becomes an alias, so that the argument keeps its own history.
  for (Tensor& out : outputs)
    for (const Tensor& in : arguments.tensors)
      if (out.defined() && out.is_same(in)) out = out.detach();
  // Note [Custom functions under a trace]
  // kiln::compile captures ops, and AOT autograd differentiates them with each op's formula; a
  // custom function's backward is C++ code that no captured graph holds, so its gradient would
  // be lost (a wrong gradient, or none). Until custom functions are traced as a higher-order op
  // with both bodies, one traced with grad mode on refuses to be traced: the trace's fake
  // tensors do not say whether the real inputs will require grad, so it refuses whether or not
  // they do. Under NoGradGuard (inference), the forward's ops trace like any others.
  KILN_CHECK(!kiln::GradMode::is_enabled() || kiln::current_tracing_hooks() == nullptr,
             NotImplementedError,
             "{}::apply inside a compiled function with grad mode on: custom "
             "torch::autograd::Functions cannot be compiled with their backward yet. Call it "
             "outside the compiled function (compile the code before and after it separately), "
             "or, for inference, under torch::NoGradGuard",
             demangled(name));
  if (needs_grad) {
    auto node = std::make_shared<FunctionNode>(ctx, demangled(name), backward, arguments.is_tensor);
    for (const Tensor& in : arguments.tensors)
      node->mutable_next_edges().push_back(in.defined() && in.requires_grad()
                                               ? kiln::autograd::gradient_edge(in)
                                               : kiln::autograd::Edge{});
    for (size_t i = 0; i < outputs.size(); ++i) {
      KILN_CHECK(outputs[i].defined(), ValueError,
                 "{}::forward returned an undefined tensor as output {}", demangled(name), i);
      node->add_input_metadata(outputs[i]);
      if (kiln::is_floating(outputs[i].dtype()))
        kiln::autograd::set_history(outputs[i], node, static_cast<uint32_t>(i));
    }
    state.node = node;
  }
  // Saved after the outputs got their node: a saved output is kept without it (Note [Saved
  // outputs] in src/autograd/saved_variable.h).
  for (const Tensor& t : state.to_save) {
    uint32_t output_nr = 0;
    bool is_output = false;
    for (size_t i = 0; i < outputs.size(); ++i)
      if (t.defined() && t.is_same(outputs[i])) {
        is_output = true;
        output_nr = static_cast<uint32_t>(i);
      }
    state.saved.emplace_back(t, is_output && needs_grad, output_nr);
  }
  state.to_save.clear();
  state.recorded = true;
}

}  // namespace detail

AutogradContext::AutogradContext() : state_(std::make_unique<detail::SavedState>()) {}
AutogradContext::~AutogradContext() = default;

void AutogradContext::save_for_backward(variable_list to_save) {
  KILN_CHECK(!state_->saved_called, ValueError,
             "AutogradContext::save_for_backward: call it once, in forward, with every tensor "
             "backward needs");
  state_->saved_called = true;
  state_->to_save = std::move(to_save);
}

variable_list AutogradContext::get_saved_variables() const {
  KILN_CHECK(state_->recorded, ValueError,
             "AutogradContext::get_saved_variables: call it in backward (forward has not "
             "returned yet)");
  const std::shared_ptr<kiln::autograd::Node> node = state_->node.lock();
  variable_list out;
  out.reserve(state_->saved.size());
  for (size_t i = 0; i < state_->saved.size(); ++i) {
    if (node == nullptr) {
      out.push_back(Tensor());
      continue;
    }
    out.push_back(state_->saved[i].unpack(node, fmt::format("saved tensor {}", i)));
  }
  return out;
}

}  // namespace torch::autograd

namespace torch {

std::string IValue::tagKind() const {
  static constexpr const char* kNames[] = {"None",   "Bool",   "Int",    "Double",
                                           "String", "Tensor", "IntList"};
  return kNames[value_.index()];
}

void IValue::throw_wrong_type(const char* wanted) const {
  throw kiln::ValueError(
      fmt::format("IValue: expected a {}, but the value is a {}", wanted, tagKind()));
}

}  // namespace torch
