// torch::nn::Functional: a function as a module, for Sequential (LibTorch's):
//
//   torch::nn::Sequential net(torch::nn::Linear(4, 8), torch::nn::Functional(torch::relu),
//                             torch::nn::Functional(torch::leaky_relu, 0.2));
//
// Extra arguments are bound after the input, as LibTorch binds them. It has no parameters.
#pragma once

#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kiln/tensor.h"
#include "kiln/torch/module_holder.h"

namespace torch::nn {

class FunctionalImpl : public Module {
 public:
  using Function = std::function<kiln::Tensor(kiln::Tensor)>;

  explicit FunctionalImpl(Function function)
      : Module("Functional"), function_(std::move(function)) {}
  // `function(input, args...)`; the arguments are copied into the module.
  template <typename SomeFunction, typename... Args>
  requires(sizeof...(Args) > 0) explicit FunctionalImpl(SomeFunction function, Args&&... args)
      : FunctionalImpl(Function(
            [function, bound = std::make_tuple(std::forward<Args>(args)...)](kiln::Tensor input) {
              return std::apply(
                  [&](const auto&... a) -> kiln::Tensor { return function(input, a...); }, bound);
            })) {}

  kiln::Tensor forward(const kiln::Tensor& input) override { return function_(input); }
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<FunctionalImpl>(function_));
  }

 private:
  Function function_;
};
TORCH_MODULE(Functional);

}  // namespace torch::nn
