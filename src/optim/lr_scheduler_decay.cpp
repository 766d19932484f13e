// The epoch-driven decays. Each get_lr() is PyTorch's chainable form and each closed_form_lr()
// its closed form, term for term in PyTorch's order of operations so the rates match to the last
// bits. See Note [Chainable learning-rate schedules].
#include <algorithm>
#include <cmath>
#include <numbers>

#include "kiln/error.h"
#include "kiln/optim/lr_scheduler_decay.h"
#include "src/optim/lr_scheduler_state.h"
#include "src/optim/traced_step.h"

namespace kiln::optim {
namespace {

constexpr double kPi = std::numbers::pi;

// Python's a // b for b > 0.
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

void check_gamma(double gamma, const char* scheduler) {
  KILN_CHECK(std::isfinite(gamma) && gamma > 0, ValueError,
             "{}: gamma must be a positive finite number, got {}", scheduler, gamma);
}

void check_total_iters(int64_t total_iters, const char* scheduler) {
  KILN_CHECK(total_iters >= 1, ValueError, "{}: total_iters must be at least 1, got {}", scheduler,
             total_iters);
}

std::vector<LrLambda> per_group_lambdas(std::vector<LrLambda> lambdas, size_t groups,
                                        const char* scheduler) {
  KILN_CHECK(lambdas.size() == groups, ValueError,
             "{}: expected {} lr_lambdas (one per parameter group), got {}", scheduler, groups,
             lambdas.size());
  for (size_t g = 0; g < lambdas.size(); ++g)
    KILN_CHECK(static_cast<bool>(lambdas[g]), ValueError,
               "{}: lr_lambda {} is empty; pass a function of the epoch", scheduler, g);
  return lambdas;
}

}  // namespace

// ---- LambdaLR -----------------------------------------------------------------------------------

LambdaLR::LambdaLR(Optimizer& optimizer, LrLambda lr_lambda)
    : LambdaLR(optimizer,
               std::vector<LrLambda>(optimizer.param_groups().size(), std::move(lr_lambda))) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<LrLambda> lr_lambdas)
    : LRScheduler(optimizer),
      lr_lambdas_(per_group_lambdas(std::move(lr_lambdas), num_groups(), "LambdaLR")) {
  initial_step();
}

std::vector<double> LambdaLR::get_lr() {
  std::vector<double> rates;
  for (size_t g = 0; g < std::min(lr_lambdas_.size(), base_lrs_.size()); ++g)
    rates.push_back(base_lrs_[g] * lr_lambdas_[g](last_epoch_));
  return rates;
}

// ---- MultiplicativeLR ---------------------------------------------------------------------------

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, LrLambda lr_lambda)
    : MultiplicativeLR(
          optimizer, std::vector<LrLambda>(optimizer.param_groups().size(), std::move(lr_lambda))) {
}

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, std::vector<LrLambda> lr_lambdas)
    : LRScheduler(optimizer),
      lr_lambdas_(per_group_lambdas(std::move(lr_lambdas), num_groups(), "MultiplicativeLR")) {
  initial_step();
}

std::vector<double> MultiplicativeLR::get_lr() {
  std::vector<double> rates = group_lrs();
  if (is_initial()) return rates;
  rates.resize(std::min(rates.size(), lr_lambdas_.size()));
  for (size_t g = 0; g < rates.size(); ++g) rates[g] *= lr_lambdas_[g](last_epoch_);
  return rates;
}

// ---- StepLR -------------------------------------------------------------------------------------

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  KILN_CHECK(step_size >= 1, ValueError, "StepLR: step_size must be at least 1, got {}", step_size);
  check_gamma(gamma, "StepLR");
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  std::vector<double> rates = group_lrs();
  if (last_epoch_ == 0 || last_epoch_ % step_size_ != 0) return rates;
  for (double& lr : rates) lr *= gamma_;
  return rates;
}

std::optional<std::vector<double>> StepLR::closed_form_lr() const {
  std::vector<double> rates;
  for (double base : base_lrs_)
    rates.push_back(base *
                    std::pow(gamma_, static_cast<double>(floor_div(last_epoch_, step_size_))));
  return rates;
}

void StepLR::save_state(detail::SchedulerStateWriter& out) const {
  out.put("step_size", step_size_);
  out.put("gamma", gamma_);
}

void StepLR::load_state(const detail::SchedulerStateReader& in) {
  int64_t step_size = in.integer("step_size");
  double gamma = in.real("gamma");
  KILN_CHECK(step_size >= 1, ValueError, "StepLR.load_state_dict: step_size must be >= 1, got {}",
             step_size);
  step_size_ = step_size;
  gamma_ = gamma;
}

