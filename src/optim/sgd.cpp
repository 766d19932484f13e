#include "kiln/optim/sgd.h"

#include "kiln/autograd.h"
#include "src/optim/descent.h"
#include "src/optim/traced_step.h"

namespace kiln::optim {

namespace {

std::map<std::string, double> option_map(const SGDOptions& o) {
  return {{"momentum", o.momentum},
          {"dampening", o.dampening},
          {"weight_decay", o.weight_decay},
          {"nesterov", o.nesterov ? 1.0 : 0.0},
          {"maximize", o.maximize ? 1.0 : 0.0}};
}

}  // namespace

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : SGD(single_group(std::move(params)), options) {}

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions defaults)
    : Optimizer(std::move(groups), defaults.lr, option_map(defaults)) {
  check_groups();
}

SGDOptions SGD::group_options(const ParamGroup& group) {
  return {.lr = group.lr,
          .momentum = group.option("momentum"),
          .dampening = group.option("dampening"),
          .weight_decay = group.option("weight_decay"),
          .nesterov = group.option("nesterov") != 0,
          .maximize = group.option("maximize") != 0};
}

void SGD::check_group(const ParamGroup& group, size_t index) const {
  Optimizer::check_group(group, index);
  SGDOptions o = group_options(group);
  check_option(o.momentum >= 0, group, index, "momentum", ">= 0");
  check_option(o.weight_decay >= 0, group, index, "weight_decay", ">= 0");
  KILN_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0), ValueError,
             "SGD: nesterov momentum in parameter group {} needs momentum > 0 and dampening == 0 "
             "(got momentum {}, dampening {})",
             index, o.momentum, o.dampening);
}

void SGD::step() {
  if (step_under_trace(*this)) return;  // Note [Optimizer steps under a trace]
  NoGradGuard no_grad;
  for (const ParamGroup& group : groups_) {
    const SGDOptions o = group_options(group);
    const double lr = step_lr(group);
    for (const Tensor& param : group.params) {
      const Tensor& grad = param.grad();
      if (!grad.defined()) continue;
      auto [direction, sign] = descent_direction(grad, param, o.weight_decay, o.maximize);
      if (o.momentum == 0) {
        param.add_(direction, -lr * sign);
        continue;
      }
      auto& state = this->state(param);
      auto it = state.find("momentum_buffer");
      if (it == state.end()) {
        it = state.emplace("momentum_buffer", sign > 0 ? direction.clone() : direction.neg()).first;
      } else {
        it->second.mul_(o.momentum).add_(direction, sign * (1 - o.dampening));
      }
      const Tensor& buffer = it->second;
      if (o.nesterov) {
        // p -= lr * (g + momentum * buf), as two in-place updates instead of a temporary.
        param.add_(direction, -lr * sign);
        param.add_(buffer, -lr * o.momentum);
      } else {
        param.add_(buffer, -lr);
      }
    }
  }
}

}  // namespace kiln::optim
