// SGD: stochastic gradient descent with optional momentum (heavy ball or Nesterov), dampening,
// weight decay (L2) and maximization; PyTorch's torch.optim.SGD update rule.
//
//   optim::SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9});
//   loss.backward();
//   opt.step();
//   opt.zero_grad();
#pragma once

#include "kiln/optim/optimizer.h"

namespace kiln::optim {

// The group options are stored under these names: "momentum", "dampening", "weight_decay",
// "nesterov", "maximize" (flags 0/1).
struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  // Nesterov momentum; needs momentum > 0 and dampening == 0.
  bool nesterov = false;
  // Ascend the objective instead of descending.
  bool maximize = false;
};

class SGD : public Optimizer {
 public:
  explicit SGD(std::vector<Tensor> params, SGDOptions options = {});
  // Groups may override any option (ParamGroup::options under the names above).
  explicit SGD(std::vector<ParamGroup> groups, SGDOptions defaults = {});

  // Per parameter with a gradient g (state "momentum_buffer" only when momentum != 0):
  //   g = (maximize ? -g : g) + weight_decay * p
  //   buf = g on the first step, else momentum * buf + (1 - dampening) * g
  //   g = nesterov ? g + momentum * buf : buf          (when momentum != 0)
  //   p -= lr * g
  void step() override;
  std::string name() const override { return "SGD"; }

  // A group's options read back from its options map (lr included).
  static SGDOptions group_options(const ParamGroup& group);

 protected:
  void check_group(const ParamGroup& group, size_t index) const override;
};

}  // namespace kiln::optim