// ---- MultiStepLR --------------------------------------------------------------------------------

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  check_gamma(gamma, "MultiStepLR");
  std::sort(milestones_.begin(), milestones_.end());
  initial_step();
}

std::vector<double> MultiStepLR::get_lr() {
  std::vector<double> rates = group_lrs();
  auto count = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (count == 0) return rates;
  for (double& lr : rates) lr *= std::pow(gamma_, static_cast<double>(count));
  return rates;
}

std::optional<std::vector<double>> MultiStepLR::closed_form_lr() const {
  auto passed =
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  std::vector<double> rates;
  for (double base : base_lrs_)
    rates.push_back(base * std::pow(gamma_, static_cast<double>(passed)));
  return rates;
}

void MultiStepLR::save_state(detail::SchedulerStateWriter& out) const {
  out.put("milestones", milestones_);
  out.put("gamma", gamma_);
}

void MultiStepLR::load_state(const detail::SchedulerStateReader& in) {
  std::vector<int64_t> milestones = in.integers("milestones");
  double gamma = in.real("gamma");
  std::sort(milestones.begin(), milestones.end());
  milestones_ = std::move(milestones);
  gamma_ = gamma;
}

// ---- ConstantLR ---------------------------------------------------------------------------------

ConstantLR::ConstantLR(Optimizer& optimizer, double factor, int64_t total_iters)
    : LRScheduler(optimizer), factor_(factor), total_iters_(total_iters) {
  // PyTorch accepts factor 0 and then divides by it at total_iters.
  KILN_CHECK(factor > 0 && factor <= 1, ValueError, "ConstantLR: factor must be in (0, 1], got {}",
             factor);
  check_total_iters(total_iters, "ConstantLR");
  initial_step();
}

std::vector<double> ConstantLR::get_lr() {
  std::vector<double> rates = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : rates) lr *= factor_;
  } else if (last_epoch_ == total_iters_) {
    for (double& lr : rates) lr *= 1.0 / factor_;
  }
  return rates;
}

std::optional<std::vector<double>> ConstantLR::closed_form_lr() const {
  std::vector<double> rates;
  const double reached = last_epoch_ >= total_iters_ ? 1.0 : 0.0;
  for (double base : base_lrs_) rates.push_back(base * (factor_ + reached * (1 - factor_)));
  return rates;
}

void ConstantLR::save_state(detail::SchedulerStateWriter& out) const {
  out.put("factor", factor_);
  out.put("total_iters", total_iters_);
}

void ConstantLR::load_state(const detail::SchedulerStateReader& in) {
  double factor = in.real("factor");
  int64_t total_iters = in.integer("total_iters");
  factor_ = factor;
  total_iters_ = total_iters;
}

// ---- LinearLR -----------------------------------------------------------------------------------

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor,
                   int64_t total_iters)
    : LRScheduler(optimizer),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(total_iters) {
  KILN_CHECK(start_factor > 0 && start_factor <= 1, ValueError,
             "LinearLR: start_factor must be in (0, 1], got {}", start_factor);
  KILN_CHECK(end_factor >= 0 && end_factor <= 1, ValueError,
             "LinearLR: end_factor must be in [0, 1], got {}", end_factor);
  check_total_iters(total_iters, "LinearLR");
  initial_step();
}

std::vector<double> LinearLR::get_lr() {
  std::vector<double> rates = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : rates) lr *= start_factor_;
    return rates;
  }
  if (is_initial() || last_epoch_ > total_iters_) return rates;
  const double delta = end_factor_ - start_factor_;
  const double factor = 1.0 + delta / (static_cast<double>(total_iters_) * start_factor_ +
                                       static_cast<double>(last_epoch_ - 1) * delta);
  for (double& lr : rates) lr *= factor;
  return rates;
}

std::optional<std::vector<double>> LinearLR::closed_form_lr() const {
  std::vector<double> rates;
  const double progress = static_cast<double>(std::min(total_iters_, last_epoch_));
  for (double base : base_lrs_)
    rates.push_back(base * (start_factor_ + (end_factor_ - start_factor_) * progress /
                                                static_cast<double>(total_iters_)));
  return rates;
}

void LinearLR::save_state(detail::SchedulerStateWriter& out) const {
  out.put("start_factor", start_factor_);
  out.put("end_factor", end_factor_);
  out.put("total_iters", total_iters_);
}

void LinearLR::load_state(const detail::SchedulerStateReader& in) {
  double start_factor = in.real("start_factor");
  double end_factor = in.real("end_factor");
  int64_t total_iters = in.integer("total_iters");
  KILN_CHECK(total_iters >= 1, ValueError,
             "LinearLR.load_state_dict: total_iters must be >= 1, got {}", total_iters);
  start_factor_ = start_factor;
  end_factor_ = end_factor;
  total_iters_ = total_iters;
}

