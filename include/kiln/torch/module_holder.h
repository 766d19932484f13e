// LibTorch's module holders, over Kiln's modules (See Note [The torch:: front end] in
// kiln/torch.h). A holder is a shared_ptr to a module "Impl" with value syntax:
//
//   struct NetImpl : torch::nn::Module { ... torch::Tensor forward(torch::Tensor x); };
//   TORCH_MODULE(Net);          // Net holds a std::shared_ptr<NetImpl>
//   Net net;                    // constructs NetImpl()
//   Net none{nullptr};          // holds nothing, to be assigned later
//   net->forward(x); net(x);    // the Impl's forward
#pragma once

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "kiln/error.h"
#include "kiln/nn/module.h"
#include "kiln/torch/types.h"

namespace torch::nn {

// The base of user modules is Kiln's: it has LibTorch's default constructor, register_module for
// holders and to(device), so `struct NetImpl : torch::nn::Module` is a kiln::nn::Module.
using kiln::nn::Module;

// LibTorch's base for a user module that can be cloned (See Note [Cloning a module] in
// kiln/nn/module.h):
//
//   struct NetImpl : torch::nn::Cloneable<NetImpl> {
//     explicit NetImpl(int64_t width) : width(width) { reset(); }
//     void reset() override { fc = register_module("fc", torch::nn::Linear(width, 2)); }
//     int64_t width;
//     torch::nn::Linear fc{nullptr};
//   };
//   auto copy = std::dynamic_pointer_cast<NetImpl>(net->clone());
//
// clone() copy-constructs a Derived (its plain members, such as `width`, are copied; its base
// starts with nothing registered), calls reset() on the copy to register fresh parameters,
// buffers and submodules, and then copies this module's values into them.
template <typename Derived>
class Cloneable : public Module {
 public:
  using Module::Module;
  Cloneable() = default;

  // Registers the module's parameters, buffers and submodules.
  virtual void reset() = 0;

  std::shared_ptr<kiln::nn::Module> clone() const override {
    auto copy = std::make_shared<Derived>(static_cast<const Derived&>(*this));
    copy->reset();
    return finish_clone(std::move(copy));
  }

 protected:
  Cloneable(const Cloneable& original) : Module(UnregisteredCopy{}, original) {}
};

template <typename Impl>
class ModuleHolder {
 public:
  using ContainedType = Impl;

  // Constructs the Impl from the arguments (none: its default constructor).
  ModuleHolder() requires std::is_default_constructible_v<Impl> : impl_(std::make_shared<Impl>()) {}
  ModuleHolder(std::nullptr_t) {}
  template <typename First, typename... Rest>
  requires(
      !(sizeof...(Rest) == 0 &&
        std::is_base_of_v<ModuleHolder, std::decay_t<First>>)&&!std::is_same_v<std::decay_t<First>,
                                                                               std::nullptr_t> &&
      std::is_constructible_v<Impl, First, Rest...>) explicit(sizeof...(Rest) == 0 &&
                                                              !std::is_convertible_v<First, Impl>)
      ModuleHolder(First&& first, Rest&&... rest)
      : impl_(std::make_shared<Impl>(std::forward<First>(first), std::forward<Rest>(rest)...)) {}
  ModuleHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

  Impl* operator->() const { return get(); }
  Impl& operator*() const { return *get(); }
  Impl* get() const {
    KILN_CHECK(impl_ != nullptr, ValueError,
               "a module holder constructed from nullptr was used before a module was assigned "
               "to it");
    return impl_.get();
  }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  bool is_empty() const { return impl_ == nullptr; }
  explicit operator bool() const { return impl_ != nullptr; }
  operator std::shared_ptr<kiln::nn::Module>() const { return impl_; }

  // Indexes the Impl (Sequential, ModuleList, ModuleDict), as LibTorch's holders do: seq[0].
  template <typename Arg>
  decltype(auto) operator[](Arg&& arg) const {
    return (*get())[std::forward<Arg>(arg)];
  }

  // Calls the Impl's forward with the arguments, as LibTorch's holders do.
  template <typename... Args>
  decltype(auto) operator()(Args&&... args) const {
    return get()->forward(std::forward<Args>(args)...);
  }

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace torch::nn

// Declares holder `Name` for module `NameImpl`, as LibTorch's macro.
#define TORCH_MODULE_IMPL(Name, ImplType)                    \
  class Name : public ::torch::nn::ModuleHolder<ImplType> {  \
   public:                                                   \
    using ::torch::nn::ModuleHolder<ImplType>::ModuleHolder; \
    using Impl = ImplType;                                   \
  }
#define TORCH_MODULE(Name) TORCH_MODULE_IMPL(Name, Name##Impl)
