// The update Adam and AdamW share (src/optim/adam.cpp); not public API.
#pragma once

#include <map>
#include <string>

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

}  // namespace kiln::optim
