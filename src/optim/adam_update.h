// The update Adam and AdamW share (src/optim/adam.cpp); not public API.
#pragma once

#include <map>
#include <string>

#include "kiln/optim/optimizer.h"
#include "kiln/tensor.h"

namespace kiln::optim {

struct AdamHyperparameters {
  double lr;
  double beta1;
  double beta2;
  double eps;
  double weight_decay;
  bool amsgrad;
  bool maximize;
  // AdamW: p *= 1 - lr * weight_decay; Adam: g += weight_decay * p.
  bool decoupled_weight_decay;
};

// One Adam(W) update of `param` with gradient `grad`, creating its state on the first call.
void adam_update(std::map<std::string, Tensor>& state, const Tensor& param, const Tensor& grad,
                 const AdamHyperparameters& h);

// AdamOptions and AdamWOptions have the same fields (only AdamW's default weight_decay differs),
// so the option handling is written once for both.
template <typename Options>
std::map<std::string, double> adam_option_map(const Options& o) {
  return {{"beta1", o.betas.first},
          {"beta2", o.betas.second},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"amsgrad", o.amsgrad ? 1.0 : 0.0},
          {"maximize", o.maximize ? 1.0 : 0.0}};
}

template <typename Options>
Options adam_group_options(const ParamGroup& group) {
  return {.lr = group.lr,
          .betas = {group.option("beta1"), group.option("beta2")},
          .eps = group.option("eps"),
          .weight_decay = group.option("weight_decay"),
          .amsgrad = group.option("amsgrad") != 0,
          .maximize = group.option("maximize") != 0};
}

// `check(ok, option, requirement)` reports an invalid option (Optimizer::check_option).
template <typename Options, typename Check>
void check_adam_options(const Options& o, Check&& check) {
  check(o.betas.first >= 0 && o.betas.first < 1, "beta1", "in [0, 1)");
  check(o.betas.second >= 0 && o.betas.second < 1, "beta2", "in [0, 1)");
  check(o.eps >= 0, "eps", ">= 0");
  check(o.weight_decay >= 0, "weight_decay", ">= 0");
}

template <typename Options>
AdamHyperparameters adam_hyperparameters(const Options& o, double lr, bool decoupled) {
  return {.lr = lr,
          .beta1 = o.betas.first,
          .beta2 = o.betas.second,
          .eps = o.eps,
          .weight_decay = o.weight_decay,
          .amsgrad = o.amsgrad,
          .maximize = o.maximize,
          .decoupled_weight_decay = decoupled};
}

}  // namespace kiln::optim
