#include "kiln/nn/container.h"

#include <string>

#include "src/nn/naming.h"

namespace kiln::nn {
namespace {

const std::shared_ptr<Module>& checked_at(const Module& owner,
                                          const std::vector<std::shared_ptr<Module>>& modules,
                                          int64_t index) {
  const int64_t n = static_cast<int64_t>(modules.size());
  KILN_CHECK(index >= -n && index < n, IndexError, "{}: index {} is out of range for {} module(s)",
             owner.name(), index, n);
  return modules[static_cast<size_t>(index < 0 ? index + n : index)];
}

void check_cast_at(const Module& owner, const std::vector<std::shared_ptr<Module>>& modules,
                   bool ok, int64_t index) {
  KILN_CHECK(ok, ValueError, "{}: module {} is a {}, not the type asked for", owner.name(), index,
             checked_at(owner, modules, index)->name());
}

}  // namespace

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules)
    : Module("Sequential") {
  for (const auto& m : modules) push_back(m);
}

std::shared_ptr<Module> Sequential::clone() const {
  auto copy = std::make_shared<Sequential>();
  for (const auto& module : modules_) copy->push_back(module->clone());
  return finish_clone(std::move(copy));
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& m : modules_) x = m->forward(x);
  return x;
}

const std::shared_ptr<Module>& Sequential::operator[](int64_t index) const {
  return checked_at(*this, modules_, index);
}

void Sequential::check_cast(bool ok, int64_t index) const {
  check_cast_at(*this, modules_, ok, index);
}

ModuleList::ModuleList(std::initializer_list<std::shared_ptr<Module>> modules)
    : Module("ModuleList") {
  for (const auto& m : modules) push_back(m);
}

std::shared_ptr<Module> ModuleList::clone() const {
  auto copy = std::make_shared<ModuleList>();
  for (const auto& module : modules_) copy->push_back(module->clone());
  return finish_clone(std::move(copy));
}

void ModuleList::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

const std::shared_ptr<Module>& ModuleList::operator[](int64_t index) const {
  return checked_at(*this, modules_, index);
}

void ModuleList::check_cast(bool ok, int64_t index) const {
  check_cast_at(*this, modules_, ok, index);
}

}  // namespace kiln::nn
