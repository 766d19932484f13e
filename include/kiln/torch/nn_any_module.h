// torch::nn::AnyModule: any module, with the one-tensor forward its type declares, as LibTorch's
// containers store them. LibTorch's user modules declare a non-virtual forward of their own
// (`torch::Tensor forward(torch::Tensor x)`), which Kiln's virtual Module::forward does not reach;
// AnyModule captures the forward of the static type it was given, when that type has one taking a
// single Tensor, and otherwise calls the virtual one (Kiln's layers, MultiheadAttention's
// self-attention). Other signatures (several inputs, a tuple result) are not supported.
#pragma once

#include <concepts>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "kiln/error.h"
#include "kiln/nn/module.h"
#include "kiln/tensor.h"
#include "kiln/torch/module_holder.h"

namespace torch::nn {

namespace detail {

template <typename M>
concept KilnModule = std::is_base_of_v<kiln::nn::Module, M>;

// torch::nn's own layers can be rebuilt from their options (below).
template <typename M>
concept RebuildableFromOptions = KilnModule<M> && requires(const M& m) {
  m.options;
} && std::is_constructible_v<M, const decltype(M::options)&>;

template <typename M>
std::function<kiln::Tensor(const kiln::Tensor&)> forward_of(M* module) {
  if constexpr (requires(const kiln::Tensor& x) {
                  { std::declval<M&>().forward(x) } -> std::convertible_to<kiln::Tensor>;
                }) {
    return [module](const kiln::Tensor& x) -> kiln::Tensor { return module->forward(x); };
  } else {
    kiln::nn::Module* base = module;
    return [base](const kiln::Tensor& x) { return base->forward(x); };
  }
}

[[noreturn]] void throw_any_module_cast(const kiln::nn::Module* module, const char* wanted);
[[noreturn]] void throw_empty_any_module();

}  // namespace detail

class AnyModule {
 public:
  AnyModule() = default;
  template <detail::KilnModule M>
  AnyModule(std::shared_ptr<M> module)
      : module_(module),
        forward_(detail::forward_of(module.get())),
        type_(&typeid(M)),
        rewrap_([](std::shared_ptr<kiln::nn::Module> copy) {
          auto typed = std::dynamic_pointer_cast<M>(copy);
          if (!typed) detail::throw_any_module_cast(copy.get(), typeid(M).name());
          return AnyModule(std::move(typed));
        }) {
    KILN_CHECK(module_ != nullptr, ValueError, "AnyModule: got a null module pointer");
  }
  template <typename M>
  AnyModule(const ModuleHolder<M>& holder) : AnyModule(holder.ptr()) {}
  // A module value. Kiln's modules cannot be copied or moved (each owns the slots its parameters
  // live in), so one of torch::nn's layers is rebuilt from its options, with copies of the
  // value's parameters and buffers and its training mode. Other modules (user modules) must be
  // passed as a holder or a std::shared_ptr.
  template <typename M>
  requires detail::KilnModule<std::remove_cvref_t<M>> AnyModule(M&& value)
      : AnyModule(rebuild(value)) {}

  // The module's forward (See the note at the top); ValueError on an empty AnyModule.
  kiln::Tensor forward(const kiln::Tensor& input) const {
    if (!forward_) detail::throw_empty_any_module();
    return forward_(input);
  }
  template <typename ReturnType>
  ReturnType forward(const kiln::Tensor& input) const {
    static_assert(std::is_same_v<ReturnType, kiln::Tensor>,
                  "Kiln's containers run one-tensor forwards: ReturnType must be torch::Tensor");
    return forward(input);
  }

  // A deep copy of the module (See Note [Cloning a module] in kiln/nn/module.h), running the
  // forward of the type this one was given as; ValueError on an empty AnyModule.
  AnyModule clone() const {
    if (!module_) detail::throw_empty_any_module();
    return rewrap_(module_->clone());
  }

  const std::shared_ptr<kiln::nn::Module>& ptr() const { return module_; }
  // The module as a T (ValueError naming both types if it is not one).
  template <typename T>
  std::shared_ptr<T> ptr() const {
    auto m = std::dynamic_pointer_cast<T>(module_);
    if (!m) detail::throw_any_module_cast(module_.get(), typeid(T).name());
    return m;
  }
  template <typename T>
  T& get() const {
    return *ptr<T>();
  }
  template <typename T>
  T* try_get() const {
    return dynamic_cast<T*>(module_.get());
  }
  bool is_empty() const { return module_ == nullptr; }
  // The type the module was given as (NetImpl, torch::nn::LinearImpl).
  const std::type_info& type_info() const { return type_ ? *type_ : typeid(void); }

 private:
  template <typename M>
  static std::shared_ptr<std::remove_cvref_t<M>> rebuild(const M& value) {
    using Type = std::remove_cvref_t<M>;
    static_assert(detail::RebuildableFromOptions<Type>,
                  "Kiln's modules cannot be copied or moved: pass a module holder "
                  "(TORCH_MODULE) or a std::shared_ptr to a container instead of a module value");
    auto rebuilt = std::make_shared<Type>(value.options);
    rebuilt->load_state_dict(value.state_dict());
    rebuilt->train(value.is_training());
    return rebuilt;
  }

  std::shared_ptr<kiln::nn::Module> module_;
  std::function<kiln::Tensor(const kiln::Tensor&)> forward_;
  const std::type_info* type_ = nullptr;
  // Wraps a clone of the module as the type it was given as.
  std::function<AnyModule(std::shared_ptr<kiln::nn::Module>)> rewrap_;
};

// A name and a module, for Sequential's named constructor:
// `torch::nn::Sequential({{"fc", torch::nn::Linear(4, 3)}, {"act", torch::nn::ReLU()}})`.
class NamedAnyModule {
 public:
  template <typename M>
  requires std::is_constructible_v<AnyModule, M&&> NamedAnyModule(std::string name, M&& module)
      : name_(std::move(name)), module_(std::forward<M>(module)) {}
  NamedAnyModule(std::string name, AnyModule module)
      : name_(std::move(name)), module_(std::move(module)) {}

  const std::string& name() const noexcept { return name_; }
  const AnyModule& module() const noexcept { return module_; }

 private:
  std::string name_;
  AnyModule module_;
};

}  // namespace torch::nn
