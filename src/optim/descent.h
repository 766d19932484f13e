// Pieces shared by the optimizers' steps (src/optim/*.cpp); not public API.
#pragma once

#include <map>
#include <string>

#include "kiln/tensor.h"

namespace kiln::optim {

// The descent direction most optimizers start from: the gradient (negated when `maximize`) plus
// `weight_decay` * param. Without weight decay this is the gradient itself, not a copy, and
// `sign` is -1 when maximizing: the caller folds the sign into the scalar factor of the op that
// first reads the gradient, so a step allocates no negated gradient and its state holds exactly
// what PyTorch's does. With weight decay, `grad` is a new tensor and `sign` is 1.
struct DescentDirection {
  Tensor grad;
  double sign = 1;
};

inline DescentDirection descent_direction(const Tensor& grad, const Tensor& param,
                                          double weight_decay, bool maximize) {
  if (weight_decay == 0) return {grad, maximize ? -1.0 : 1.0};
  if (!maximize) return {grad.add(param, weight_decay), 1.0};
  Tensor direction = grad.neg();
  direction.add_(param, weight_decay);
  return {direction, 1.0};
}

// The state entry `name`, made by `make()` the first time it is asked for.
template <typename Make>
const Tensor& state_entry(std::map<std::string, Tensor>& state, const std::string& name,
                          Make make) {
  auto it = state.find(name);
  if (it == state.end()) it = state.emplace(name, make()).first;
  return it->second;
}

// Adds one to a step counter and returns the new count. Counters are 0-dim float32 tensors, as
// PyTorch's "step" state.
inline double increment_step(const Tensor& step) {
  step.add_(1);
  return step.item<double>();
}

}  // namespace kiln::optim