// ---- ExponentialLR ------------------------------------------------------------------------------

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma)
    : LRScheduler(optimizer), gamma_(gamma) {
  check_gamma(gamma, "ExponentialLR");
  initial_step();
}

std::vector<double> ExponentialLR::get_lr() {
  std::vector<double> rates = group_lrs();
  if (is_initial()) return rates;
  for (double& lr : rates) lr *= gamma_;
  return rates;
}

std::optional<std::vector<double>> ExponentialLR::closed_form_lr() const {
  std::vector<double> rates;
  for (double base : base_lrs_)
    rates.push_back(base * std::pow(gamma_, static_cast<double>(last_epoch_)));
  return rates;
}

void ExponentialLR::save_state(detail::SchedulerStateWriter& out) const {
  out.put("gamma", gamma_);
}

void ExponentialLR::load_state(const detail::SchedulerStateReader& in) {
  gamma_ = in.real("gamma");
}

// ---- PolynomialLR -------------------------------------------------------------------------------

PolynomialLR::PolynomialLR(Optimizer& optimizer, int64_t total_iters, double power)
    : LRScheduler(optimizer), total_iters_(total_iters), power_(power) {
  check_total_iters(total_iters, "PolynomialLR");
  KILN_CHECK(std::isfinite(power) && power >= 0, ValueError,
             "PolynomialLR: power must be a finite number >= 0, got {}", power);
  initial_step();
}

std::vector<double> PolynomialLR::get_lr() {
  std::vector<double> rates = group_lrs();
  if (is_initial() || last_epoch_ > total_iters_) return rates;
  const double total = static_cast<double>(total_iters_);
  const double decay = std::pow((1.0 - static_cast<double>(last_epoch_) / total) /
                                    (1.0 - static_cast<double>(last_epoch_ - 1) / total),
                                power_);
  for (double& lr : rates) lr *= decay;
  return rates;
}

std::optional<std::vector<double>> PolynomialLR::closed_form_lr() const {
  std::vector<double> rates;
  const double progress = static_cast<double>(std::min(total_iters_, last_epoch_));
  for (double base : base_lrs_)
    rates.push_back(base * std::pow(1.0 - progress / static_cast<double>(total_iters_), power_));
  return rates;
}

void PolynomialLR::save_state(detail::SchedulerStateWriter& out) const {
  out.put("total_iters", total_iters_);
  out.put("power", power_);
}

void PolynomialLR::load_state(const detail::SchedulerStateReader& in) {
  int64_t total_iters = in.integer("total_iters");
  double power = in.real("power");
  KILN_CHECK(total_iters >= 1, ValueError,
             "PolynomialLR.load_state_dict: total_iters must be >= 1, got {}", total_iters);
  total_iters_ = total_iters;
  power_ = power;
}

// ---- CosineAnnealingLR --------------------------------------------------------------------------

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min)
    : LRScheduler(optimizer), t_max_(t_max), eta_min_(eta_min) {
  KILN_CHECK(t_max >= 1, ValueError, "CosineAnnealingLR: T_max must be at least 1, got {}", t_max);
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  std::vector<double> rates = group_lrs();
  if (is_initial()) return rates;
  const double t_max = static_cast<double>(t_max_);
  const double epoch = static_cast<double>(last_epoch_);
  // One step past each trough the ratio of the recursive form below would divide by
  // 1 + cos(pi) = 0, so PyTorch adds the step of the closed form instead.
  if ((last_epoch_ - 1 - t_max_) % (2 * t_max_) == 0) {
    rates.resize(std::min(rates.size(), base_lrs_.size()));
    for (size_t g = 0; g < rates.size(); ++g)
      rates[g] = rates[g] + (base_lrs_[g] - eta_min_) * (1 - std::cos(kPi / t_max)) / 2;
    return rates;
  }
  for (double& lr : rates)
    lr = (1 + std::cos(kPi * epoch / t_max)) / (1 + std::cos(kPi * (epoch - 1) / t_max)) *
             (lr - eta_min_) +
         eta_min_;
  return rates;
}

std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() const {
  std::vector<double> rates;
  const double epoch = static_cast<double>(last_epoch_);
  for (double base : base_lrs_)
    rates.push_back(eta_min_ + (base - eta_min_) *
                                   (1 + std::cos(kPi * epoch / static_cast<double>(t_max_))) / 2);
  return rates;
}

