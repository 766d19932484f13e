// torch::optim: LibTorch's optimizer classes and options builders over Kiln's optimizers
// (kiln/optim/). `torch::optim::SGD opt(model->parameters(), SGDOptions(0.01).momentum(0.5))` is a
// kiln::optim::SGD; Optimizer is Kiln's base (step, zero_grad, param_groups, state_dict).
//
// Param groups as LibTorch builds them: each OptimizerParamGroup holds parameters and, optionally,
// options of its own (a std::unique_ptr<XOptions>) that override the optimizer's defaults:
//   std::vector<torch::optim::OptimizerParamGroup> groups;
//   groups.emplace_back(net->body->parameters());
//   groups.emplace_back(net->head->parameters(), std::make_unique<torch::optim::SGDOptions>(0.1));
//   torch::optim::SGD opt(std::move(groups), torch::optim::SGDOptions(0.01));
// A running optimizer's groups are Kiln's (param_groups()[g].lr, Optimizer::set_lr).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kiln/optim/adagrad.h"
#include "kiln/optim/adam.h"
#include "kiln/optim/adamw.h"
#include "kiln/optim/lbfgs.h"
#include "kiln/optim/lr_scheduler.h"
#include "kiln/optim/rmsprop.h"
#include "kiln/optim/sgd.h"
#include "kiln/torch/arg.h"
#include "kiln/torch/types.h"

namespace torch::optim {

using kiln::optim::Optimizer;

// The base of the options builders: what a param group's own options write into Kiln's group.
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;
  // Writes every option into the group (lr and Kiln's option names).
  virtual void write_to(kiln::optim::ParamGroup& group) const = 0;
  // Reads every option back from a group of a running optimizer.
  virtual void read_from(const kiln::optim::ParamGroup& group) = 0;
};

class OptimizerParamGroup {
 public:
  OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}

  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }
  bool has_options() const { return options_ != nullptr; }
  // The group's options, as LibTorch's: a running optimizer's groups have them, and the LR-decay
  // idiom `static_cast<torch::optim::SGDOptions&>(opt.param_groups()[0].options()).lr(0.01)`
  // changes the rate the next step() uses (Note [LibTorch's param groups over Kiln's]).
  // ValueError for a group built without options.
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }
  // Kiln's group: the parameters and, when given, this group's own options.
  kiln::optim::ParamGroup kiln_group() const;

 private:
  std::vector<Tensor> params_;
  std::shared_ptr<OptimizerOptions> options_;
};

std::vector<kiln::optim::ParamGroup> kiln_groups(const std::vector<OptimizerParamGroup>& groups);

class SGDOptions : public OptimizerOptions {
 public:
  SGDOptions(double lr) : lr_(lr) {}  // NOLINT: implicit, as LibTorch's (SGD(params, 0.1))
  TORCH_ARG(double, lr);
  TORCH_ARG(double, momentum) = 0;
  TORCH_ARG(double, dampening) = 0;
  TORCH_ARG(double, weight_decay) = 0;
  TORCH_ARG(bool, nesterov) = false;

 public:
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  void write_to(kiln::optim::ParamGroup& group) const override;
  void read_from(const kiln::optim::ParamGroup& group) override;
  kiln::optim::SGDOptions kiln_options() const {
    return {.lr = lr_,
            .momentum = momentum_,
            .dampening = dampening_,
            .weight_decay = weight_decay_,
            .nesterov = nesterov_};
  }
};

using betas_t = std::tuple<double, double>;

class AdamOptions : public OptimizerOptions {
 public:
  AdamOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT: implicit, as LibTorch's
  TORCH_ARG(double, lr);
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  TORCH_ARG(double, eps) = 1e-8;
  TORCH_ARG(double, weight_decay) = 0;
  TORCH_ARG(bool, amsgrad) = false;

 public:
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  void write_to(kiln::optim::ParamGroup& group) const override;
  void read_from(const kiln::optim::ParamGroup& group) override;
  kiln::optim::AdamOptions kiln_options() const {
    return {.lr = lr_,
            .betas = {std::get<0>(betas_), std::get<1>(betas_)},
            .eps = eps_,
            .weight_decay = weight_decay_,
            .amsgrad = amsgrad_};
  }
};

class AdamWOptions : public OptimizerOptions {
 public:
  AdamWOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT: implicit, as LibTorch's
  TORCH_ARG(double, lr);
  TORCH_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  TORCH_ARG(double, eps) = 1e-8;
  TORCH_ARG(double, weight_decay) = 1e-2;
  TORCH_ARG(bool, amsgrad) = false;

