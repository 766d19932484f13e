// ReduceLROnPlateau with PyTorch's rules (torch/optim/lr_scheduler.py).
#include <algorithm>
#include <cmath>
#include <limits>

#include "kiln/error.h"
#include "kiln/optim/lr_scheduler_plateau.h"
#include "src/optim/lr_scheduler_state.h"

namespace kiln::optim {
namespace {

void check_modes(const std::string& mode, const std::string& threshold_mode, const char* where) {
  KILN_CHECK(mode == "min" || mode == "max", ValueError,
             "{}: mode must be 'min' or 'max', got '{}'", where, mode);
  KILN_CHECK(threshold_mode == "rel" || threshold_mode == "abs", ValueError,
             "{}: threshold_mode must be 'rel' or 'abs', got '{}'", where, threshold_mode);
}

double worst_value(const std::string& mode) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  return mode == "min" ? kInf : -kInf;
}

}  // namespace

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions options)
    : optimizer_(&optimizer),
      mode_(std::move(options.mode)),
      factor_(options.factor),
      patience_(options.patience),
      threshold_(options.threshold),
      threshold_mode_(std::move(options.threshold_mode)),
      cooldown_(options.cooldown),
      eps_(options.eps) {
  constexpr const char* kName = "ReduceLROnPlateau";
  KILN_CHECK(factor_ >= 0 && factor_ < 1, ValueError,
             "ReduceLROnPlateau: factor must be in [0, 1) (new lr = lr * factor), got {}", factor_);
  check_modes(mode_, threshold_mode_, kName);
  KILN_CHECK(patience_ >= 0, ValueError, "ReduceLROnPlateau: patience must be >= 0, got {}",
             patience_);
  KILN_CHECK(cooldown_ >= 0, ValueError, "ReduceLROnPlateau: cooldown must be >= 0, got {}",
             cooldown_);
  KILN_CHECK(std::isfinite(threshold_) && threshold_ >= 0, ValueError,
             "ReduceLROnPlateau: threshold must be a finite number >= 0, got {}", threshold_);
  KILN_CHECK(eps_ >= 0, ValueError, "ReduceLROnPlateau: eps must be >= 0, got {}", eps_);
  min_lrs_ = options.min_lr.expand(optimizer.param_groups().size(), kName, "min_lr");
  default_min_lr_ = options.min_lr.broadcast_value();
  best_ = worst_value(mode_);
  for (const ParamGroup& group : optimizer.param_groups()) last_lr_.push_back(group.lr);
}

bool ReduceLROnPlateau::is_better(double a, double best) const {
  if (mode_ == "min" && threshold_mode_ == "rel") return a < best * (1. - threshold_);
  if (mode_ == "min") return a < best - threshold_;
  if (threshold_mode_ == "rel") return a > best * (threshold_ + 1.);
  return a > best + threshold_;
}

void ReduceLROnPlateau::step(double metric) {
  const size_t groups = optimizer_->param_groups().size();
  if (groups != min_lrs_.size()) {
    KILN_CHECK(default_min_lr_.has_value(), ValueError,
               "ReduceLROnPlateau.step: the optimizer has {} parameter groups but min_lr was "
               "given for {}; a group was added after the scheduler was built, so give min_lr as "
               "one value for all groups",
               groups, min_lrs_.size());
  }
  last_epoch_ += 1;
  if (is_better(metric, best_)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    num_bad_epochs_ += 1;
  }
  if (in_cooldown()) {
    cooldown_counter_ -= 1;
    num_bad_epochs_ = 0;  // bad epochs in cooldown do not count
  }
  if (num_bad_epochs_ > patience_) {
    reduce_lr();
    cooldown_counter_ = cooldown_;
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (const ParamGroup& group : optimizer_->param_groups()) last_lr_.push_back(group.lr);
}

void ReduceLROnPlateau::reduce_lr() {
  const size_t groups = optimizer_->param_groups().size();
  if (groups != min_lrs_.size()) min_lrs_.assign(groups, *default_min_lr_);
  for (size_t g = 0; g < groups; ++g) {
    const double old_lr = optimizer_->lr(g);
    const double new_lr = std::max(old_lr * factor_, min_lrs_[g]);
    if (old_lr - new_lr > eps_) optimizer_->set_lr(g, new_lr);
  }
}

StateDict ReduceLROnPlateau::state_dict() const {
  StateDict dict;
  detail::SchedulerStateWriter out(dict, "");
  out.put("type", name());
  out.put("mode", mode_);
  out.put("factor", factor_);
  out.put("patience", patience_);
  out.put("threshold", threshold_);
  out.put("threshold_mode", threshold_mode_);
  out.put("cooldown", cooldown_);
  out.put("cooldown_counter", cooldown_counter_);
  out.put("min_lrs", min_lrs_);
  out.put("default_min_lr", default_min_lr_ ? fmt::format("{}", *default_min_lr_) : "none");
  out.put("eps", eps_);
  out.put("best", best_);
  out.put("num_bad_epochs", num_bad_epochs_);
  out.put("last_epoch", last_epoch_);
  out.put("last_lr", last_lr_);
  return dict;
}

void ReduceLROnPlateau::load_state_dict(const StateDict& dict) {
  detail::SchedulerStateReader in(dict, "", name());
  const std::string type = in.text("type");
  KILN_CHECK(type == name(), ValueError,
             "ReduceLROnPlateau.load_state_dict: the state ('type') is from a {}, not a "
             "ReduceLROnPlateau; load it into the scheduler that saved it",
             type);
  std::string mode = in.choice("mode", {"min", "max"});
  double factor = in.real("factor");
  int64_t patience = in.integer("patience");
  double threshold = in.real("threshold");
  std::string threshold_mode = in.choice("threshold_mode", {"rel", "abs"});
  int64_t cooldown = in.integer("cooldown");
  int64_t cooldown_counter = in.integer("cooldown_counter");
  std::vector<double> min_lrs = in.reals("min_lrs");
  std::optional<double> default_min_lr;
  if (in.text("default_min_lr") != "none") default_min_lr = in.real("default_min_lr");
  double eps = in.real("eps");
  double best = in.real("best");
  int64_t num_bad_epochs = in.integer("num_bad_epochs");
  int64_t last_epoch = in.integer("last_epoch");
  std::vector<double> last_lr = in.reals("last_lr");
  mode_ = std::move(mode);
  factor_ = factor;
  patience_ = patience;
  threshold_ = threshold;
  threshold_mode_ = std::move(threshold_mode);
  cooldown_ = cooldown;
  cooldown_counter_ = cooldown_counter;
  min_lrs_ = std::move(min_lrs);
  default_min_lr_ = default_min_lr;
  eps_ = eps;
  best_ = best;
  num_bad_epochs_ = num_bad_epochs;
  last_epoch_ = last_epoch;
  last_lr_ = std::move(last_lr);
}

}  // namespace kiln::optim
