#include "kiln/optim/adamw.h"

#include "kiln/autograd.h"
#include "src/optim/adam_update.h"
#include "src/optim/traced_step.h"

namespace kiln::optim {

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options)
    : AdamW(single_group(std::move(params)), options) {}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions defaults)
    : Optimizer(std::move(groups), defaults.lr, adam_option_map(defaults)) {
  check_groups();
}

AdamWOptions AdamW::group_options(const ParamGroup& group) {
  return adam_group_options<AdamWOptions>(group);
}

void AdamW::check_group(const ParamGroup& group, size_t index) const {
  Optimizer::check_group(group, index);
  check_adam_options(group_options(group), [&](bool ok, const char* option, const char* need) {
    check_option(ok, group, index, option, need);
  });
}

void AdamW::step() {
  if (step_under_trace(*this)) return;  // Note [Optimizer steps under a trace]
  NoGradGuard no_grad;
  for (const ParamGroup& group : groups_) {
    const AdamHyperparameters h =
        adam_hyperparameters(group_options(group), step_lr(group), /*decoupled=*/true);
    for (const Tensor& param : group.params) {
      if (param.grad().defined()) adam_update(state(param), param, param.grad(), h);
    }
  }
}

}  // namespace kiln::optim
