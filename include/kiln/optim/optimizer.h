// Optimizer: the base of SGD, Adam, AdamW, RMSprop, Adagrad (src/optim/). Holds parameter groups
// (each with its own learning rate and hyperparameters, as PyTorch's param_groups) and the
// per-parameter state (momentum buffers, moments, step counts).
//
// Note [Tensor learning rate]
// A group's learning rate may live in a 0-dim float64 tensor (ParamGroup::lr_tensor, made by
// Optimizer::use_tensor_lr). The step then reads the rate from the tensor, and set_lr writes into
// it in place, so a compiled optimizer step (issue 4 onwards) sees a changing rate as data, not
// as a constant baked into the graph, and does not recompile when a scheduler changes it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/state_dict.h"
#include "kiln/tensor.h"

namespace kiln::optim {

struct ParamGroup {
  std::vector<Tensor> params;
  double lr = 1e-3;
  // Every other hyperparameter under PyTorch's name: "momentum", "dampening", "weight_decay",
  // "beta1", "beta2" (PyTorch's betas), "eps", "alpha", "initial_lr" (set by LR schedulers), ...
  // Flags are 0/1 ("nesterov", "amsgrad", "maximize").
  std::map<std::string, double> options;
  // See Note [Tensor learning rate]; undefined unless the optimizer uses a tensor lr.
  Tensor lr_tensor;

  bool has(const std::string& name) const { return options.count(name) > 0; }
  double option(const std::string& name) const;  // ValueError naming the option if missing
};

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
  // A new group; options it does not set take the optimizer's defaults.
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
  virtual StateDict state_dict() const;
  // Restores state and hyperparameters; the optimizer must have been built with parameters of the
  // same shapes in the same group structure (ValueError/ShapeError naming the mismatch).
  virtual void load_state_dict(const StateDict& dict);

 protected:
  // `defaults`: the hyperparameters every group gets unless it sets its own.
  Optimizer(std::vector<ParamGroup> groups, double default_lr,
            std::map<std::string, double> defaults);
  // The learning rate the step uses (the tensor's value when there is one).
  double step_lr(const ParamGroup& group) const;

  std::vector<ParamGroup> groups_;
  double default_lr_;
  std::map<std::string, double> defaults_;
  std::map<const TensorImpl*, std::map<std::string, Tensor>> state_;
};

}  // namespace kiln::optim
