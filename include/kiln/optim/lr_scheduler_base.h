// LRScheduler: the base of Kiln's learning-rate schedulers (PyTorch's torch.optim.lr_scheduler).
// A scheduler adjusts the learning rate of every parameter group of one Optimizer each time its
// step() is called, after optimizer.step():
//
//   kiln::optim::StepLR scheduler(optimizer, /*step_size=*/30, /*gamma=*/0.1);
//   for (int epoch = 0; epoch < 100; ++epoch) {
//     train(optimizer);            // optimizer.step() per batch
//     scheduler.step();
//   }
//
// The concrete schedulers are in lr_scheduler_decay.h, lr_scheduler_cyclic.h,
// lr_scheduler_plateau.h (ReduceLROnPlateau, which steps on a metric) and
// lr_scheduler_composite.h (SequentialLR, ChainedScheduler); lr_scheduler.h includes them all.
//
// Note [Chainable learning-rate schedules]
// As in PyTorch, most schedulers have two forms of their formula:
// - the chainable (recursive) form, get_lr(): the new rate is computed from the group's *current*
//   rate (StepLR multiplies it by gamma at each step_size boundary, CosineAnnealingLR rescales it
//   by the ratio of consecutive cosine values). step() uses this form, so two schedulers acting on
//   one optimizer compose multiplicatively: StepLR and ExponentialLR stepped together give
//   base_lr * gamma_step^(epoch / step_size) * gamma_exp^epoch. ChainedScheduler only packages
//   that pattern.
// - the closed form, closed_form_lr(): the rate as a function of last_epoch and the base rates
//   alone. It is used when a scheduler is moved to an explicit epoch: SequentialLR switching to the
//   next scheduler at a milestone restarts it at epoch 0 in closed form (ExponentialLR then gives
//   its base rate, not the previous scheduler's last rate times gamma), and the recursive form
//   continues from there. Schedulers without a closed form (LambdaLR, whose formula is already
//   closed; MultiplicativeLR, CyclicLR, OneCycleLR, CosineAnnealingWarmRestarts) use get_lr().
// The constructor records each group's "initial_lr" option (unless a scheduler built earlier
// already did) as base_lrs() and performs the initial step to epoch 0, as PyTorch's constructor
// does; that step is marked is_initial(), which the recursive forms use to leave the rate as it is
// (ConstantLR and LinearLR apply their starting factor there). Rates are written with
// Optimizer::set_lr, so a tensor learning rate (Note [Tensor learning rate]) follows the schedule.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/optim/optimizer.h"
#include "kiln/state_dict.h"

namespace kiln::optim {

class SequentialLR;
class ChainedScheduler;
namespace detail {
class SchedulerStateWriter;
class SchedulerStateReader;
}  // namespace detail

// A hyperparameter given once for every parameter group or once per group (PyTorch's "float or
// list"): `.max_lr = 0.1` or `.max_lr = {0.1, 0.2}`.
class PerGroup {
 public:
  PerGroup(double value) : values_{value}, broadcast_(true) {}  // NOLINT: implicit by design
  PerGroup(std::vector<double> values) : values_(std::move(values)) {}  // NOLINT
  PerGroup(std::initializer_list<double> values) : values_(values) {}   // NOLINT

  // One value per group; ValueError naming `scheduler` and `argument` if a list has the wrong
  // length (or is empty: a required argument that was not given).
  std::vector<double> expand(size_t groups, std::string_view scheduler,
                             std::string_view argument) const;
  // The value, when one was given for every group.
  std::optional<double> broadcast_value() const {
    return broadcast_ ? std::optional<double>(values_.front()) : std::nullopt;
  }

 private:
  std::vector<double> values_;
  bool broadcast_ = false;
};

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // One scheduling step (an epoch, or a batch for CyclicLR/OneCycleLR): last_epoch() + 1.
  virtual void step();
  // "StepLR", "CosineAnnealingLR", ...: PyTorch's class name; also the state's "type".
  virtual std::string name() const = 0;

  // The rate of every parameter group after the last step (or the constructor's initial step).
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  // Each group's "initial_lr": the rates the closed forms start from.
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() const { return *optimizer_; }

  // values: "type" (name()), "last_epoch", "base_lrs", "last_lr" and the scheduler's own
  // hyperparameters and counters under PyTorch's attribute names; lists as JSON arrays. Functions
  // (LambdaLR's lambdas, a custom CyclicLR scale_fn) are not saved: build the scheduler with the
  // same ones. Save and load the optimizer's state too: the recursive forms continue from its
  // current rates.
  StateDict state_dict() const;
  // Restores a state_dict() of the same scheduler type; the hyperparameters saved in it replace
  // the constructor's, as in PyTorch. ValueError naming the scheduler and the entry on a dict from
  // another scheduler type, a missing or malformed entry, or a different number of parameter
  // groups; the scheduler is unchanged then.
  void load_state_dict(const StateDict& dict);

 protected:
  enum class InitialLrs { kRecord, kDeferred };
  // kRecord: record "initial_lr" now. kDeferred: the subclass sets the groups up first (CyclicLR
  // writes its base_lr, OneCycleLR its initial_lr) and then calls record_initial_lrs().
  explicit LRScheduler(Optimizer& optimizer, InitialLrs initial_lrs = InitialLrs::kRecord);

  // Sets each group's "initial_lr" option unless present, and base_lrs() from them.
  void record_initial_lrs();
  // The constructor's step to epoch 0 (see Note [Chainable learning-rate schedules]). Each
  // concrete scheduler's constructor calls it last: a base constructor cannot call the subclass's
  // get_lr().
  void initial_step();
  bool is_initial() const { return is_initial_; }

  // The chainable form; called with last_epoch() already advanced.
  virtual std::vector<double> get_lr() = 0;
  // The closed form, for schedulers that have one.
  virtual std::optional<std::vector<double>> closed_form_lr() const { return std::nullopt; }
  // Advances last_epoch (or sets it to `epoch`, then preferring the closed form) and applies the
  // new rates. Leaves last_epoch unchanged if computing the rates throws.
  void update_lr(std::optional<int64_t> epoch = std::nullopt);
  // Writes rates into the groups (the first rates.size() of them) and records get_last_lr().
  void apply_lrs(const std::vector<double>& rates);
  // SequentialLR's constructor "undoes" the initial step of the schedulers it sequences.
  virtual void undo_initial_step() { --last_epoch_; }

  // The scheduler's own entries of state_dict()/load_state_dict(). load_state must read (and
  // validate) everything before changing anything, so a bad dict leaves the scheduler unchanged.
  virtual void save_state(detail::SchedulerStateWriter& out) const {}
  virtual void load_state(const detail::SchedulerStateReader& in) {}
  void save_to(StateDict& dict, const std::string& prefix) const;
  void load_from(const StateDict& dict, const std::string& prefix);

  size_t num_groups() const { return optimizer_->param_groups().size(); }
  // Every group's current rate.
  std::vector<double> group_lrs() const;

  Optimizer* optimizer_;
  int64_t last_epoch_ = -1;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;

 private:
  friend class SequentialLR;
  friend class ChainedScheduler;
  bool is_initial_ = false;
};

}  // namespace kiln::optim
