#include "kiln/optim/adagrad.h"

#include "kiln/autograd.h"
#include "kiln/ops/creation.h"
#include "src/optim/descent.h"
#include "src/optim/traced_step.h"

namespace kiln::optim {

namespace {

std::map<std::string, double> option_map(const AdagradOptions& o) {
  return {{"lr_decay", o.lr_decay},
          {"weight_decay", o.weight_decay},
          {"initial_accumulator_value", o.initial_accumulator_value},
          {"eps", o.eps},
          {"maximize", o.maximize ? 1.0 : 0.0}};
}

}  // namespace

Adagrad::Adagrad(std::vector<Tensor> params, AdagradOptions options)
    : Adagrad(single_group(std::move(params)), options) {}

Adagrad::Adagrad(std::vector<ParamGroup> groups, AdagradOptions defaults)
    : Optimizer(std::move(groups), defaults.lr, option_map(defaults)) {
  check_groups();
  for (const ParamGroup& group : groups_)
    for (const Tensor& param : group.params) init_state(group, param);
}

AdagradOptions Adagrad::group_options(const ParamGroup& group) {
  return {.lr = group.lr,
          .lr_decay = group.option("lr_decay"),
          .weight_decay = group.option("weight_decay"),
          .initial_accumulator_value = group.option("initial_accumulator_value"),
          .eps = group.option("eps"),
          .maximize = group.option("maximize") != 0};
}

void Adagrad::check_group(const ParamGroup& group, size_t index) const {
  Optimizer::check_group(group, index);
  AdagradOptions o = group_options(group);
  check_option(o.lr_decay >= 0, group, index, "lr_decay", ">= 0");
  check_option(o.weight_decay >= 0, group, index, "weight_decay", ">= 0");
  check_option(o.initial_accumulator_value >= 0, group, index, "initial_accumulator_value", ">= 0");
  check_option(o.eps >= 0, group, index, "eps", ">= 0");
}

void Adagrad::init_state(const ParamGroup& group, const Tensor& param) {
  auto& state = this->state(param);
  if (state.count("sum")) return;
  NoGradGuard no_grad;
  state["step"] = zeros({}, kFloat32);
  state["sum"] = full_like(param, group.option("initial_accumulator_value"));
}

void Adagrad::step() {
  if (step_under_trace(*this)) return;  // Note [Optimizer steps under a trace]
  NoGradGuard no_grad;
  for (const ParamGroup& group : groups_) {
    const AdagradOptions o = group_options(group);
    const double lr = step_lr(group);
    for (const Tensor& param : group.params) {
      const Tensor& grad = param.grad();
      if (!grad.defined()) continue;
      init_state(group, param);  // a group added after construction
      auto& state = this->state(param);
      const double t = increment_step(state.at("step"));
      auto [direction, sign] = descent_direction(grad, param, o.weight_decay, o.maximize);
      const double decayed_lr = lr / (1 + (t - 1) * o.lr_decay);
      const Tensor& sum = state.at("sum");
      sum.addcmul_(direction, direction, 1);
      Tensor std = sum.sqrt();  // the step's one temporary
      std.add_(o.eps);
      param.addcdiv_(direction, std, -decayed_lr * sign);
    }
  }
}

}  // namespace kiln::optim
