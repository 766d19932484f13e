// RMSprop: divides the gradient by a running root mean square of past gradients (optionally
// centered by their running mean), with optional momentum; PyTorch's torch.optim.RMSprop.
//
//   optim::RMSprop opt(model.parameters(), {.lr = 1e-3, .momentum = 0.9, .centered = true});
#pragma once

#include "kiln/optim/optimizer.h"

namespace kiln::optim {

// The group options are stored under these names: "alpha", "eps", "weight_decay", "momentum",
// "centered", "maximize" (flags 0/1).
struct RMSpropOptions {
  double lr = 1e-2;
  // Decay rate of the running average of the squared gradient.
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum = 0;
  // Normalize by an estimate of the gradient's variance instead of its second moment.
  bool centered = false;
  bool maximize = false;
};

class RMSprop : public Optimizer {
 public:
  explicit RMSprop(std::vector<Tensor> params, RMSpropOptions options = {});
  explicit RMSprop(std::vector<ParamGroup> groups, RMSpropOptions defaults = {});

  // Per parameter with a gradient g (state "step", "square_avg", "grad_avg" when centered,
  // "momentum_buffer" when momentum > 0):
  //   g = (maximize ? -g : g) + weight_decay * p
  //   v = alpha * v + (1 - alpha) * g^2
  //   avg = sqrt(v) + eps, or centered: a = alpha * a + (1 - alpha) * g, avg = sqrt(v - a^2) + eps
  //   momentum > 0: buf = momentum * buf + g / avg, p -= lr * buf;  else p -= lr * g / avg
  void step() override;
  std::string name() const override { return "RMSprop"; }

  static RMSpropOptions group_options(const ParamGroup& group);

 protected:
  void check_group(const ParamGroup& group, size_t index) const override;
};

}  // namespace kiln::optim
