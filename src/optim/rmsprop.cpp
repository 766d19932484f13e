#include "kiln/optim/rmsprop.h"

#include "kiln/autograd.h"
#include "kiln/ops/creation.h"
#include "src/optim/descent.h"
#include "src/optim/traced_step.h"

namespace kiln::optim {

namespace {

std::map<std::string, double> option_map(const RMSpropOptions& o) {
  return {{"alpha", o.alpha},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"momentum", o.momentum},
          {"centered", o.centered ? 1.0 : 0.0},
          {"maximize", o.maximize ? 1.0 : 0.0}};
}

}  // namespace

RMSprop::RMSprop(std::vector<Tensor> params, RMSpropOptions options)
    : RMSprop(single_group(std::move(params)), options) {}

RMSprop::RMSprop(std::vector<ParamGroup> groups, RMSpropOptions defaults)
    : Optimizer(std::move(groups), defaults.lr, option_map(defaults)) {
  check_groups();
}

RMSpropOptions RMSprop::group_options(const ParamGroup& group) {
  return {.lr = group.lr,
          .alpha = group.option("alpha"),
          .eps = group.option("eps"),
          .weight_decay = group.option("weight_decay"),
          .momentum = group.option("momentum"),
          .centered = group.option("centered") != 0,
          .maximize = group.option("maximize") != 0};
}

void RMSprop::check_group(const ParamGroup& group, size_t index) const {
  Optimizer::check_group(group, index);
  RMSpropOptions o = group_options(group);
  check_option(o.alpha >= 0, group, index, "alpha", ">= 0");
  check_option(o.eps >= 0, group, index, "eps", ">= 0");
  check_option(o.weight_decay >= 0, group, index, "weight_decay", ">= 0");
  check_option(o.momentum >= 0, group, index, "momentum", ">= 0");
}

void RMSprop::step() {
  if (step_under_trace(*this)) return;  // Note [Optimizer steps under a trace]
  NoGradGuard no_grad;
  for (const ParamGroup& group : groups_) {
    const RMSpropOptions o = group_options(group);
    const double lr = step_lr(group);
    for (const Tensor& param : group.params) {
      const Tensor& grad = param.grad();
      if (!grad.defined()) continue;
      auto& state = this->state(param);
      increment_step(state_entry(state, "step", [] { return zeros({}, kFloat32); }));
      const Tensor& square_avg =
          state_entry(state, "square_avg", [&] { return zeros_like(param); });
      auto [direction, sign] = descent_direction(grad, param, o.weight_decay, o.maximize);

      square_avg.mul_(o.alpha).addcmul_(direction, direction, 1 - o.alpha);
      // avg = sqrt(v - a^2) + eps (centered) or sqrt(v) + eps: the step's one temporary.
      Tensor avg;
      if (o.centered) {
        const Tensor& grad_avg = state_entry(state, "grad_avg", [&] { return zeros_like(param); });
        grad_avg.mul_(o.alpha).add_(direction, sign * (1 - o.alpha));
        avg = square_avg.clone();
        avg.addcmul_(grad_avg, grad_avg, -1).sqrt_();
      } else {
        avg = square_avg.sqrt();
      }
      avg.add_(o.eps);
      if (o.momentum > 0) {
        const Tensor& buffer =
            state_entry(state, "momentum_buffer", [&] { return zeros_like(param); });
        buffer.mul_(o.momentum).addcdiv_(direction, avg, sign);
        param.add_(buffer, -lr);
      } else {
        param.addcdiv_(direction, avg, -lr * sign);
      }
    }
  }
}

}  // namespace kiln::optim
