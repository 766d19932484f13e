// What a factory does with TensorOptions beyond dtype and device.
#pragma once

#include "kiln/tensor.h"
#include "kiln/tensor_options.h"

namespace kiln {

// A factory's result, made a leaf that requires grad when options.requires_grad_ is set (as
// `torch::ones({2}, torch::requires_grad())`); DTypeError for a dtype that cannot require grad.
inline Tensor with_requires_grad(Tensor t, const TensorOptions& options) {
  if (options.requires_grad_) t.requires_grad_(true);
  return t;
}

}  // namespace kiln
