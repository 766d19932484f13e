// LRScheduler: initial rates, the initial step, update_lr and the common state entries.
// See Note [Chainable learning-rate schedules] in include/kiln/optim/lr_scheduler_base.h.
#include <algorithm>

#include "kiln/error.h"
#include "kiln/optim/lr_scheduler_base.h"
#include "src/optim/lr_scheduler_state.h"
#include "src/optim/traced_step.h"

namespace kiln::optim {

std::vector<double> PerGroup::expand(size_t groups, std::string_view scheduler,
                                     std::string_view argument) const {
  KILN_CHECK(!values_.empty(), ValueError, "{}: {} is required (one value, or one per group)",
             scheduler, argument);
  if (broadcast_) return std::vector<double>(groups, values_.front());
  KILN_CHECK(values_.size() == groups, ValueError,
             "{}: {} has {} values but the optimizer has {} parameter groups; pass one value per "
             "group, or a single value for all of them",
             scheduler, argument, values_.size(), groups);
  return values_;
}

LRScheduler::LRScheduler(Optimizer& optimizer, InitialLrs initial_lrs) : optimizer_(&optimizer) {
  if (initial_lrs == InitialLrs::kRecord) record_initial_lrs();
}

void LRScheduler::record_initial_lrs() {
  base_lrs_.clear();
  for (ParamGroup& group : optimizer_->param_groups()) {
    auto [it, inserted] = group.options.try_emplace("initial_lr", group.lr);
    base_lrs_.push_back(it->second);
  }
}

void LRScheduler::initial_step() {
  is_initial_ = true;
  try {
    step();
  } catch (...) {
    is_initial_ = false;
    throw;
  }
  is_initial_ = false;
}

void LRScheduler::step() {
  // Inside kiln::compile the scheduler steps as an effect (Note [Optimizer steps under a trace]).
  if (defer_to_effect("scheduler.step()", [this] { step(); })) return;
  update_lr();
}

void LRScheduler::update_lr(std::optional<int64_t> epoch) {
  const int64_t previous = last_epoch_;
  std::vector<double> rates;
  try {
    if (!epoch) {
      ++last_epoch_;
      rates = get_lr();
    } else {
      last_epoch_ = *epoch;
      std::optional<std::vector<double>> closed = closed_form_lr();
      rates = closed ? std::move(*closed) : get_lr();
    }
  } catch (...) {
    last_epoch_ = previous;
    throw;
  }
  apply_lrs(rates);
}

void LRScheduler::apply_lrs(const std::vector<double>& rates) {
  // Like PyTorch's zip(param_groups, values): groups beyond the rates keep theirs.
  size_t n = std::min(rates.size(), num_groups());
  for (size_t g = 0; g < n; ++g) optimizer_->set_lr(g, rates[g]);
  last_lr_ = group_lrs();
}

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> rates;
  for (const ParamGroup& group : optimizer_->param_groups()) rates.push_back(group.lr);
  return rates;
}

StateDict LRScheduler::state_dict() const {
  StateDict dict;
  save_to(dict, "");
  return dict;
}

void LRScheduler::load_state_dict(const StateDict& dict) { load_from(dict, ""); }

void LRScheduler::save_to(StateDict& dict, const std::string& prefix) const {
  detail::SchedulerStateWriter out(dict, prefix);
  out.put("type", name());
  out.put("last_epoch", last_epoch_);
  out.put("base_lrs", base_lrs_);
  out.put("last_lr", last_lr_);
  save_state(out);
}

void LRScheduler::load_from(const StateDict& dict, const std::string& prefix) {
  detail::SchedulerStateReader in(dict, prefix, name());
  const std::string type = in.text("type");
  KILN_CHECK(type == name(), ValueError,
             "{}.load_state_dict: the state ('{}type') is from a {}, not a {}; load it into the "
             "scheduler that saved it",
             name(), prefix, type, name());
  int64_t last_epoch = in.integer("last_epoch");
  std::vector<double> base_lrs = in.reals("base_lrs", num_groups());
  std::vector<double> last_lr = in.reals("last_lr", num_groups());
  load_state(in);  // validates its entries before changing anything
  last_epoch_ = last_epoch;
  base_lrs_ = std::move(base_lrs);
  last_lr_ = std::move(last_lr);
}

}  // namespace kiln::optim
