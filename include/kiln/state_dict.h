// StateDict: the saved state of a module, optimizer or LR scheduler. Tensors by name (parameters,
// buffers, optimizer moments) and non-tensor values as text (hyperparameters, step counts, JSON
// lists). Checkpoints (src/io) store several StateDicts in one safetensors file.
#pragma once

#include <map>
#include <string>

#include "kiln/tensor.h"

namespace kiln {

struct StateDict {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> values;

  bool empty() const { return tensors.empty() && values.empty(); }
};

}  // namespace kiln
