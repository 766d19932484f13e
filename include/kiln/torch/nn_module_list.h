// torch::nn::ModuleList, ModuleDict and ParameterDict: containers that register what they hold
// (so its parameters are the container's) and have no forward of their own, as LibTorch's.
// Modules are given as holders, std::shared_ptrs or (torch::nn's layers only) values, as for
// Sequential. Kiln's modules cannot unregister a child or a parameter, so ModuleDict and
// ParameterDict have no pop() or clear().
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/tensor.h"
#include "kiln/torch/module_holder.h"
#include "kiln/torch/nn_any_module.h"

namespace torch::nn {

class ModuleListImpl : public Module {
 public:
  using Iterator = std::vector<std::shared_ptr<kiln::nn::Module>>::iterator;
  using ConstIterator = std::vector<std::shared_ptr<kiln::nn::Module>>::const_iterator;

  ModuleListImpl() : Module("ModuleList") {}
  std::shared_ptr<kiln::nn::Module> clone() const override;
  template <typename... Modules>
  requires(sizeof...(Modules) > 0 && (std::is_constructible_v<AnyModule, Modules&&> &&
                                      ...)) explicit ModuleListImpl(Modules&&... modules)
      : ModuleListImpl() {
    (push_back(AnyModule(std::forward<Modules>(modules))), ...);
  }

  // Registers the module as child str(size()).
  void push_back(const AnyModule& module);
  template <typename Container>
  void extend(const Container& container) {
    for (const auto& module : container) push_back(AnyModule(module));
  }
  // Inserts before `index` (0 <= index <= size()); the children after it are renamed to their new
  // positions, as LibTorch's.
  void insert(size_t index, const AnyModule& module);

  Iterator begin() { return modules_.begin(); }
  ConstIterator begin() const { return modules_.begin(); }
  Iterator end() { return modules_.end(); }
  ConstIterator end() const { return modules_.end(); }

  // IndexError naming ModuleList outside [0, size()).
  std::shared_ptr<kiln::nn::Module> ptr(size_t index) const;
  template <typename T>
  std::shared_ptr<T> ptr(size_t index) const {
    return AnyModule(ptr(index)).ptr<T>();
  }
  template <typename T>
  T& at(size_t index) const {
    return *ptr<T>(index);
  }
  std::shared_ptr<kiln::nn::Module> operator[](size_t index) const { return ptr(index); }
  size_t size() const noexcept { return modules_.size(); }
  bool is_empty() const noexcept { return modules_.empty(); }

 private:
  std::vector<std::shared_ptr<kiln::nn::Module>> modules_;
};
TORCH_MODULE(ModuleList);

// Modules by name, in insertion order.
class ModuleDictImpl : public Module {
 public:
  using Item = std::pair<std::string, std::shared_ptr<kiln::nn::Module>>;
  using ConstIterator = std::vector<Item>::const_iterator;

  ModuleDictImpl() : Module("ModuleDict") {}
  std::shared_ptr<kiln::nn::Module> clone() const override;
  explicit ModuleDictImpl(
      const std::vector<std::pair<std::string, std::shared_ptr<kiln::nn::Module>>>& modules);
  template <detail::KilnModule M>
  explicit ModuleDictImpl(const std::vector<std::pair<std::string, std::shared_ptr<M>>>& modules)
      : ModuleDictImpl() {
    for (const auto& [key, module] : modules) insert(key, module);
  }

  // Registers `module` as child `key`, replacing the module of that key if there is one.
  void insert(const std::string& key, const AnyModule& module);
  template <detail::KilnModule M>
  void update(const std::vector<std::pair<std::string, std::shared_ptr<M>>>& modules) {
    for (const auto& [key, module] : modules) insert(key, module);
  }

  // ValueError naming ModuleDict and the key when there is no such key.
  std::shared_ptr<kiln::nn::Module> operator[](const std::string& key) const;
  template <typename T>
  T& at(const std::string& key) const {
    return AnyModule((*this)[key]).get<T>();
  }
  bool contains(const std::string& key) const;
  std::vector<std::string> keys() const;
  std::vector<std::shared_ptr<kiln::nn::Module>> values() const;
  const std::vector<Item>& items() const { return items_; }
  ConstIterator begin() const { return items_.begin(); }
  ConstIterator end() const { return items_.end(); }
  size_t size() const noexcept { return items_.size(); }
  bool empty() const noexcept { return items_.empty(); }

 private:
  std::vector<Item> items_;
};
TORCH_MODULE(ModuleDict);

// Parameters by name, in insertion order; each is registered as the dict's parameter `key`.
class ParameterDictImpl : public Module {
 public:
  ParameterDictImpl() : Module("ParameterDict") {}
  std::shared_ptr<kiln::nn::Module> clone() const override;

  // Registers `param` (requiring grad as it does), or replaces the parameter of that key.
  void insert(const std::string& key, const kiln::Tensor& param);
  // ValueError naming ParameterDict and the key when there is no such key.
  kiln::Tensor& operator[](const std::string& key);
  const kiln::Tensor& operator[](const std::string& key) const;
  kiln::Tensor get(const std::string& key) const { return (*this)[key]; }
  bool contains(const std::string& key) const;
  std::vector<std::string> keys() const { return keys_; }
  std::vector<kiln::Tensor> values() const;
  std::vector<std::pair<std::string, kiln::Tensor>> items() const;
  size_t size() const noexcept { return keys_.size(); }
  bool empty() const noexcept { return keys_.empty(); }

 private:
  std::vector<std::string> keys_;
};
TORCH_MODULE(ParameterDict);

}  // namespace torch::nn
