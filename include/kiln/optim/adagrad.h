// Adagrad: scales each coordinate by the inverse root of its accumulated squared gradients, with
// an optional learning-rate decay; PyTorch's torch.optim.Adagrad update rule.
//
//   optim::Adagrad opt(model.parameters(), {.lr = 0.05, .initial_accumulator_value = 0.1});
#pragma once

#include "kiln/optim/optimizer.h"

namespace kiln::optim {

// The group options are stored under these names: "lr_decay", "weight_decay",
// "initial_accumulator_value", "eps", "maximize" (flag 0/1).
struct AdagradOptions {
  double lr = 1e-2;
  double lr_decay = 0;
  double weight_decay = 0;
  // The starting value of every coordinate's sum of squared gradients.
  double initial_accumulator_value = 0;
  double eps = 1e-10;
  bool maximize = false;
};

class Adagrad : public Optimizer {
 public:
  // As PyTorch's, creates the state ("step" = 0, "sum" = initial_accumulator_value) of every
  // parameter here; parameters of groups added later get theirs on their first step. Unlike
  // PyTorch's, a group's own initial_accumulator_value (ParamGroup::options) is honoured.
  explicit Adagrad(std::vector<Tensor> params, AdagradOptions options = {});
  explicit Adagrad(std::vector<ParamGroup> groups, AdagradOptions defaults = {});

  // Per parameter with a gradient g, at step t = 1, 2, ...:
  //   g = (maximize ? -g : g) + weight_decay * p
  //   sum += g^2
  //   p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(sum) + eps)
  void step() override;
  std::string name() const override { return "Adagrad"; }

  static AdagradOptions group_options(const ParamGroup& group);

 protected:
  void check_group(const ParamGroup& group, size_t index) const override;

 private:
  void init_state(const ParamGroup& group, const Tensor& param);
};

}  // namespace kiln::optim