void CosineAnnealingLR::save_state(detail::SchedulerStateWriter& out) const {
  out.put("T_max", t_max_);
  out.put("eta_min", eta_min_);
}

void CosineAnnealingLR::load_state(const detail::SchedulerStateReader& in) {
  int64_t t_max = in.integer("T_max");
  double eta_min = in.real("eta_min");
  KILN_CHECK(t_max >= 1, ValueError,
             "CosineAnnealingLR.load_state_dict: T_max must be >= 1, got {}", t_max);
  t_max_ = t_max;
  eta_min_ = eta_min;
}

// ---- CosineAnnealingWarmRestarts ----------------------------------------------------------------

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t t_0,
                                                         int64_t t_mult, double eta_min)
    : LRScheduler(optimizer), t_0_(t_0), t_i_(t_0), t_mult_(t_mult), eta_min_(eta_min), t_cur_(-1) {
  KILN_CHECK(t_0 >= 1, ValueError,
             "CosineAnnealingWarmRestarts: T_0 must be a positive integer, got {}", t_0);
  KILN_CHECK(t_mult >= 1, ValueError,
             "CosineAnnealingWarmRestarts: T_mult must be an integer >= 1, got {}", t_mult);
  KILN_CHECK(std::isfinite(eta_min), ValueError,
             "CosineAnnealingWarmRestarts: eta_min must be finite, got {}", eta_min);
  initial_step();
}

std::vector<double> CosineAnnealingWarmRestarts::get_lr() {
  std::vector<double> rates;
  for (double base : base_lrs_)
    rates.push_back(eta_min_ + (base - eta_min_) *
                                   (1 + std::cos(kPi * t_cur_ / static_cast<double>(t_i_))) / 2);
  return rates;
}

void CosineAnnealingWarmRestarts::step() {
  if (defer_to_effect("scheduler.step()", [this] { step(); })) return;
  if (last_epoch_ < 0) {
    step(0.0);
    return;
  }
  t_cur_ += 1;
  if (t_cur_ >= static_cast<double>(t_i_)) {
    t_cur_ = std::fmod(t_cur_, static_cast<double>(t_i_));
    t_i_ *= t_mult_;
  }
  last_epoch_ += 1;
  apply_lrs(get_lr());
}

void CosineAnnealingWarmRestarts::step(double epoch) {
  KILN_CHECK(std::isfinite(epoch) && epoch >= 0, ValueError,
             "CosineAnnealingWarmRestarts.step: epoch must be a finite number >= 0, got {}", epoch);
  const double t_0 = static_cast<double>(t_0_);
  if (epoch >= t_0) {
    if (t_mult_ == 1) {
      t_cur_ = std::fmod(epoch, t_0);
    } else {
      // The number of completed periods n: t_0 * (t_mult^n - 1) / (t_mult - 1) <= epoch.
      const double mult = static_cast<double>(t_mult_);
      const int64_t n =
          static_cast<int64_t>(std::log(epoch / t_0 * (mult - 1) + 1) / std::log(mult));
      int64_t mult_n = 1;
      for (int64_t i = 0; i < n; ++i) mult_n *= t_mult_;
      t_cur_ = epoch - static_cast<double>(t_0_ * (mult_n - 1)) / static_cast<double>(t_mult_ - 1);
      t_i_ = t_0_ * mult_n;
    }
  } else {
    t_i_ = t_0_;
    t_cur_ = epoch;
  }
  last_epoch_ = static_cast<int64_t>(std::floor(epoch));
  apply_lrs(get_lr());
}

void CosineAnnealingWarmRestarts::save_state(detail::SchedulerStateWriter& out) const {
  out.put("T_0", t_0_);
  out.put("T_i", t_i_);
  out.put("T_mult", t_mult_);
  out.put("eta_min", eta_min_);
  out.put("T_cur", t_cur_);
}

void CosineAnnealingWarmRestarts::load_state(const detail::SchedulerStateReader& in) {
  int64_t t_0 = in.integer("T_0");
  int64_t t_i = in.integer("T_i");
  int64_t t_mult = in.integer("T_mult");
  double eta_min = in.real("eta_min");
  double t_cur = in.real("T_cur");
  KILN_CHECK(t_0 >= 1 && t_i >= 1 && t_mult >= 1, ValueError,
             "CosineAnnealingWarmRestarts.load_state_dict: T_0, T_i and T_mult must be >= 1, got "
             "{}, {}, {}",
             t_0, t_i, t_mult);
  t_0_ = t_0;
  t_i_ = t_i;
  t_mult_ = t_mult;
  eta_min_ = eta_min;
  t_cur_ = t_cur;
}

}  // namespace kiln::optim
