// Containers, as torch.nn.Sequential / torch.nn.ModuleList. Children are named "0", "1", ...
#pragma once

#include <initializer_list>
#include <memory>
#include <vector>

#include "kiln/nn/module.h"

namespace kiln::nn {

// Runs its modules' forward(Tensor) in order:
//
//   auto net = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<Module>>{
//       std::make_shared<nn::Linear>(784, 128), std::make_shared<nn::ReLU>(),
//       std::make_shared<nn::Linear>(128, 10)});
class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  // Clones every module it holds.
  std::shared_ptr<Module> clone() const override;
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);

  Tensor forward(const Tensor& input) override;
  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return modules_.size(); }
  // IndexError outside [-size, size).
  const std::shared_ptr<Module>& operator[](int64_t index) const;
  // The module at `index` as an M (ValueError naming both types if it is not one).
  template <typename M>
  std::shared_ptr<M> at(int64_t index) const {
    auto m = std::dynamic_pointer_cast<M>((*this)[index]);
    check_cast(m != nullptr, index);
    return m;
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  void check_cast(bool ok, int64_t index) const;
  std::vector<std::shared_ptr<Module>> modules_;
};

// Holds submodules so that they are registered; has no forward of its own.
class ModuleList : public Module {
 public:
  ModuleList() : Module("ModuleList") {}
  // Clones every module it holds.
  std::shared_ptr<Module> clone() const override;
  ModuleList(std::initializer_list<std::shared_ptr<Module>> modules);

  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return modules_.size(); }
  const std::shared_ptr<Module>& operator[](int64_t index) const;
  template <typename M>
  std::shared_ptr<M> at(int64_t index) const {
    auto m = std::dynamic_pointer_cast<M>((*this)[index]);
    check_cast(m != nullptr, index);
    return m;
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  void check_cast(bool ok, int64_t index) const;
  std::vector<std::shared_ptr<Module>> modules_;
};

}  // namespace kiln::nn
