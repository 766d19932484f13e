// Adam (with the AMSGrad variant): PyTorch's torch.optim.Adam update rule. Its weight decay is an
// L2 term added to the gradient; AdamW (adamw.h) decouples it.
//
//   optim::Adam opt(model.parameters(), {.lr = 1e-3, .betas = {0.9, 0.98}});
#pragma once

#include <utility>

#include "kiln/optim/optimizer.h"

namespace kiln::optim {

// The group options are stored under these names: "beta1", "beta2" (PyTorch's betas), "eps",
// "weight_decay", "amsgrad", "maximize" (flags 0/1).
struct AdamOptions {
  double lr = 1e-3;
  // Decay rates of the running averages of the gradient and its square, each in [0, 1).
  std::pair<double, double> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  // Normalize by the largest second moment so far (AMSGrad).
  bool amsgrad = false;
  bool maximize = false;
};

class Adam : public Optimizer {
 public:
  explicit Adam(std::vector<Tensor> params, AdamOptions options = {});
  explicit Adam(std::vector<ParamGroup> groups, AdamOptions defaults = {});

  // Per parameter with a gradient g (state "step", "exp_avg", "exp_avg_sq", and
  // "max_exp_avg_sq" with amsgrad), at step t = 1, 2, ...:
  //   g = (maximize ? -g : g) + weight_decay * p
  //   m = beta1 * m + (1 - beta1) * g;   v = beta2 * v + (1 - beta2) * g^2
  //   v_max = max(v_max, v) with amsgrad, and it replaces v below
  //   p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
  void step() override;
  std::string name() const override { return "Adam"; }

  static AdamOptions group_options(const ParamGroup& group);

 protected:
  void check_group(const ParamGroup& group, size_t index) const override;
};

}  // namespace kiln::optim
