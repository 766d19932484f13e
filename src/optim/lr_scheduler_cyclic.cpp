// CyclicLR and OneCycleLR, with PyTorch's formulas (torch/optim/lr_scheduler.py). Both validate
// every argument before touching the optimizer, so a bad argument leaves its groups unchanged.
#include <cmath>
#include <numbers>

#include "kiln/error.h"
#include "kiln/optim/lr_scheduler_cyclic.h"
#include "src/optim/lr_scheduler_state.h"

namespace kiln::optim {
namespace {

// Which option holds the momentum to cycle: "beta1" for Adam-like groups, else "momentum"
// (PyTorch: use_beta1 = "betas" in optimizer.defaults).
bool groups_use_beta1(const Optimizer& optimizer, const char* scheduler) {
  const auto& groups = optimizer.param_groups();
  const bool beta1 = groups.front().has("beta1");
  const char* key = beta1 ? "beta1" : "momentum";
  for (size_t g = 0; g < groups.size(); ++g)
    KILN_CHECK(groups[g].has(key), ValueError,
               "{}: cycle_momentum needs an optimizer with a 'momentum' or 'beta1' option, but "
               "parameter group {} of {} has no '{}'; pass cycle_momentum = false",
               scheduler, g, optimizer.name(), key);
  return beta1;
}

const char* momentum_key(bool use_beta1) { return use_beta1 ? "beta1" : "momentum"; }

}  // namespace

// ---- CyclicLR -----------------------------------------------------------------------------------

CyclicLR::CyclicLR(Optimizer& optimizer, CyclicLROptions options)
    : LRScheduler(optimizer, InitialLrs::kDeferred),
      gamma_(options.gamma),
      custom_scale_fn_(std::move(options.scale_fn)),
      cycle_momentum_(options.cycle_momentum) {
  const size_t groups = num_groups();
  std::vector<double> base_lrs = options.base_lr.expand(groups, "CyclicLR", "base_lr");
  max_lrs_ = options.max_lr.expand(groups, "CyclicLR", "max_lr");
  KILN_CHECK(options.step_size_up >= 1, ValueError,
             "CyclicLR: step_size_up must be at least 1, got {}", options.step_size_up);
  const int64_t step_size_down = options.step_size_down.value_or(options.step_size_up);
  KILN_CHECK(step_size_down >= 1, ValueError, "CyclicLR: step_size_down must be at least 1, got {}",
             step_size_down);
  total_size_ = static_cast<double>(options.step_size_up + step_size_down);
  step_ratio_ = static_cast<double>(options.step_size_up) / total_size_;
  KILN_CHECK(std::isfinite(gamma_) && gamma_ > 0, ValueError,
             "CyclicLR: gamma must be a positive finite number, got {}", gamma_);
  mode_ = options.mode;
  if (custom_scale_fn_) {
    KILN_CHECK(options.scale_mode == "cycle" || options.scale_mode == "iterations", ValueError,
               "CyclicLR: scale_mode must be 'cycle' or 'iterations', got '{}'",
               options.scale_mode);
    scale_mode_ = options.scale_mode;
  } else {
    KILN_CHECK(mode_ == "triangular" || mode_ == "triangular2" || mode_ == "exp_range", ValueError,
               "CyclicLR: mode must be 'triangular', 'triangular2' or 'exp_range' (or pass a "
               "scale_fn), got '{}'",
               mode_);
    scale_mode_ = mode_ == "exp_range" ? "iterations" : "cycle";
  }
  if (cycle_momentum_) {
    use_beta1_ = groups_use_beta1(optimizer, "CyclicLR");
    base_momentums_ = options.base_momentum.expand(groups, "CyclicLR", "base_momentum");
    max_momentums_ = options.max_momentum.expand(groups, "CyclicLR", "max_momentum");
  }

  // Everything is valid: set the groups up as PyTorch's constructor does.
  for (size_t g = 0; g < groups; ++g) optimizer.set_lr(g, base_lrs[g]);
  if (cycle_momentum_) {
    for (size_t g = 0; g < groups; ++g) {
      auto& group_options = optimizer.param_groups()[g].options;
      group_options[momentum_key(use_beta1_)] = max_momentums_[g];
      group_options["max_momentum"] = max_momentums_[g];
      group_options["base_momentum"] = base_momentums_[g];
    }
  }
  record_initial_lrs();
  initial_step();
  // PyTorch's order: the initial step ran on the recorded initial_lr, then base_lr takes over.
  base_lrs_ = std::move(base_lrs);
}

double CyclicLR::scale(double x) const {
  if (custom_scale_fn_) return custom_scale_fn_(x);
  if (mode_ == "triangular2") return 1 / std::pow(2.0, x - 1);
  if (mode_ == "exp_range") return std::pow(gamma_, x);
  return 1.0;
}

std::vector<double> CyclicLR::get_lr() {
  const double epoch = static_cast<double>(last_epoch_);
  const double cycle = std::floor(1 + epoch / total_size_);
  const double x = 1. + epoch / total_size_ - cycle;
  const double scale_factor = x <= step_ratio_ ? x / step_ratio_ : (x - 1) / (step_ratio_ - 1);
  const double scale_arg = scale_mode_ == "cycle" ? cycle : epoch;
  const double amplitude_scale = scale(scale_arg);

  std::vector<double> rates;
  for (size_t g = 0; g < std::min(base_lrs_.size(), max_lrs_.size()); ++g) {
    const double base_height = (max_lrs_[g] - base_lrs_[g]) * scale_factor;
    rates.push_back(base_lrs_[g] + base_height * amplitude_scale);
  }
  if (cycle_momentum_) {
    auto& groups = optimizer_->param_groups();
    for (size_t g = 0; g < std::min(groups.size(), base_momentums_.size()); ++g) {
      const double base_height = (max_momentums_[g] - base_momentums_[g]) * scale_factor;
      groups[g].options[momentum_key(use_beta1_)] =
          max_momentums_[g] - base_height * amplitude_scale;
    }
  }
  return rates;
}

void CyclicLR::save_state(detail::SchedulerStateWriter& out) const {
  out.put("max_lrs", max_lrs_);
  out.put("total_size", total_size_);
  out.put("step_ratio", step_ratio_);
  out.put("mode", mode_);
  out.put("gamma", gamma_);
  out.put("scale_mode", scale_mode_);
  out.put("cycle_momentum", cycle_momentum_);
  out.put("use_beta1", use_beta1_);
  out.put("base_momentums", base_momentums_);
  out.put("max_momentums", max_momentums_);
}

void CyclicLR::load_state(const detail::SchedulerStateReader& in) {
  const size_t groups = num_groups();
  std::vector<double> max_lrs = in.reals("max_lrs", groups);
  double total_size = in.real("total_size");
  double step_ratio = in.real("step_ratio");
  std::string mode = in.text("mode");
  double gamma = in.real("gamma");
  std::string scale_mode = in.choice("scale_mode", {"cycle", "iterations"});
  bool cycle_momentum = in.flag("cycle_momentum");
  bool use_beta1 = in.flag("use_beta1");
  std::optional<size_t> momentum_count;
  if (cycle_momentum) momentum_count = groups;
  std::vector<double> base_momentums = in.reals("base_momentums", momentum_count);
  std::vector<double> max_momentums = in.reals("max_momentums", momentum_count);
  KILN_CHECK(total_size > 0 && step_ratio > 0 && step_ratio < 1, ValueError,
             "CyclicLR.load_state_dict: total_size {} and step_ratio {} do not describe a cycle",
             total_size, step_ratio);
  if (!custom_scale_fn_) {
    // PyTorch's _init_scale_fn: without a custom function the mode decides.
    KILN_CHECK(mode == "triangular" || mode == "triangular2" || mode == "exp_range", ValueError,
               "CyclicLR.load_state_dict: the state has mode '{}' (a custom scale_fn); build this "
               "CyclicLR with the same scale_fn",
               mode);
    scale_mode = mode == "exp_range" ? "iterations" : "cycle";
  }
  max_lrs_ = std::move(max_lrs);
  total_size_ = total_size;
  step_ratio_ = step_ratio;
  mode_ = std::move(mode);
  gamma_ = gamma;
  scale_mode_ = std::move(scale_mode);
  cycle_momentum_ = cycle_momentum;
  use_beta1_ = use_beta1;
  base_momentums_ = std::move(base_momentums);
  max_momentums_ = std::move(max_momentums);
}

// ---- OneCycleLR ---------------------------------------------------------------------------------

std::vector<OneCycleLR::Phase> OneCycleLR::make_phases(int64_t total_steps, double pct_start,
                                                       bool three_phase) {
  const double total = static_cast<double>(total_steps);
  if (three_phase) {
    return {
        {pct_start * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
        {2 * pct_start * total - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"},
        {total - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"},
    };
  }
  return {
      {pct_start * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
      {total - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"},
  };
}

OneCycleLR::OneCycleLR(Optimizer& optimizer, OneCycleLROptions options)
    : LRScheduler(optimizer, InitialLrs::kDeferred),
      pct_start_(options.pct_start),
      three_phase_(options.three_phase),
      anneal_strategy_(options.anneal_strategy),
      cycle_momentum_(options.cycle_momentum) {
  if (options.total_steps) {
    KILN_CHECK(*options.total_steps >= 1, ValueError,
               "OneCycleLR: total_steps must be a positive integer, got {}", *options.total_steps);
    total_steps_ = *options.total_steps;
  } else {
    KILN_CHECK(options.epochs && options.steps_per_epoch, ValueError,
               "OneCycleLR: pass total_steps, or epochs and steps_per_epoch");
    KILN_CHECK(*options.epochs >= 1, ValueError,
               "OneCycleLR: epochs must be a positive integer, got {}", *options.epochs);
    KILN_CHECK(*options.steps_per_epoch >= 1, ValueError,
               "OneCycleLR: steps_per_epoch must be a positive integer, got {}",
               *options.steps_per_epoch);
    total_steps_ = *options.epochs * *options.steps_per_epoch;
  }
  KILN_CHECK(pct_start_ >= 0 && pct_start_ <= 1, ValueError,
             "OneCycleLR: pct_start must be a number in [0, 1], got {}", pct_start_);
  KILN_CHECK(anneal_strategy_ == "cos" || anneal_strategy_ == "linear", ValueError,
             "OneCycleLR: anneal_strategy must be 'cos' or 'linear', got '{}'", anneal_strategy_);
  KILN_CHECK(std::isfinite(options.div_factor) && options.div_factor > 0, ValueError,
             "OneCycleLR: div_factor must be a positive number, got {}", options.div_factor);
  KILN_CHECK(std::isfinite(options.final_div_factor) && options.final_div_factor > 0, ValueError,
             "OneCycleLR: final_div_factor must be a positive number, got {}",
             options.final_div_factor);
  const size_t groups = num_groups();
  std::vector<double> max_lrs = options.max_lr.expand(groups, "OneCycleLR", "max_lr");
  std::vector<double> base_momentums, max_momentums;
  if (cycle_momentum_) {
    use_beta1_ = groups_use_beta1(optimizer, "OneCycleLR");
    max_momentums = options.max_momentum.expand(groups, "OneCycleLR", "max_momentum");
    base_momentums = options.base_momentum.expand(groups, "OneCycleLR", "base_momentum");
  }
  phases_ = make_phases(total_steps_, pct_start_, three_phase_);
  // PyTorch divides by zero when it reaches an empty phase: the first one at the initial step, the
  // last one later on. (An empty phase in between is never reached.)
  for (size_t i : {size_t{0}, phases_.size() - 1}) {
    const double start_step = i == 0 ? 0.0 : phases_[i - 1].end_step;
    check_phase_length(i, phases_[i].end_step - start_step);
  }

  // Everything is valid: set the groups up as PyTorch's constructor does.
  for (size_t g = 0; g < groups; ++g) {
    auto& group_options = optimizer.param_groups()[g].options;
    group_options["initial_lr"] = max_lrs[g] / options.div_factor;
    group_options["max_lr"] = max_lrs[g];
    group_options["min_lr"] = group_options["initial_lr"] / options.final_div_factor;
    if (cycle_momentum_) {
      group_options[momentum_key(use_beta1_)] = max_momentums[g];
      group_options["max_momentum"] = max_momentums[g];
      group_options["base_momentum"] = base_momentums[g];
    }
  }
  record_initial_lrs();
  initial_step();
}

void OneCycleLR::check_phase_length(size_t phase, double length) const {
  KILN_CHECK(length != 0, ValueError,
             "OneCycleLR: phase {} of the schedule is empty (pct_start {} with total_steps {}); "
             "change pct_start or total_steps",
             phase + 1, pct_start_, total_steps_);
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (anneal_strategy_ == "linear") return (end - start) * pct + start;
  const double cos_out = std::cos(std::numbers::pi * pct) + 1;
  return end + (start - end) / 2.0 * cos_out;
}

std::vector<double> OneCycleLR::get_lr() {
  const int64_t step_num = last_epoch_;
  KILN_CHECK(step_num <= total_steps_, ValueError,
             "OneCycleLR: tried to step {} times, but total_steps is {}; make total_steps (or "
             "epochs * steps_per_epoch) cover the whole training run",
             step_num, total_steps_);
  const double step = static_cast<double>(step_num);
  std::vector<double> rates;
  for (ParamGroup& group : optimizer_->param_groups()) {
    double start_step = 0;
    for (size_t i = 0; i < phases_.size(); ++i) {
      const Phase& phase = phases_[i];
      if (step <= phase.end_step || i + 1 == phases_.size()) {
        check_phase_length(i, phase.end_step - start_step);
        const double pct = (step - start_step) / (phase.end_step - start_step);
        rates.push_back(anneal(group.option(phase.start_lr), group.option(phase.end_lr), pct));
        if (cycle_momentum_) {
          group.options[momentum_key(use_beta1_)] =
              anneal(group.option(phase.start_momentum), group.option(phase.end_momentum), pct);
        }
        break;
      }
      start_step = phase.end_step;
    }
  }
  return rates;
}

void OneCycleLR::save_state(detail::SchedulerStateWriter& out) const {
  out.put("total_steps", total_steps_);
  out.put("pct_start", pct_start_);
  out.put("three_phase", three_phase_);
  out.put("anneal_strategy", anneal_strategy_);
  out.put("cycle_momentum", cycle_momentum_);
  out.put("use_beta1", use_beta1_);
}

void OneCycleLR::load_state(const detail::SchedulerStateReader& in) {
  int64_t total_steps = in.integer("total_steps");
  double pct_start = in.real("pct_start");
  bool three_phase = in.flag("three_phase");
  std::string anneal_strategy = in.choice("anneal_strategy", {"cos", "linear"});
  bool cycle_momentum = in.flag("cycle_momentum");
  bool use_beta1 = in.flag("use_beta1");
  KILN_CHECK(total_steps >= 1, ValueError,
             "OneCycleLR.load_state_dict: total_steps must be >= 1, got {}", total_steps);
  total_steps_ = total_steps;
  pct_start_ = pct_start;
  three_phase_ = three_phase;
  phases_ = make_phases(total_steps, pct_start, three_phase);
  anneal_strategy_ = std::move(anneal_strategy);
  cycle_momentum_ = cycle_momentum;
  use_beta1_ = use_beta1;
}

}  // namespace kiln::optim
