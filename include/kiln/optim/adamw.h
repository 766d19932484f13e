// AdamW: Adam with decoupled weight decay (the parameter shrinks by lr * weight_decay each step
// instead of an L2 term entering the moments); PyTorch's torch.optim.AdamW update rule.
//
//   optim::AdamW opt(model.parameters(), {.lr = 3e-4, .weight_decay = 0.05});
#pragma once

#include <utility>

#include "kiln/optim/optimizer.h"

namespace kiln::optim {

// The group options are stored under these names: "beta1", "beta2" (PyTorch's betas), "eps",
// "weight_decay", "amsgrad", "maximize" (flags 0/1).
struct AdamWOptions {
  double lr = 1e-3;
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
  bool maximize = false;
};

class AdamW : public Optimizer {
 public:
  explicit AdamW(std::vector<Tensor> params, AdamWOptions options = {});
  explicit AdamW(std::vector<ParamGroup> groups, AdamWOptions defaults = {});

  // Adam's step (adam.h) on g = maximize ? -g : g, after p *= 1 - lr * weight_decay. Same state.
  void step() override;
  std::string name() const override { return "AdamW"; }

  static AdamWOptions group_options(const ParamGroup& group);

 protected:
  void check_group(const ParamGroup& group, size_t index) const override;
};

}  // namespace kiln::optim
