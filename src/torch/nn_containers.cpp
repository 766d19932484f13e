// torch::nn's containers: AnyModule's errors, Sequential, ModuleList, ModuleDict, ParameterDict.
#include <cxxabi.h>
#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "kiln/error.h"
#include "kiln/torch/nn_any_module.h"
#include "kiln/torch/nn_module_list.h"
#include "kiln/torch/nn_sequential.h"

namespace torch::nn {

using kiln::IndexError;
using kiln::Tensor;
using kiln::ValueError;

namespace detail {

namespace {

std::string demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

}  // namespace

void throw_any_module_cast(const kiln::nn::Module* module, const char* wanted) {
  throw ValueError(fmt::format(
      "AnyModule: the module is a {} ({}), not a {}", module ? module->name() : "null module",
      module ? demangle(typeid(*module).name()) : "none", demangle(wanted)));
}

void throw_empty_any_module() {
  throw ValueError("AnyModule: forward() called on an empty AnyModule");
}

}  // namespace detail

// ---- Sequential ----

SequentialImpl::SequentialImpl(std::initializer_list<NamedAnyModule> named_modules)
    : SequentialImpl() {
  modules_.reserve(named_modules.size());
  for (const NamedAnyModule& named : named_modules) push_back(named.name(), named.module());
}

Tensor SequentialImpl::forward(const Tensor& input) {
  KILN_CHECK(!modules_.empty(), ValueError, "Sequential: forward() called on an empty Sequential");
  check_input_defined(input);
  Tensor x = modules_.front().forward(input);
  for (size_t i = 1; i < modules_.size(); ++i) x = modules_[i].forward(x);
  return x;
}

void SequentialImpl::push_back(AnyModule module) {
  push_back(std::to_string(modules_.size()), std::move(module));
}

void SequentialImpl::push_back(std::string name, AnyModule module) {
  KILN_CHECK(!module.is_empty(), ValueError, "Sequential: push_back got an empty module");
  // Registered first: a name that is refused leaves the Sequential as it was.
  register_module(std::move(name), module.ptr());
  modules_.push_back(std::move(module));
}

std::shared_ptr<kiln::nn::Module> SequentialImpl::clone() const {
  auto copy = std::make_shared<SequentialImpl>();
  const auto children = named_children();
  for (size_t i = 0; i < modules_.size(); ++i)
    copy->push_back(children[i].first, modules_[i].clone());
  return finish_clone(std::move(copy));
}

const AnyModule& SequentialImpl::at_index(size_t index) const {
  KILN_CHECK(index < modules_.size(), IndexError,
             "Sequential: index {} is out of range for a Sequential of {} module(s)", index,
             modules_.size());
  return modules_[index];
}

// ---- ModuleList ----

void ModuleListImpl::push_back(const AnyModule& module) {
  KILN_CHECK(!module.is_empty(), ValueError, "ModuleList: push_back got an empty module");
  register_module(std::to_string(modules_.size()), module.ptr());
  modules_.push_back(module.ptr());
}

std::shared_ptr<kiln::nn::Module> ModuleListImpl::clone() const {
  auto copy = std::make_shared<ModuleListImpl>();
  for (const auto& module : modules_) copy->push_back(AnyModule(module->clone()));
  return finish_clone(std::move(copy));
}

void ModuleListImpl::insert(size_t index, const AnyModule& module) {
  KILN_CHECK(index <= modules_.size(), IndexError,
             "ModuleList: insert index {} is out of range for a ModuleList of {} module(s)", index,
             modules_.size());
  KILN_CHECK(!module.is_empty(), ValueError, "ModuleList: insert got an empty module");
  if (index == modules_.size()) return push_back(module);
  modules_.insert(modules_.begin() + static_cast<std::ptrdiff_t>(index), module.ptr());
  // Children keep their position names: each after the insertion moves up one.
  for (size_t i = index; i + 1 < modules_.size(); ++i) {
    replace_module(std::to_string(i), modules_[i]);
  }
  register_module(std::to_string(modules_.size() - 1), modules_.back());
}

std::shared_ptr<kiln::nn::Module> ModuleListImpl::ptr(size_t index) const {
  KILN_CHECK(index < modules_.size(), IndexError,
             "ModuleList: index {} is out of range for a ModuleList of {} module(s)", index,
             modules_.size());
  return modules_[index];
}

// ---- ModuleDict ----

ModuleDictImpl::ModuleDictImpl(
    const std::vector<std::pair<std::string, std::shared_ptr<kiln::nn::Module>>>& modules)
    : ModuleDictImpl() {
  for (const auto& [key, module] : modules) insert(key, module);
}

void ModuleDictImpl::insert(const std::string& key, const AnyModule& module) {
  KILN_CHECK(!module.is_empty(), ValueError, "ModuleDict: insert got an empty module for '{}'",
             key);
  for (Item& item : items_) {
    if (item.first == key) {
      replace_module(key, module.ptr());
      item.second = module.ptr();
      return;
    }
  }
  register_module(key, module.ptr());
  items_.emplace_back(key, module.ptr());
}

std::shared_ptr<kiln::nn::Module> ModuleDictImpl::clone() const {
  auto copy = std::make_shared<ModuleDictImpl>();
  for (const auto& [key, module] : items_) copy->insert(key, AnyModule(module->clone()));
  return finish_clone(std::move(copy));
}

std::shared_ptr<kiln::nn::Module> ModuleDictImpl::operator[](const std::string& key) const {
  for (const Item& item : items_) {
    if (item.first == key) return item.second;
  }
  throw ValueError(fmt::format("ModuleDict: no module named '{}'", key));
}

bool ModuleDictImpl::contains(const std::string& key) const {
  for (const Item& item : items_) {
    if (item.first == key) return true;
  }
  return false;
}

std::vector<std::string> ModuleDictImpl::keys() const {
  std::vector<std::string> out;
  for (const Item& item : items_) out.push_back(item.first);
  return out;
}

std::vector<std::shared_ptr<kiln::nn::Module>> ModuleDictImpl::values() const {
  std::vector<std::shared_ptr<kiln::nn::Module>> out;
  for (const Item& item : items_) out.push_back(item.second);
  return out;
}

// ---- ParameterDict ----

void ParameterDictImpl::insert(const std::string& key, const Tensor& param) {
  if (contains(key)) {
    parameter_slot(key) = param;
    return;
  }
  register_parameter(key, param, param.requires_grad());
  keys_.push_back(key);
}

std::shared_ptr<kiln::nn::Module> ParameterDictImpl::clone() const {
  // The copy registers the same tensors; finish_clone replaces each with a copy.
  auto copy = std::make_shared<ParameterDictImpl>();
  for (const auto& [key, param] : items()) copy->insert(key, param);
  return finish_clone(std::move(copy));
}

Tensor& ParameterDictImpl::operator[](const std::string& key) {
  KILN_CHECK(contains(key), ValueError, "ParameterDict: no parameter named '{}'", key);
  return parameter_slot(key);
}

const Tensor& ParameterDictImpl::operator[](const std::string& key) const {
  return (*const_cast<ParameterDictImpl*>(this))[key];
}

bool ParameterDictImpl::contains(const std::string& key) const {
  for (const std::string& k : keys_) {
    if (k == key) return true;
  }
  return false;
}

std::vector<Tensor> ParameterDictImpl::values() const {
  std::vector<Tensor> out;
  for (const std::string& k : keys_) out.push_back((*this)[k]);
  return out;
}

std::vector<std::pair<std::string, Tensor>> ParameterDictImpl::items() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const std::string& k : keys_) out.emplace_back(k, (*this)[k]);
  return out;
}

}  // namespace torch::nn
