// Joining and padding tensors, as in LibTorch: kiln::cat({a, b}, 1), kiln::pad(x, {1, 1}).
// split/chunk/flip/roll/repeat/tril/triu are Tensor methods (kiln/tensor.h).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

// Concatenates along `dim`. Inputs are promoted to a common dtype (as torch.cat); 1-D tensors of
// shape [0] are skipped, as PyTorch still allows for backward compatibility.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Stacks equal-shaped tensors along a new dim.
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// torch.nn.functional.pad: `pad` lists (left, right) pairs starting from the last dim. Modes:
// "constant" (with `value`, default 0), "reflect", "replicate", "circular". Negative padding crops.
Tensor pad(const Tensor& input, IntArrayRef pad, std::string_view mode = "constant",
           std::optional<double> value = std::nullopt);

}  // namespace kiln
