#include "kiln/optim/adam.h"

#include <cmath>

#include "kiln/autograd.h"
#include "kiln/ops/binary.h"
#include "kiln/ops/creation.h"
#include "src/optim/adam_update.h"
#include "src/optim/descent.h"
#include "src/optim/traced_step.h"

namespace kiln::optim {

void adam_update(std::map<std::string, Tensor>& state, const Tensor& param, const Tensor& grad,
                 const AdamHyperparameters& h) {
  const Tensor& step = state_entry(state, "step", [] { return zeros({}, kFloat32); });
  const Tensor& exp_avg = state_entry(state, "exp_avg", [&] { return zeros_like(param); });
  const Tensor& exp_avg_sq = state_entry(state, "exp_avg_sq", [&] { return zeros_like(param); });
  const double t = increment_step(step);

  DescentDirection d;
  if (h.decoupled_weight_decay) {
    if (h.weight_decay != 0) param.mul_(1 - h.lr * h.weight_decay);
    d = descent_direction(grad, param, /*weight_decay=*/0, h.maximize);
  } else {
    d = descent_direction(grad, param, h.weight_decay, h.maximize);
  }
  // PyTorch 2 writes this as exp_avg.lerp_(g, 1 - beta1); mul_ + add_ is the same average, lets
  // the maximize sign ride on the factor, and is faster with Kiln's kernels.
  exp_avg.mul_(h.beta1).add_(d.grad, d.sign * (1 - h.beta1));
  exp_avg_sq.mul_(h.beta2).addcmul_(d.grad, d.grad, 1 - h.beta2);

  const double bias_correction1 = 1 - std::pow(h.beta1, t);
  const double bias_correction2_sqrt = std::sqrt(1 - std::pow(h.beta2, t));
  const double step_size = h.lr / bias_correction1;
  // denom = sqrt(v) / sqrt(1 - beta2^t) + eps, in the one temporary the step allocates.
  Tensor denom;
  if (h.amsgrad) {
    const Tensor& max_exp_avg_sq =
        state_entry(state, "max_exp_avg_sq", [&] { return zeros_like(param); });
    denom = maximum(max_exp_avg_sq, exp_avg_sq);
    max_exp_avg_sq.copy_(denom);
    denom.sqrt_();
  } else {
    denom = exp_avg_sq.sqrt();
  }
  denom.div_(bias_correction2_sqrt).add_(h.eps);
  param.addcdiv_(exp_avg, denom, -step_size);
}

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Adam(single_group(std::move(params)), options) {}

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions defaults)
    : Optimizer(std::move(groups), defaults.lr, adam_option_map(defaults)) {
  check_groups();
}

AdamOptions Adam::group_options(const ParamGroup& group) {
  return adam_group_options<AdamOptions>(group);
}

void Adam::check_group(const ParamGroup& group, size_t index) const {
  Optimizer::check_group(group, index);
  check_adam_options(group_options(group), [&](bool ok, const char* option, const char* need) {
    check_option(ok, group, index, option, need);
  });
}

void Adam::step() {
  if (step_under_trace(*this)) return;  // Note [Optimizer steps under a trace]
  NoGradGuard no_grad;
  for (const ParamGroup& group : groups_) {
    const AdamHyperparameters h =
        adam_hyperparameters(group_options(group), step_lr(group), /*decoupled=*/false);
    for (const Tensor& param : group.params) {
      if (param.grad().defined()) adam_update(state(param), param, param.grad(), h);
    }
  }
}

}  // namespace kiln::optim
