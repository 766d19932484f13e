#include "kiln/torch/optim.h"

#include <optional>
#include <string>
#include <tuple>

namespace torch::optim {

kiln::optim::ParamGroup OptimizerParamGroup::kiln_group() const {
  kiln::optim::ParamGroup group{.params = params_};
  if (options_) options_->write_to(group);
  return group;
}

OptimizerOptions& OptimizerParamGroup::options() {
  KILN_CHECK(options_ != nullptr, ValueError,
             "OptimizerParamGroup::options(): this group was built without options; a running "
             "optimizer's param_groups() have them");
  return *options_;
}

const OptimizerOptions& OptimizerParamGroup::options() const {
  return const_cast<OptimizerParamGroup*>(this)->options();
}

std::vector<kiln::optim::ParamGroup> kiln_groups(const std::vector<OptimizerParamGroup>& groups) {
  std::vector<kiln::optim::ParamGroup> out;
  out.reserve(groups.size());
  for (const OptimizerParamGroup& g : groups) out.push_back(g.kiln_group());
  return out;
}

// Kiln's option names are PyTorch's (kiln/optim/optimizer.h ParamGroup::options); betas are
// stored as beta1 and beta2.
void SGDOptions::write_to(kiln::optim::ParamGroup& group) const {
  group.lr = lr_;
  group.options = {{"momentum", momentum_},
                   {"dampening", dampening_},
                   {"weight_decay", weight_decay_},
                   {"nesterov", nesterov_ ? 1.0 : 0.0}};
}

void SGDOptions::read_from(const kiln::optim::ParamGroup& group) {
  lr_ = kiln::optim::current_lr(group);
  momentum_ = group.option("momentum");
  dampening_ = group.option("dampening");
  weight_decay_ = group.option("weight_decay");
  nesterov_ = group.option("nesterov") != 0;
}

namespace {
// AdamOptions and AdamWOptions differ only in weight_decay's default.
template <typename Options>
void write_adam_options(const Options& o, kiln::optim::ParamGroup& group) {
  group.lr = o.lr();
  group.options = {{"beta1", std::get<0>(o.betas())},
                   {"beta2", std::get<1>(o.betas())},
                   {"eps", o.eps()},
                   {"weight_decay", o.weight_decay()},
                   {"amsgrad", o.amsgrad() ? 1.0 : 0.0}};
}
}  // namespace

namespace {
template <typename Options>
void read_adam_options(Options& o, const kiln::optim::ParamGroup& group) {
  o.lr(kiln::optim::current_lr(group));
  o.betas(std::make_tuple(group.option("beta1"), group.option("beta2")));
  o.eps(group.option("eps"));
  o.weight_decay(group.option("weight_decay"));
  o.amsgrad(group.option("amsgrad") != 0);
}
}  // namespace

void AdamOptions::read_from(const kiln::optim::ParamGroup& group) {
  read_adam_options(*this, group);
}

void AdamWOptions::read_from(const kiln::optim::ParamGroup& group) {
  read_adam_options(*this, group);
}

void AdamOptions::write_to(kiln::optim::ParamGroup& group) const {
  write_adam_options(*this, group);
}

void AdamWOptions::write_to(kiln::optim::ParamGroup& group) const {
  write_adam_options(*this, group);
}

void RMSpropOptions::write_to(kiln::optim::ParamGroup& group) const {
  group.lr = lr_;
  group.options = {{"alpha", alpha_},
                   {"eps", eps_},
                   {"weight_decay", weight_decay_},
                   {"momentum", momentum_},
                   {"centered", centered_ ? 1.0 : 0.0}};
}

void RMSpropOptions::read_from(const kiln::optim::ParamGroup& group) {
  lr_ = kiln::optim::current_lr(group);
  alpha_ = group.option("alpha");
  eps_ = group.option("eps");
  weight_decay_ = group.option("weight_decay");
  momentum_ = group.option("momentum");
  centered_ = group.option("centered") != 0;
}

void AdagradOptions::write_to(kiln::optim::ParamGroup& group) const {
  group.lr = lr_;
  group.options = {{"lr_decay", lr_decay_},
                   {"weight_decay", weight_decay_},
                   {"initial_accumulator_value", initial_accumulator_value_},
                   {"eps", eps_}};
}

void AdagradOptions::read_from(const kiln::optim::ParamGroup& group) {
  lr_ = kiln::optim::current_lr(group);
  lr_decay_ = group.option("lr_decay");
  weight_decay_ = group.option("weight_decay");
  initial_accumulator_value_ = group.option("initial_accumulator_value");
  eps_ = group.option("eps");
}

void LBFGSOptions::write_to(kiln::optim::ParamGroup& group) const {
  const kiln::optim::LBFGSOptions o = kiln_options();
  KILN_CHECK(o.line_search_fn.empty() || o.line_search_fn == "strong_wolfe", ValueError,
             "LBFGS: line_search_fn must be \"strong_wolfe\" or std::nullopt, got \"{}\"",
             o.line_search_fn);
  group.lr = lr_;
  group.options = {{"max_iter", static_cast<double>(o.max_iter)},
                   {"max_eval", static_cast<double>(o.max_eval)},
                   {"tolerance_grad", o.tolerance_grad},
                   {"tolerance_change", o.tolerance_change},
                   {"history_size", static_cast<double>(o.history_size)},
                   {"line_search_fn", o.line_search_fn.empty() ? 0.0 : 1.0}};
}

void LBFGSOptions::read_from(const kiln::optim::ParamGroup& group) {
  lr_ = kiln::optim::current_lr(group);
  max_iter_ = static_cast<int64_t>(group.option("max_iter"));
  const auto max_eval = static_cast<int64_t>(group.option("max_eval"));
  max_eval_ = max_eval < 0 ? std::nullopt : std::optional<int64_t>(max_eval);
  tolerance_grad_ = group.option("tolerance_grad");
  tolerance_change_ = group.option("tolerance_change");
  history_size_ = static_cast<int64_t>(group.option("history_size"));
  line_search_fn_ = group.option("line_search_fn") != 0 ? std::optional<std::string>("strong_wolfe")
                                                        : std::nullopt;
}

}  // namespace torch::optim
