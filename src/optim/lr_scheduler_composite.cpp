// SequentialLR and ChainedScheduler, with PyTorch's semantics (torch/optim/lr_scheduler.py),
// including SequentialLR's undo/redo of the initial steps and its closed-form restart at each
// milestone. See Note [Chainable learning-rate schedules].
#include <algorithm>

#include <fmt/ranges.h>

#include "kiln/error.h"
#include "kiln/optim/lr_scheduler_composite.h"
#include "src/optim/lr_scheduler_state.h"
#include "src/optim/traced_step.h"

namespace kiln::optim {
namespace {

using Schedulers = std::vector<std::shared_ptr<LRScheduler>>;

// The optimizer all of `schedulers` act on; ValueError naming `composite` otherwise.
Optimizer& common_optimizer(const Schedulers& schedulers, Optimizer* expected,
                            const char* composite) {
  KILN_CHECK(!schedulers.empty(), ValueError, "{}: got no schedulers; pass at least one",
             composite);
  for (size_t i = 0; i < schedulers.size(); ++i)
    KILN_CHECK(schedulers[i] != nullptr, ValueError, "{}: scheduler {} is null", composite, i);
  Optimizer& optimizer = expected ? *expected : schedulers.front()->optimizer();
  for (size_t i = 0; i < schedulers.size(); ++i)
    KILN_CHECK(&schedulers[i]->optimizer() == &optimizer, ValueError,
               "{}: scheduler {} ({}) acts on a different optimizer; all schedulers must belong "
               "to the same optimizer",
               composite, i, schedulers[i]->name());
  return optimizer;
}

std::string child_prefix(const std::string& prefix, size_t i) {
  return prefix + "schedulers." + std::to_string(i) + ".";
}

}  // namespace

// ---- SequentialLR -------------------------------------------------------------------------------

SequentialLR::SequentialLR(Optimizer& optimizer, Schedulers schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(common_optimizer(schedulers, &optimizer, "SequentialLR"), InitialLrs::kDeferred),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  KILN_CHECK(milestones_.size() + 1 == schedulers_.size(), ValueError,
             "SequentialLR: expects one milestone fewer than schedulers, but got {} schedulers "
             "and {} milestones",
             schedulers_.size(), milestones_.size());
  KILN_CHECK(std::is_sorted(milestones_.begin(), milestones_.end()), ValueError,
             "SequentialLR: milestones must be in increasing order, got [{}]",
             fmt::join(milestones_, ", "));
  // The schedulers' constructors set every group's initial_lr.
  record_initial_lrs();
  last_epoch_ = 0;
  for (size_t g = 0; g < num_groups(); ++g) optimizer.set_lr(g, base_lrs_[g]);
  for (auto& scheduler : schedulers_) scheduler->undo_initial_step();
  schedulers_.front()->initial_step();
  last_lr_ = schedulers_.front()->get_last_lr();
}

void SequentialLR::step() {
  if (defer_to_effect("scheduler.step()", [this] { step(); })) return;
  const int64_t epoch = last_epoch_ + 1;
  const size_t index =
      std::upper_bound(milestones_.begin(), milestones_.end(), epoch) - milestones_.begin();
  LRScheduler& scheduler = *schedulers_[index];
  if (index > 0 && milestones_[index - 1] == epoch) {
    scheduler.update_lr(0);
  } else {
    scheduler.step();
  }
  last_epoch_ = epoch;
  last_lr_ = scheduler.get_last_lr();
}

void SequentialLR::undo_initial_step() {
  for (auto& scheduler : schedulers_) scheduler->undo_initial_step();
}

namespace {

void save_children(const Schedulers& schedulers, detail::SchedulerStateWriter& out) {
  out.put("num_schedulers", static_cast<int64_t>(schedulers.size()));
  for (size_t i = 0; i < schedulers.size(); ++i) {
    StateDict child = schedulers[i]->state_dict();
    for (auto& [key, value] : child.values)
      out.dict().values[child_prefix(out.prefix(), i) + key] = value;
  }
}

}  // namespace

void SequentialLR::save_state(detail::SchedulerStateWriter& out) const {
  out.put("milestones", milestones_);
  save_children(schedulers_, out);
}

void SequentialLR::load_state(const detail::SchedulerStateReader& in) {
  std::vector<int64_t> milestones = in.integers("milestones");
  int64_t count = in.integer("num_schedulers");
  KILN_CHECK(count == static_cast<int64_t>(schedulers_.size()) &&
                 milestones.size() + 1 == schedulers_.size(),
             ValueError,
             "SequentialLR.load_state_dict: the state has {} schedulers and {} milestones, but "
             "this SequentialLR has {} schedulers",
             count, milestones.size(), schedulers_.size());
  // Load every scheduler or none: restore the ones already loaded if a later one fails.
  std::vector<StateDict> backups;
  for (auto& scheduler : schedulers_) backups.push_back(scheduler->state_dict());
  try {
    for (size_t i = 0; i < schedulers_.size(); ++i)
      schedulers_[i]->load_from(in.dict(), child_prefix(in.prefix(), i));
  } catch (...) {
    for (size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->load_state_dict(backups[i]);
    throw;
  }
  milestones_ = std::move(milestones);
}

// ---- ChainedScheduler ---------------------------------------------------------------------------

ChainedScheduler::ChainedScheduler(Schedulers schedulers)
    : LRScheduler(common_optimizer(schedulers, nullptr, "ChainedScheduler"), InitialLrs::kDeferred),
      schedulers_(std::move(schedulers)) {
  record_initial_lrs();
  last_epoch_ = 0;
  last_lr_ = group_lrs();
}

void ChainedScheduler::step() {
  if (defer_to_effect("scheduler.step()", [this] { step(); })) return;
  for (auto& scheduler : schedulers_) scheduler->step();
  last_epoch_ += 1;
  last_lr_ = group_lrs();
}

void ChainedScheduler::undo_initial_step() {
  for (auto& scheduler : schedulers_) scheduler->undo_initial_step();
}

void ChainedScheduler::save_state(detail::SchedulerStateWriter& out) const {
  save_children(schedulers_, out);
}

void ChainedScheduler::load_state(const detail::SchedulerStateReader& in) {
  int64_t count = in.integer("num_schedulers");
  KILN_CHECK(count == static_cast<int64_t>(schedulers_.size()), ValueError,
             "ChainedScheduler.load_state_dict: the state has {} schedulers, but this "
             "ChainedScheduler has {}",
             count, schedulers_.size());
  std::vector<StateDict> backups;
  for (auto& scheduler : schedulers_) backups.push_back(scheduler->state_dict());
  try {
    for (size_t i = 0; i < schedulers_.size(); ++i)
      schedulers_[i]->load_from(in.dict(), child_prefix(in.prefix(), i));
  } catch (...) {
    for (size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->load_state_dict(backups[i]);
    throw;
  }
}

}  // namespace kiln::optim
