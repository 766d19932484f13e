// Learning-rate decays driven by the epoch count, with PyTorch's formulas: LambdaLR,
// MultiplicativeLR, StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR, PolynomialLR,
// CosineAnnealingLR, CosineAnnealingWarmRestarts. Rates are per parameter group, each starting
// from the group's "initial_lr" (base_lrs()). See Note [Chainable learning-rate schedules] for
// which form step() uses and how schedulers compose.
#pragma once

#include <functional>

#include "kiln/optim/lr_scheduler_base.h"

namespace kiln::optim {

// A function of the epoch (last_epoch) giving a multiplicative factor.
using LrLambda = std::function<double(int64_t epoch)>;

// lr = base_lr * lr_lambda(epoch); one function for all groups or one per group.
class LambdaLR final : public LRScheduler {
 public:
  LambdaLR(Optimizer& optimizer, LrLambda lr_lambda);
  LambdaLR(Optimizer& optimizer, std::vector<LrLambda> lr_lambdas);
  std::string name() const override { return "LambdaLR"; }

 protected:
  std::vector<double> get_lr() override;

 private:
  std::vector<LrLambda> lr_lambdas_;
};

// lr = previous lr * lr_lambda(epoch) for epoch >= 1 (the initial step leaves the rate).
class MultiplicativeLR final : public LRScheduler {
 public:
  MultiplicativeLR(Optimizer& optimizer, LrLambda lr_lambda);
  MultiplicativeLR(Optimizer& optimizer, std::vector<LrLambda> lr_lambdas);
  std::string name() const override { return "MultiplicativeLR"; }

 protected:
  std::vector<double> get_lr() override;

 private:
  std::vector<LrLambda> lr_lambdas_;
};

// lr = base_lr * gamma^(epoch / step_size) (integer division).
class StepLR final : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
  std::string name() const override { return "StepLR"; }

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void save_state(detail::SchedulerStateWriter& out) const override;
  void load_state(const detail::SchedulerStateReader& in) override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr = base_lr * gamma^(number of milestones <= epoch); a milestone listed twice counts twice.
class MultiStepLR final : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);
  std::string name() const override { return "MultiStepLR"; }

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void save_state(detail::SchedulerStateWriter& out) const override;
  void load_state(const detail::SchedulerStateReader& in) override;

 private:
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

// lr = base_lr * factor until epoch total_iters, then base_lr.
class ConstantLR final : public LRScheduler {
 public:
  explicit ConstantLR(Optimizer& optimizer, double factor = 1.0 / 3, int64_t total_iters = 5);
  std::string name() const override { return "ConstantLR"; }

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void save_state(detail::SchedulerStateWriter& out) const override;
  void load_state(const detail::SchedulerStateReader& in) override;

 private:
  double factor_;
  int64_t total_iters_;
};

// The factor moves linearly from start_factor to end_factor over total_iters epochs:
// lr = base_lr * (start + (end - start) * min(epoch, total_iters) / total_iters).
class LinearLR final : public LRScheduler {
 public:
  explicit LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0,
                    int64_t total_iters = 5);
  std::string name() const override { return "LinearLR"; }

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void save_state(detail::SchedulerStateWriter& out) const override;
  void load_state(const detail::SchedulerStateReader& in) override;

 private:
  double start_factor_;
  double end_factor_;
  int64_t total_iters_;
};

// lr = base_lr * gamma^epoch.
class ExponentialLR final : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);
  std::string name() const override { return "ExponentialLR"; }

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void save_state(detail::SchedulerStateWriter& out) const override;
  void load_state(const detail::SchedulerStateReader& in) override;

 private:
  double gamma_;
};

// lr = base_lr * (1 - min(epoch, total_iters) / total_iters)^power: zero from total_iters on.
class PolynomialLR final : public LRScheduler {
 public:
  explicit PolynomialLR(Optimizer& optimizer, int64_t total_iters = 5, double power = 1.0);
  std::string name() const override { return "PolynomialLR"; }

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void save_state(detail::SchedulerStateWriter& out) const override;
  void load_state(const detail::SchedulerStateReader& in) override;

 private:
  int64_t total_iters_;
  double power_;
};

// lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / t_max)) / 2 (closed form). step()
// uses PyTorch's recursive form, which past t_max climbs back up instead of restarting.
class CosineAnnealingLR final : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min = 0.0);
  std::string name() const override { return "CosineAnnealingLR"; }

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;
  void save_state(detail::SchedulerStateWriter& out) const override;
  void load_state(const detail::SchedulerStateReader& in) override;

 private:
  int64_t t_max_;
  double eta_min_;
};

// SGDR: lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * t_cur / t_i)) / 2, where t_cur counts
// epochs since the last restart and the period t_i starts at t_0 and is multiplied by t_mult at
// each restart.
class CosineAnnealingWarmRestarts final : public LRScheduler {
 public:
  CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t t_0, int64_t t_mult = 1,
                              double eta_min = 0.0);
  std::string name() const override { return "CosineAnnealingWarmRestarts"; }

  // The next epoch.
  void step() override;
  // Moves to a (fractional) epoch, e.g. step(epoch + batch / batches_per_epoch) after each batch;
  // last_epoch() becomes floor(epoch). ValueError if epoch < 0.
  void step(double epoch);

  double t_cur() const { return t_cur_; }
  int64_t t_i() const { return t_i_; }

 protected:
  std::vector<double> get_lr() override;
  void save_state(detail::SchedulerStateWriter& out) const override;
  void load_state(const detail::SchedulerStateReader& in) override;

 private:
  int64_t t_0_;
  int64_t t_i_;
  int64_t t_mult_;
  double eta_min_;
  double t_cur_;
};

}  // namespace kiln::optim
