// Schedulers made of schedulers: SequentialLR (one after another, switching at milestones) and
// ChainedScheduler (all of them every step). See Note [Chainable learning-rate schedules].
//
//   auto warmup = std::make_shared<kiln::optim::ConstantLR>(optimizer, 0.1, 20);
//   auto decay = std::make_shared<kiln::optim::ExponentialLR>(optimizer, 0.9);
//   kiln::optim::SequentialLR scheduler(optimizer, {warmup, decay}, /*milestones=*/{20});
//   // base lr 0.05: 0.005 for epochs 0-19, then 0.05, 0.045, 0.0405, ...
#pragma once

#include <memory>

#include "kiln/optim/lr_scheduler_base.h"

namespace kiln::optim {

// Runs schedulers[0] until epoch milestones[0], then schedulers[1] until milestones[1], and so on.
// The constructor resets every group to its "initial_lr", undoes the initial step of all the
// schedulers and redoes the first one's. At a milestone the next scheduler starts at epoch 0 in its
// closed form, where it has one (so ExponentialLR restarts from its base rate), and steps from
// there. The schedulers must all act on `optimizer`.
class SequentialLR final : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);
  void step() override;
  std::string name() const override { return "SequentialLR"; }
  const std::vector<std::shared_ptr<LRScheduler>>& schedulers() const { return schedulers_; }
  const std::vector<int64_t>& milestones() const { return milestones_; }

 protected:
  std::vector<double> get_lr() override { return group_lrs(); }
  void undo_initial_step() override;
  // "milestones", and each scheduler's state under "schedulers.<i>.".
  void save_state(detail::SchedulerStateWriter& out) const override;
  void load_state(const detail::SchedulerStateReader& in) override;

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

// Steps every scheduler, in order, at each step(): their chainable forms multiply (ConstantLR(0.1,
// 4) with ExponentialLR(0.9) gives 0.1 * 0.9^epoch * base until epoch 4, then 0.9^epoch * base).
// last_epoch() counts its steps.
class ChainedScheduler final : public LRScheduler {
 public:
  explicit ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers);
  void step() override;
  std::string name() const override { return "ChainedScheduler"; }
  const std::vector<std::shared_ptr<LRScheduler>>& schedulers() const { return schedulers_; }

 protected:
  std::vector<double> get_lr() override { return group_lrs(); }
  void undo_initial_step() override;
  // Each scheduler's state under "schedulers.<i>.".
  void save_state(detail::SchedulerStateWriter& out) const override;
  void load_state(const detail::SchedulerStateReader& in) override;

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
};

}  // namespace kiln::optim
