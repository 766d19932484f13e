// Per-batch cyclical schedules with PyTorch's formulas: CyclicLR (triangular, triangular2,
// exp_range, custom scale functions) and OneCycleLR (cos/linear, two or three phases). Both can
// cycle the momentum inversely to the rate: the group's "momentum" option, or "beta1" for an
// Adam-like optimizer (PyTorch's betas[0]) when the groups have one.
//
//   kiln::optim::OneCycleLR scheduler(optimizer, {.max_lr = 0.01, .total_steps = 1000});
//   for (auto& batch : loader) { train_batch(optimizer, batch); scheduler.step(); }
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "kiln/optim/lr_scheduler_base.h"

namespace kiln::optim {

struct CyclicLROptions {
  PerGroup base_lr = std::vector<double>{};  // required: the lower rate of the cycle
  PerGroup max_lr = std::vector<double>{};   // required: the upper rate (amplitude max - base)
  int64_t step_size_up = 2000;               // iterations of the increasing half
  std::optional<int64_t> step_size_down;     // of the decreasing half; default step_size_up
  std::string mode = "triangular";           // "triangular", "triangular2" or "exp_range"
  double gamma = 1.0;                        // exp_range: amplitude * gamma^iteration
  // A custom amplitude scale in [0, 1] (replaces mode), of the cycle number (scale_mode "cycle",
  // counting from 1) or of the iteration ("iterations").
  std::function<double(double)> scale_fn;
  std::string scale_mode = "cycle";
  bool cycle_momentum = true;
  PerGroup base_momentum = 0.8;  // momentum at the peak rate
  PerGroup max_momentum = 0.9;   // momentum at the base rate
};

// Cycles each group's rate between base_lr and max_lr (Smith, "Cyclical Learning Rates for
// Training Neural Networks"). The constructor sets every group's rate to base_lr (and its momentum
// or beta1 to max_momentum); step() after each batch.
class CyclicLR final : public LRScheduler {
 public:
  CyclicLR(Optimizer& optimizer, CyclicLROptions options);
  std::string name() const override { return "CyclicLR"; }
  // True when the momentum cycled is "beta1" rather than "momentum".
  bool use_beta1() const { return use_beta1_; }

 protected:
  std::vector<double> get_lr() override;
  void save_state(detail::SchedulerStateWriter& out) const override;
  void load_state(const detail::SchedulerStateReader& in) override;

 private:
  double scale(double x) const;

  std::vector<double> max_lrs_;
  double total_size_;
  double step_ratio_;
  std::string mode_;
  double gamma_;
  std::function<double(double)> custom_scale_fn_;
  std::string scale_mode_;
  bool cycle_momentum_;
  bool use_beta1_ = false;
  std::vector<double> base_momentums_;
  std::vector<double> max_momentums_;
};

struct OneCycleLROptions {
  PerGroup max_lr = std::vector<double>{};  // required: the peak rate
  // The schedule's length: total_steps, or epochs * steps_per_epoch.
  std::optional<int64_t> total_steps;
  std::optional<int64_t> epochs;
  std::optional<int64_t> steps_per_epoch;
  double pct_start = 0.3;               // fraction of the steps spent increasing the rate
  std::string anneal_strategy = "cos";  // "cos" or "linear"
  bool cycle_momentum = true;
  PerGroup base_momentum = 0.85;  // momentum at the peak rate
  PerGroup max_momentum = 0.95;   // momentum at the start and the end
  double div_factor = 25.0;       // initial_lr = max_lr / div_factor
  double final_div_factor = 1e4;  // min_lr = initial_lr / final_div_factor
  // Three phases (up, down to initial_lr, down to min_lr) as in the paper, instead of fastai's two.
  bool three_phase = false;
};

// The 1cycle policy (Smith & Topin, "Super-Convergence"): from initial_lr up to max_lr, then down
// to min_lr, over total_steps steps. Sets each group's "initial_lr", "max_lr", "min_lr" (and
// "max_momentum", "base_momentum") options, which the schedule reads. Stepping more than
// total_steps times is a ValueError.
class OneCycleLR final : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, OneCycleLROptions options);
  std::string name() const override { return "OneCycleLR"; }
  int64_t total_steps() const { return total_steps_; }
  bool use_beta1() const { return use_beta1_; }

 protected:
  std::vector<double> get_lr() override;
  void save_state(detail::SchedulerStateWriter& out) const override;
  void load_state(const detail::SchedulerStateReader& in) override;

 private:
  // One phase anneals from the group option `start_*` to `end_*`, ending at step end_step.
  struct Phase {
    double end_step;
    const char* start_lr;
    const char* end_lr;
    const char* start_momentum;
    const char* end_momentum;
  };
  static std::vector<Phase> make_phases(int64_t total_steps, double pct_start, bool three_phase);
  double anneal(double start, double end, double pct) const;
  void check_phase_length(size_t phase, double length) const;

  int64_t total_steps_;
  double pct_start_;
  bool three_phase_;
  std::vector<Phase> phases_;
  std::string anneal_strategy_;
  bool cycle_momentum_;
  bool use_beta1_ = false;
};

}  // namespace kiln::optim
