// Module::clone and the state copy every clone() override ends with. See Note [Cloning a module]
// in kiln/nn/module.h.
#include <fmt/format.h>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/nn/module.h"

namespace kiln::nn {

std::shared_ptr<Module> Module::clone() const {
  throw NotImplementedError(fmt::format(
      "{}.clone(): this module does not implement clone(). A LibTorch-style module derives from "
      "torch::nn::Cloneable<{}Impl> instead of torch::nn::Module and registers its state in "
      "reset(); a kiln::nn::Module overrides clone() to construct itself again and return "
      "finish_clone(copy)",
      name_, name_ == "Module" ? "Net" : name_));
}

Module::Module(UnregisteredCopy, const Module& original) : Module(original.name_) {
  training_ = original.training_;
}

std::shared_ptr<Module> Module::finish_clone(std::shared_ptr<Module> copy) const {
  KILN_CHECK(copy != nullptr, ValueError, "{}.clone(): finish_clone was given no module", name_);
  std::map<const TensorImpl*, Tensor> copied;
  copy_state(*this, *copy, name_, copied);
  return copy;
}

namespace {

// A deep copy of `tensor` (undefined stays undefined): a new leaf with its requires_grad and no
// grad, shared by every slot that held the same tensor.
Tensor copy_of(const Tensor& tensor, std::map<const TensorImpl*, Tensor>& copied) {
  if (!tensor.defined()) return Tensor();
  auto it = copied.find(tensor.impl());
  if (it != copied.end()) return it->second;
  Tensor fresh = tensor.detach().clone();
  fresh.requires_grad_(tensor.requires_grad());
  copied.emplace(tensor.impl(), fresh);
  return fresh;
}

}  // namespace

void Module::copy_state(const Module& from, Module& to, const std::string& path,
                        std::map<const TensorImpl*, Tensor>& copied) {
  // A copy built with the original's constructor arguments registers the same names; a
  // difference means that the clone() override built something else (or that the original was
  // changed with register_*/replace_module after construction, which its constructor does not
  // repeat).
  auto check_same = [&](auto& a, auto& b, const char* what, auto name_of) {
    bool same = a.size() == b.size();
    for (size_t i = 0; same && i < a.size(); ++i) same = name_of(a[i]) == name_of(b[i]);
    KILN_CHECK(same, ValueError,
               "{}.clone(): the copy built with the module's constructor arguments has other {} "
               "than the original ({} against {}); a module changed after construction "
               "(register_*, replace_module) cannot be cloned by rebuilding it",
               path, what, b.size(), a.size());
  };
  NoGradGuard no_grad;
  check_same(from.parameters_, to.parameters_, "parameters", [](const Slot& s) { return s.name; });
  check_same(from.buffers_, to.buffers_, "buffers", [](const Slot& s) { return s.name; });
  check_same(from.children_, to.children_, "submodules",
             [](const auto& child) { return child.first; });
  for (size_t i = 0; i < from.parameters_.size(); ++i)
    to.parameters_[i].tensor = copy_of(from.parameters_[i].tensor, copied);
  for (size_t i = 0; i < from.buffers_.size(); ++i) {
    to.buffers_[i].tensor = copy_of(from.buffers_[i].tensor, copied);
    to.buffers_[i].persistent = from.buffers_[i].persistent;
  }
  to.attributes_ = from.attributes_;
  to.training_ = from.training_;
  for (size_t i = 0; i < from.children_.size(); ++i) {
    const auto& [name, child] = from.children_[i];
    Module& child_copy = *to.children_[i].second;
    KILN_CHECK(&child_copy != child.get(), ValueError,
               "{}.clone(): the copy shares its submodule '{}' with the original; its clone() "
               "must clone that submodule too",
               path, name);
    copy_state(*child, child_copy, path + "." + name, copied);
  }
}

}  // namespace kiln::nn
