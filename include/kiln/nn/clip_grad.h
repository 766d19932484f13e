// Gradient clipping, as torch.nn.utils.clip_grad_norm_ / clip_grad_value_. Both modify the .grad()
// of the given parameters in place (under NoGradGuard); parameters without a gradient are skipped.
#pragma once

#include <limits>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::nn {

inline constexpr double kInfNorm = std::numeric_limits<double>::infinity();

// Scales all gradients together so that their total norm (the norm_type-norm of the vector of
// per-gradient norms; kInfNorm for the largest absolute value) is at most max_norm: each is
// multiplied by min(1, max_norm / (total + 1e-6)). Returns the total norm before clipping as a
// 0-dim tensor (the gradients' dtype; float32 when there are none). A NaN or infinite total raises
// ValueError when error_if_nonfinite, and otherwise makes the gradients NaN, as in PyTorch.
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm,
                       double norm_type = 2.0, bool error_if_nonfinite = false);

// Clamps every gradient element to [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

}  // namespace kiln::nn