 public:
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  void write_to(kiln::optim::ParamGroup& group) const override;
  void read_from(const kiln::optim::ParamGroup& group) override;
  kiln::optim::AdamWOptions kiln_options() const {
    return {.lr = lr_,
            .betas = {std::get<0>(betas_), std::get<1>(betas_)},
            .eps = eps_,
            .weight_decay = weight_decay_,
            .amsgrad = amsgrad_};
  }
};

class RMSpropOptions : public OptimizerOptions {
 public:
  RMSpropOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT: implicit, as LibTorch's
  TORCH_ARG(double, lr);
  TORCH_ARG(double, alpha) = 0.99;
  TORCH_ARG(double, eps) = 1e-8;
  TORCH_ARG(double, weight_decay) = 0;
  TORCH_ARG(double, momentum) = 0;
  TORCH_ARG(bool, centered) = false;

 public:
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  void write_to(kiln::optim::ParamGroup& group) const override;
  void read_from(const kiln::optim::ParamGroup& group) override;
  kiln::optim::RMSpropOptions kiln_options() const {
    return {.lr = lr_,
            .alpha = alpha_,
            .eps = eps_,
            .weight_decay = weight_decay_,
            .momentum = momentum_,
            .centered = centered_};
  }
};

class AdagradOptions : public OptimizerOptions {
 public:
  AdagradOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT: implicit, as LibTorch's
  TORCH_ARG(double, lr);
  TORCH_ARG(double, lr_decay) = 0;
  TORCH_ARG(double, weight_decay) = 0;
  TORCH_ARG(double, initial_accumulator_value) = 0;
  TORCH_ARG(double, eps) = 1e-10;

 public:
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  void write_to(kiln::optim::ParamGroup& group) const override;
  void read_from(const kiln::optim::ParamGroup& group) override;
  kiln::optim::AdagradOptions kiln_options() const {
    return {.lr = lr_,
            .lr_decay = lr_decay_,
            .weight_decay = weight_decay_,
            .initial_accumulator_value = initial_accumulator_value_,
            .eps = eps_};
  }
};

namespace detail {

// Note [LibTorch's param groups over Kiln's]
// A running optimizer's hyperparameters live in Kiln's groups (kiln::optim::ParamGroup), which
// Kiln's LR schedulers and Optimizer::set_lr write. LibTorch's param_groups() returns groups whose
// options() are options objects (SGDOptions, ...) that a program changes in place. This mirror
// holds one such object per group: param_groups() first writes back every object the program
// changed since it was last read (compared with what it read), then refreshes all of them from
// Kiln's groups; step() writes back changes before stepping. So a change made either way is
// seen by the other, and the objects' addresses stay put while the optimizer lives.
template <typename Options>
class MirroredParamGroups {
 public:
  std::vector<OptimizerParamGroup>& refresh(kiln::optim::Optimizer& optimizer) {
    write_back(optimizer);
    std::vector<kiln::optim::ParamGroup>& groups = optimizer.param_groups();
    for (size_t g = 0; g < groups.size(); ++g) {
      if (g == mirrors_.size()) {
        mirrors_.emplace_back(groups[g].params, std::make_unique<Options>(0.0));
        read_.emplace_back();
      }
      mirrors_[g].params() = groups[g].params;
      mirrors_[g].options().read_from(groups[g]);
      mirrors_[g].options().write_to(read_[g]);
    }
    return mirrors_;
  }

  void write_back(kiln::optim::Optimizer& optimizer) {
    std::vector<kiln::optim::ParamGroup>& groups = optimizer.param_groups();
    for (size_t g = 0; g < mirrors_.size() && g < groups.size(); ++g) {
      kiln::optim::ParamGroup now;
      mirrors_[g].options().write_to(now);
      if (now.lr != read_[g].lr) optimizer.set_lr(g, now.lr);
      for (const auto& [name, value] : now.options) groups[g].options[name] = value;
      read_[g] = std::move(now);
    }
  }

 private:
  std::vector<OptimizerParamGroup> mirrors_;
  std::vector<kiln::optim::ParamGroup> read_;  // what each mirror held when last synced
};

}  // namespace detail

