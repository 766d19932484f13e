// Optimizer: the base of SGD, Adam, AdamW, RMSprop, Adagrad (src/optim/). Holds parameter groups
// (each with its own learning rate and hyperparameters, as PyTorch's param_groups) and the
// per-parameter state (momentum buffers, moments, step counts).
//
// Note [Tensor learning rate]
// A group's learning rate may live in a 0-dim float64 tensor (ParamGroup::lr_tensor, made by
// Optimizer::use_tensor_lr). The step then reads the rate from the tensor, and set_lr writes into
// it in place, so a compiled optimizer step (issue 4 onwards) sees a changing rate as data, not
// as a constant baked into the graph, and does not recompile when a scheduler changes it. The
// rate can be written in three ways: set_lr (both), the tensor as data (fill_), or the double
// directly (`param_groups()[g].lr = 0`, PyTorch's param_groups[g]["lr"] = 0). current_lr()
// decides: when the two disagree, the one that moved away from the value they last agreed on
// (ParamGroup::lr_agreed) is the rate. The eager steps read current_lr() through step_lr(), and a
// compiled step copies a directly written double into the tensor before its graph runs.
#pragma once

#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/state_dict.h"
#include "kiln/tensor.h"

namespace kiln::optim {

struct ParamGroup {
  std::vector<Tensor> params;
  // NaN (the default) means "the optimizer's lr"; every group added to an optimizer holds a number.
  double lr = std::numeric_limits<double>::quiet_NaN();
  // Every other hyperparameter under PyTorch's name: "momentum", "dampening", "weight_decay",
  // "beta1", "beta2" (PyTorch's betas), "eps", "alpha", "initial_lr" (set by LR schedulers), ...
  // Flags are 0/1 ("nesterov", "amsgrad", "maximize"). A group built by hand may set some of them
  // to override the optimizer's defaults, e.g. {.params = {bias}, .options = {{"weight_decay",
  // 0}}}.
  std::map<std::string, double> options;
  // See Note [Tensor learning rate]; undefined unless the optimizer uses a tensor lr.
  Tensor lr_tensor;
  // The rate lr and lr_tensor last held together (set_lr, use_tensor_lr); NaN if never.
  double lr_agreed = std::numeric_limits<double>::quiet_NaN();

  bool has(const std::string& name) const { return options.count(name) > 0; }
  double option(const std::string& name) const;  // ValueError naming the option if missing
};

// The group's learning rate (Note [Tensor learning rate]).
double current_lr(const ParamGroup& group);

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient (runs under NoGradGuard).
  virtual void step() = 0;
  // "SGD", "Adam", ...
  virtual std::string name() const = 0;

  // Clears gradients: set_to_none=true drops them (PyTorch's default), false fills zeros.
  void zero_grad(bool set_to_none = true);

  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  // A new group; the lr and options it does not set take the optimizer's defaults. Invalid
  // hyperparameters raise ValueError naming the option, and the group is not added.
  void add_param_group(ParamGroup group);

  double lr(size_t group) const { return groups_.at(group).lr; }
  // Sets the rate (and the group's lr tensor in place, if it has one).
  void set_lr(size_t group, double lr);
  // Switches every group to a tensor learning rate (Note [Tensor learning rate]).
  void use_tensor_lr();

  // Per-parameter state ("momentum_buffer", "exp_avg", "step", ...), created on first step.
  std::map<std::string, Tensor>& state(const Tensor& param);
  const std::map<std::string, Tensor>* find_state(const Tensor& param) const;

  // tensors "state.<i>.<name>" (i counts parameters across groups in order), values
  // "param_groups.<g>.lr", "param_groups.<g>.<option>", "param_groups.<g>.params" (the indices).
  // As PyTorch's, the state tensors are the optimizer's own (not copies): save or load the dict
  // before the next step.
  virtual StateDict state_dict() const;
  // Restores state (copied) and hyperparameters; the optimizer must have been built with
  // parameters of the same shapes in the same group structure (ValueError/ShapeError naming the
  // mismatch). A dict that fails a check leaves the optimizer unchanged.
  virtual void load_state_dict(const StateDict& dict);

 protected:
  // `defaults`: the hyperparameters every group gets unless it sets its own. Virtual calls don't
  // reach the derived class from here, so derived constructors call check_groups() themselves.
  Optimizer(std::vector<ParamGroup> groups, double default_lr,
            std::map<std::string, double> defaults);
  // One group of `params`, taking every hyperparameter from the optimizer's defaults.
  static std::vector<ParamGroup> single_group(std::vector<Tensor> params);

  // Validates one group's hyperparameters (ValueError naming the option). The base checks lr;
  // optimizers extend it with their options, calling the base first.
  virtual void check_group(const ParamGroup& group, size_t index) const;
  void check_groups() const;
  // ValueError "<name>: invalid <option> <value> in parameter group <index> (must be
  // <requirement>)" unless `ok`.
  void check_option(bool ok, const ParamGroup& group, size_t index, std::string_view option,
                    std::string_view requirement) const;

  // The learning rate the step uses (the tensor's value when there is one).
  double step_lr(const ParamGroup& group) const;

  std::vector<ParamGroup> groups_;
  double default_lr_;
  std::map<std::string, double> defaults_;
  std::map<const TensorImpl*, std::map<std::string, Tensor>> state_;

 private:
  // Checks the parameters and fills in the defaults; no hyperparameter checks (see the
  // constructor).
  void append_group(ParamGroup group);
};

}  // namespace kiln::optim

// The optimizers, so that including this header is enough to use any of them.
#include "kiln/optim/adagrad.h"
#include "kiln/optim/adam.h"
#include "kiln/optim/adamw.h"
#include "kiln/optim/lbfgs.h"
#include "kiln/optim/rmsprop.h"
#include "kiln/optim/sgd.h"
