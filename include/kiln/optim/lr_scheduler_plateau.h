// ReduceLROnPlateau: lowers the learning rate when a metric stops improving, with PyTorch's rules.
//
//   kiln::optim::ReduceLROnPlateau scheduler(optimizer, {.mode = "min", .patience = 5});
//   for (int epoch = 0; epoch < epochs; ++epoch) {
//     train(optimizer);
//     scheduler.step(validation_loss());
//   }
//
// It steps on a metric, so it is not an LRScheduler (whose step() takes none) and cannot be put in
// a SequentialLR or ChainedScheduler, as in PyTorch.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/optim/lr_scheduler_base.h"

namespace kiln::optim {

struct ReduceLROnPlateauOptions {
  std::string mode = "min";  // "min": the metric should fall (a loss); "max": rise (an accuracy)
  double factor = 0.1;       // new lr = lr * factor; in [0, 1)
  int64_t patience = 10;     // epochs without improvement tolerated before reducing
  double threshold = 1e-4;   // how much better counts as an improvement
  // "rel": better than best * (1 - threshold) ("min") or best * (1 + threshold) ("max");
  // "abs": better than best - threshold or best + threshold.
  std::string threshold_mode = "rel";
  int64_t cooldown = 0;   // epochs after a reduction during which bad epochs are not counted
  PerGroup min_lr = 0.0;  // the lowest rate, for all groups or per group
  double eps = 1e-8;      // reductions smaller than eps are skipped
};

class ReduceLROnPlateau {
 public:
  explicit ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions options = {});
  ReduceLROnPlateau(const ReduceLROnPlateau&) = delete;
  ReduceLROnPlateau& operator=(const ReduceLROnPlateau&) = delete;

  // One epoch with its metric (e.g. the validation loss). A NaN metric counts as no improvement.
  void step(double metric);
  std::string name() const { return "ReduceLROnPlateau"; }

  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  int64_t cooldown_counter() const { return cooldown_counter_; }
  bool in_cooldown() const { return cooldown_counter_ > 0; }
  const std::vector<double>& min_lrs() const { return min_lrs_; }
  Optimizer& optimizer() const { return *optimizer_; }

  // values: "type", "mode", "factor", "patience", "threshold", "threshold_mode", "cooldown",
  // "cooldown_counter", "min_lrs", "eps", "best", "num_bad_epochs", "last_epoch", "last_lr".
  StateDict state_dict() const;
  // ValueError naming the entry on a dict from another scheduler type or a malformed entry; the
  // scheduler is unchanged then.
  void load_state_dict(const StateDict& dict);

 private:
  bool is_better(double a, double best) const;
  void reduce_lr();

  Optimizer* optimizer_;
  std::string mode_;
  double factor_;
  int64_t patience_;
  double threshold_;
  std::string threshold_mode_;
  int64_t cooldown_;
  int64_t cooldown_counter_ = 0;
  std::vector<double> min_lrs_;
  // The min_lr given for all groups, applied to groups added later (PyTorch's default_min_lr).
  std::optional<double> default_min_lr_;
  double eps_;
  double best_;
  int64_t num_bad_epochs_ = 0;
  int64_t last_epoch_ = 0;
  std::vector<double> last_lr_;
};

}  // namespace kiln::optim