// Each optimizer: Kiln's, constructed from LibTorch's arguments, with LibTorch's param groups
// (See Note [LibTorch's param groups over Kiln's]). Kiln's own groups are kiln_param_groups().
#define KILN_TORCH_OPTIMIZER(Name)                                                       \
  class Name : public kiln::optim::Name {                                                \
   public:                                                                               \
    Name(std::vector<Tensor> params, const Name##Options& defaults)                      \
        : kiln::optim::Name(std::move(params), defaults.kiln_options()) {}               \
    Name(const std::vector<OptimizerParamGroup>& groups, const Name##Options& defaults)  \
        : kiln::optim::Name(kiln_groups(groups), defaults.kiln_options()) {}             \
    std::vector<OptimizerParamGroup>& param_groups() { return mirrors_.refresh(*this); } \
    std::vector<kiln::optim::ParamGroup>& kiln_param_groups() {                          \
      mirrors_.write_back(*this);                                                        \
      return kiln::optim::Name::param_groups();                                          \
    }                                                                                    \
    void step() override {                                                               \
      mirrors_.write_back(*this);                                                        \
      kiln::optim::Name::step();                                                         \
    }                                                                                    \
                                                                                         \
   private:                                                                              \
    detail::MirroredParamGroups<Name##Options> mirrors_;                                 \
  }
KILN_TORCH_OPTIMIZER(SGD);
KILN_TORCH_OPTIMIZER(Adam);
KILN_TORCH_OPTIMIZER(AdamW);
KILN_TORCH_OPTIMIZER(RMSprop);
KILN_TORCH_OPTIMIZER(Adagrad);
#undef KILN_TORCH_OPTIMIZER

// LBFGS: one parameter group only; step(closure) returns the loss of its first evaluation.
//   torch::optim::LBFGS opt(params, torch::optim::LBFGSOptions(1).line_search_fn("strong_wolfe"));
//   opt.step([&] { opt.zero_grad(); auto loss = f(x); loss.backward(); return loss; });
using LossClosure = std::function<Tensor()>;

class LBFGSOptions : public OptimizerOptions {
 public:
  LBFGSOptions(double lr = 1) : lr_(lr) {}  // NOLINT: implicit, as LibTorch's
  TORCH_ARG(double, lr);
  TORCH_ARG(int64_t, max_iter) = 20;
  TORCH_ARG(std::optional<int64_t>, max_eval) = std::nullopt;  // max_iter * 5 / 4
  TORCH_ARG(double, tolerance_grad) = 1e-7;
  TORCH_ARG(double, tolerance_change) = 1e-9;
  TORCH_ARG(int64_t, history_size) = 100;
  TORCH_ARG(std::optional<std::string>, line_search_fn) = std::nullopt;  // or "strong_wolfe"

 public:
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  void write_to(kiln::optim::ParamGroup& group) const override;
  void read_from(const kiln::optim::ParamGroup& group) override;
  kiln::optim::LBFGSOptions kiln_options() const {
    return {.lr = lr_,
            .max_iter = max_iter_,
            .max_eval = max_eval_.value_or(-1),
            .tolerance_grad = tolerance_grad_,
            .tolerance_change = tolerance_change_,
            .history_size = history_size_,
            .line_search_fn = line_search_fn_.value_or("")};
  }
};

class LBFGS : public kiln::optim::LBFGS {
 public:
  explicit LBFGS(std::vector<Tensor> params, const LBFGSOptions& defaults = {})
      : kiln::optim::LBFGS(std::move(params), defaults.kiln_options()) {}
  explicit LBFGS(const std::vector<OptimizerParamGroup>& groups, const LBFGSOptions& defaults = {})
      : kiln::optim::LBFGS(kiln_groups(groups), defaults.kiln_options()) {}
  // LibTorch's param groups (See Note [LibTorch's param groups over Kiln's]).
  std::vector<OptimizerParamGroup>& param_groups() { return mirrors_.refresh(*this); }
  std::vector<kiln::optim::ParamGroup>& kiln_param_groups() {
    mirrors_.write_back(*this);
    return kiln::optim::LBFGS::param_groups();
  }
  Tensor step(const LossClosure& closure) {
    mirrors_.write_back(*this);
    return kiln::optim::LBFGS::step(closure);
  }

 private:
  detail::MirroredParamGroups<LBFGSOptions> mirrors_;
};

// LibTorch's StepLR(optimizer, step_size, gamma): Kiln's.
using kiln::optim::StepLR;

}  // namespace torch::optim
