// torch::autograd: LibTorch's custom autograd functions over Kiln's autograd graph.
//
//   struct MulConstant : torch::autograd::Function<MulConstant> {
//     static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x, double
//     c) {
//       ctx->saved_data["c"] = c;
//       return x * c;
//     }
//     static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
//                                                  torch::autograd::tensor_list grads) {
//       return {grads[0] * ctx->saved_data["c"].toDouble(), torch::Tensor()};
//     }
//   };
//   torch::Tensor y = MulConstant::apply(x, 5.5);
//
// Note [Custom functions]
// apply() runs forward under NoGradGuard, then (when grad mode is on and a tensor argument requires
// grad) makes the outputs outputs of one Kiln autograd Node whose apply calls T::backward. backward
// returns one gradient per forward argument after ctx, in order; those of non-tensor arguments
// must be undefined (checked), and trailing undefined ones for defaulted arguments the call left
// out are dropped. Gradients of outputs that received none are zeros (LibTorch's
// materialized grads). Tensors passed to save_for_backward are kept as Kiln's SavedVariables:
// modified in place before backward, they raise instead of giving a wrong gradient; a saved output
// does not keep its own node alive. An output that is an argument itself is returned as a new alias
// carrying the node (its input keeps its own history).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/torch/ivalue.h"
#include "kiln/torch/types.h"

namespace torch::autograd {

using tensor_list = std::vector<Tensor>;
using variable_list = std::vector<Tensor>;
using kiln::grad;
using kiln::autograd::backward;

class AutogradContext;
namespace detail {
struct SavedState;  // src/torch/autograd_function.cpp
SavedState& saved_state(AutogradContext& ctx);
}  // namespace detail

class AutogradContext {
 public:
  AutogradContext();
  ~AutogradContext();
  AutogradContext(const AutogradContext&) = delete;
  AutogradContext& operator=(const AutogradContext&) = delete;

  // Values for backward (ctx->saved_data["c"] = 5.5).
  std::unordered_map<std::string, IValue> saved_data;
  // Tensors for backward, returned by get_saved_variables() in the same order (undefined ones
  // stay undefined). Call once, in forward.
  void save_for_backward(variable_list to_save);
  variable_list get_saved_variables() const;
  // false: outputs that got no gradient reach backward undefined instead of as zeros.
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  bool materialize_grads() const { return materialize_grads_; }

 private:
  friend detail::SavedState& detail::saved_state(AutogradContext& ctx);
  std::unique_ptr<detail::SavedState> state_;
  bool materialize_grads_ = true;
};

namespace detail {

using BackwardFn = variable_list (*)(AutogradContext*, variable_list);

// What apply() found in the forward call: the tensor arguments (in order) and, for each
// argument, whether it was a tensor.
struct ForwardArguments {
  variable_list tensors;
  std::vector<bool> is_tensor;
};

template <typename A>
void collect(ForwardArguments& args, const A& a) {
  if constexpr (std::is_same_v<std::decay_t<A>, Tensor>) {
    args.tensors.push_back(a);
    args.is_tensor.push_back(true);
  } else {
    static_assert(!std::is_same_v<std::decay_t<A>, variable_list>,
                  "torch::autograd::Function: a tensor list argument is not supported; pass the "
                  "tensors as separate arguments");
    args.is_tensor.push_back(false);
  }
}

// Connects the outputs (computed by forward) to a node calling `backward` (Note [Custom
// functions]). Outputs that are arguments are replaced by aliases.
void record(const std::shared_ptr<AutogradContext>& ctx, const std::string& name,
            BackwardFn backward, const ForwardArguments& arguments, variable_list& outputs);

}  // namespace detail

template <typename T>
struct Function {
  template <typename... Args>
  static auto apply(Args&&... args) {
    auto ctx = std::make_shared<AutogradContext>();
    detail::ForwardArguments arguments;
    (detail::collect(arguments, args), ...);
    using Output = decltype(T::forward(ctx.get(), std::forward<Args>(args)...));
    static_assert(std::is_same_v<Output, Tensor> || std::is_same_v<Output, variable_list>,
                  "torch::autograd::Function: forward must return a Tensor or a tensor_list");
    variable_list outputs;
    {
      kiln::NoGradGuard no_grad;
      if constexpr (std::is_same_v<Output, Tensor>) {
        outputs.push_back(T::forward(ctx.get(), std::forward<Args>(args)...));
      } else {
        outputs = T::forward(ctx.get(), std::forward<Args>(args)...);
      }
    }
    detail::record(ctx, typeid(T).name(), &T::backward, arguments, outputs);
    if constexpr (std::is_same_v<Output, Tensor>) {
      return outputs[0];
    } else {
      return outputs;
    }
  }
};

}  // namespace torch::autograd
