// nn::functional: the functions behind the modules, as torch.nn.functional. The ops of the op table
// (kiln/ops/*.h) are brought in by name, so `namespace F = kiln::nn::functional;` gives them all;
// the rest are compositions of ops defined here, differentiable through the ops they call.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ops/linalg.h"
#include "kiln/ops/nn.h"
#include "kiln/ops/random.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"
#include "kiln/ops/unary.h"
#include "kiln/tensor.h"

namespace kiln::nn::functional {

using kiln::adaptive_avg_pool1d;
using kiln::adaptive_avg_pool2d;
using kiln::adaptive_avg_pool3d;
using kiln::adaptive_max_pool1d;
using kiln::adaptive_max_pool2d;
using kiln::adaptive_max_pool3d;
using kiln::avg_pool1d;
using kiln::avg_pool2d;
using kiln::avg_pool3d;
using kiln::batch_norm;
using kiln::binary_cross_entropy_with_logits;
using kiln::conv1d;
using kiln::conv2d;
using kiln::conv3d;
using kiln::conv_transpose1d;
using kiln::conv_transpose2d;
using kiln::conv_transpose3d;
using kiln::cross_entropy;
using kiln::dropout;
using kiln::embedding;
using kiln::gelu;
using kiln::group_norm;
using kiln::instance_norm;
using kiln::layer_norm;
using kiln::linear;
using kiln::log_softmax;
using kiln::max_pool1d;
using kiln::max_pool1d_with_indices;
using kiln::max_pool2d;
using kiln::max_pool2d_with_indices;
using kiln::max_pool3d;
using kiln::max_pool3d_with_indices;
using kiln::mse_loss;
using kiln::nll_loss;
using kiln::pad;
using kiln::pixel_shuffle;
using kiln::pixel_unshuffle;
using kiln::relu;
using kiln::scaled_dot_product_attention;
using kiln::sigmoid;
using kiln::silu;
using kiln::softmax;
using kiln::softplus;
using kiln::tanh;

// ---- activations ----

// x for x > 0, negative_slope * x otherwise.
Tensor leaky_relu(const Tensor& input, double negative_slope = 0.01);
// x for x > 0, alpha * (exp(x) - 1) otherwise.
Tensor elu(const Tensor& input, double alpha = 1.0);

// ---- losses ----
// reduction: "none", "mean" or "sum" (ValueError naming the loss otherwise). input and target
// broadcast as in PyTorch; shapes that do not broadcast raise ShapeError naming the loss.

Tensor l1_loss(const Tensor& input, const Tensor& target, std::string_view reduction = "mean");
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      std::string_view reduction = "mean", double beta = 1.0);
Tensor huber_loss(const Tensor& input, const Tensor& target, std::string_view reduction = "mean",
                  double delta = 1.0);
// input: probabilities in [0, 1] (ValueError otherwise), target of the same shape; the logs are
// clamped at -100 so that a confident wrong answer gives a large finite loss, as in PyTorch.
// The gradient is the exact derivative, PyTorch's wherever x (1 - x) >= 1e-12. Closer to 0 or 1
// PyTorch divides by 1e-12 instead of x (1 - x), and at exactly 0 or 1 the clamped log here has
// slope 0 (finite, never NaN); through a sigmoid, whose slope vanishes there, both give ~0.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                            std::string_view reduction = "mean");
// input: log-probabilities. Pointwise target * (log(target) - input) (0 where target is 0), or
// exp(target) * (target - input) with log_target. reduction may also be "batchmean" (sum divided
// by input.size(0)).
Tensor kl_div(const Tensor& input, const Tensor& target, std::string_view reduction = "mean",
              bool log_target = false);

// ---- upsampling (src/nn/interpolate.cpp) ----

struct InterpolateOptions {
  // Exactly one of size and scale_factor: one value for every spatial dim or one per dim. A
  // scale factor gives the output size floor(in * scale_factor).
  std::vector<int64_t> size;
  std::vector<double> scale_factor;
  // "nearest", "nearest-exact", "linear" (3-D input), "bilinear" or "bicubic" (4-D),
  // "trilinear" (5-D), or "area" (adaptive average pooling).
  std::string mode = "nearest";
  // Interpolating modes only (false when unset); ValueError for the others, as PyTorch.
  std::optional<bool> align_corners;
  // true: the coordinates use in / out of the computed output size instead of 1 / scale_factor.
  // Not with an explicit size.
  std::optional<bool> recompute_scale_factor;
};

// Resizes the spatial dims of (N, C, *spatial) as torch.nn.functional.interpolate, through the
// upsample_* ops of kiln/ops/nn.h: F::interpolate(x, {.scale_factor = {2}, .mode = "bilinear"}).
Tensor interpolate(const Tensor& input, const InterpolateOptions& options);

}  // namespace kiln::nn::functional
