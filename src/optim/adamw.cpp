#include "kiln/optim/adamw.h"

#include "kiln/autograd.h"
#include "src/optim/adam_update.h"

namespace kiln::optim {

namespace {

std::map<std::string, double> option_map(const AdamWOptions& o) {
  return {{"beta1", o.betas.first},
          {"beta2", o.betas.second},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"amsgrad", o.amsgrad ? 1.0 : 0.0},
          {"maximize", o.maximize ? 1.0 : 0.0}};
}

}  // namespace

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options)
    : AdamW(single_group(std::move(params)), options) {}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions defaults)
    : Optimizer(std::move(groups), defaults.lr, option_map(defaults)) {
  check_groups();
}

AdamWOptions AdamW::group_options(const ParamGroup& group) {
  return {.lr = group.lr,
          .betas = {group.option("beta1"), group.option("beta2")},
          .eps = group.option("eps"),
          .weight_decay = group.option("weight_decay"),
          .amsgrad = group.option("amsgrad") != 0,
          .maximize = group.option("maximize") != 0};
}

void AdamW::check_group(const ParamGroup& group, size_t index) const {
  Optimizer::check_group(group, index);
  AdamWOptions o = group_options(group);
  check_option(o.betas.first >= 0 && o.betas.first < 1, group, index, "beta1", "in [0, 1)");
  check_option(o.betas.second >= 0 && o.betas.second < 1, group, index, "beta2", "in [0, 1)");
  check_option(o.eps >= 0, group, index, "eps", ">= 0");
  check_option(o.weight_decay >= 0, group, index, "weight_decay", ">= 0");
}

void AdamW::step() {
  NoGradGuard no_grad;
  for (const ParamGroup& group : groups_) {
    const AdamWOptions o = group_options(group);
    const AdamHyperparameters h{.lr = step_lr(group),
                                .beta1 = o.betas.first,
                                .beta2 = o.betas.second,
                                .eps = o.eps,
                                .weight_decay = o.weight_decay,
                                .amsgrad = o.amsgrad,
                                .maximize = o.maximize,
                                .decoupled_weight_decay = true};
    for (const Tensor& param : group.params) {
      if (param.grad().defined()) adam_update(state(param), param, param.grad(), h);
    }
  }
}

}  // namespace kiln::optim
