// torch::nn::Sequential: runs its modules' one-tensor forwards in order, as LibTorch's:
//
//   torch::nn::Sequential net(torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 3)),
//                             torch::nn::ReLU(), torch::nn::Flatten(), Head());  // Head: a holder
//   net->push_back(torch::nn::Linear(8, 2));
//   auto y = net->forward(x);                  // net(x) too
//   torch::nn::Sequential named({{"conv", torch::nn::Conv2d(1, 8, 3)}, {"act",
//   torch::nn::ReLU()}});
//
// Children are registered as "0", "1", ... (or the given names), so parameters read
// "0.weight". Modules are given as holders, std::shared_ptrs or (torch::nn's layers only)
// values; see AnyModule for which forward each runs.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/tensor.h"
#include "kiln/torch/module_holder.h"
#include "kiln/torch/nn_any_module.h"

namespace torch::nn {

class SequentialImpl : public Module {
 public:
  using Iterator = std::vector<AnyModule>::iterator;
  using ConstIterator = std::vector<AnyModule>::const_iterator;

  SequentialImpl() : Module("Sequential") {}
  // Clones every module it holds, under the same names.
  std::shared_ptr<kiln::nn::Module> clone() const override;
  template <typename... Modules>
  requires(sizeof...(Modules) > 0 && (std::is_constructible_v<AnyModule, Modules&&> &&
                                      ...)) explicit SequentialImpl(Modules&&... modules)
      : SequentialImpl() {
    modules_.reserve(sizeof...(Modules));
    (push_back(AnyModule(std::forward<Modules>(modules))), ...);
  }
  explicit SequentialImpl(std::initializer_list<NamedAnyModule> named_modules);

  // Each module's forward on the previous one's output; ValueError naming Sequential when empty
  // (as LibTorch, which refuses an empty Sequential's forward).
  kiln::Tensor forward(const kiln::Tensor& input) override;
  // LibTorch's forward<ReturnType>(x), for ReturnType torch::Tensor only.
  template <typename ReturnType>
  ReturnType forward(const kiln::Tensor& input) {
    static_assert(std::is_same_v<ReturnType, kiln::Tensor>,
                  "Sequential runs one-tensor forwards: ReturnType must be torch::Tensor");
    return forward(input);
  }

  // Registers the module as child str(size()) (or `name`); ValueError for a name already taken.
  void push_back(AnyModule module);
  void push_back(std::string name, AnyModule module);
  template <typename Container>
  void extend(const Container& container) {
    for (const auto& module : container) push_back(AnyModule(module));
  }

  Iterator begin() { return modules_.begin(); }
  ConstIterator begin() const { return modules_.begin(); }
  Iterator end() { return modules_.end(); }
  ConstIterator end() const { return modules_.end(); }

  // IndexError naming Sequential outside [0, size()).
  std::shared_ptr<kiln::nn::Module> ptr(size_t index) const { return at_index(index).ptr(); }
  // The module at `index` as a T (ValueError if it is not one).
  template <typename T>
  std::shared_ptr<T> ptr(size_t index) const {
    return at_index(index).ptr<T>();
  }
  template <typename T>
  T& at(size_t index) const {
    return at_index(index).get<T>();
  }
  std::shared_ptr<kiln::nn::Module> operator[](size_t index) const { return ptr(index); }
  size_t size() const noexcept { return modules_.size(); }
  bool is_empty() const noexcept { return modules_.empty(); }

 private:
  const AnyModule& at_index(size_t index) const;

  std::vector<AnyModule> modules_;
};

class Sequential : public ModuleHolder<SequentialImpl> {
 public:
  using ModuleHolder<SequentialImpl>::ModuleHolder;
  using Impl = SequentialImpl;
  Sequential() : ModuleHolder() {}
  Sequential(std::initializer_list<NamedAnyModule> named_modules)
      : ModuleHolder(std::make_shared<SequentialImpl>(named_modules)) {}
};

}  // namespace torch::nn
