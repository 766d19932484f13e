// Neural-network ops, as torch.nn.functional: normalizations, upsampling, pixel shuffle, embedding,
// attention and losses.
// Optional tensors are passed as an undefined Tensor (`{}`). Floating inputs (float16,
// bfloat16, float32, float64) unless said otherwise; reduced floats compute in float.
#pragma once

#include <optional>
#include <string_view>
#include <tuple>

#include "kiln/tensor.h"

namespace kiln {

// ---- normalization ----

// Normalizes over the trailing dims given by normalized_shape: (x - mean) / sqrt(var + eps)
// (biased variance), then * weight + bias (both of shape normalized_shape, optional).
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
// layer_norm that also returns the per-row mean and rstd = 1 / sqrt(var + eps), shaped like the
// input with the normalized dims set to 1 (what the backward needs).
std::tuple<Tensor, Tensor, Tensor> native_layer_norm(const Tensor& input,
                                                     IntArrayRef normalized_shape,
                                                     const Tensor& weight = {},
                                                     const Tensor& bias = {}, double eps = 1e-5);

// input (N, C), (N, C, L) or (N, C, H, W). training: normalizes with the batch statistics and,
// when given, updates running_mean/running_var in place (r = (1 - momentum) r + momentum stat,
// with the unbiased variance; their version counters are bumped). Otherwise normalizes with the
// running statistics, which are then required.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = {}, const Tensor& bias = {}, bool training = false,
                  double momentum = 0.1, double eps = 1e-5);
// (output, save_mean, save_invstd); the saved statistics are empty in eval mode.
std::tuple<Tensor, Tensor, Tensor> native_batch_norm(const Tensor& input, const Tensor& weight,
                                                     const Tensor& bias, const Tensor& running_mean,
                                                     const Tensor& running_var, bool training,
                                                     double momentum, double eps);

// input (N, C, *): statistics over each sample's groups of C / num_groups channels; weight and
// bias are per channel (C).
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
// (output, mean (N, num_groups), rstd (N, num_groups)).
std::tuple<Tensor, Tensor, Tensor> native_group_norm(const Tensor& input, const Tensor& weight,
                                                     const Tensor& bias, int64_t num_groups,
                                                     double eps);

// input (N, C, *) (at least 2 dims): each (sample, channel) plane normalized over its spatial
// values, weight and bias per channel (C). With use_input_stats (the default) the input's
// statistics are used and, when given, running_mean/running_var are updated in place (each
// becomes the mean over the batch of (1 - momentum) r + momentum stat, the variance unbiased);
// without, the running statistics normalize and must be given. As
// torch.nn.functional.instance_norm (Note [Instance norm through batch norm]).
Tensor instance_norm(const Tensor& input, const Tensor& running_mean = {},
                     const Tensor& running_var = {}, const Tensor& weight = {},
                     const Tensor& bias = {}, bool use_input_stats = true, double momentum = 0.1,
                     double eps = 1e-5);

// ---- upsampling (ATen's ops; kiln::nn::functional::interpolate picks one) ----
// input (N, C, *spatial) with 1, 2 or 3 spatial dims (only N may be 0); output_size one positive
// size per spatial dim. A scale is the scale_factor that gave output_size: when given (> 0), the
// source coordinates use 1 / scale instead of in / out, as PyTorch does. The coordinate rules are
// Note [Upsampling coordinates] in src/ops/nn_upsample.cpp. Nearest modes take floating or uint8
// inputs, the interpolating ones floating inputs.

Tensor upsample_nearest1d(const Tensor& input, SymIntArrayRef output_size,
                          std::optional<double> scales = std::nullopt);
Tensor upsample_nearest2d(const Tensor& input, SymIntArrayRef output_size,
                          std::optional<double> scales_h = std::nullopt,
                          std::optional<double> scales_w = std::nullopt);
Tensor upsample_nearest3d(const Tensor& input, SymIntArrayRef output_size,
                          std::optional<double> scales_d = std::nullopt,
                          std::optional<double> scales_h = std::nullopt,
                          std::optional<double> scales_w = std::nullopt);
// Mode "nearest-exact": the input position nearest to the output pixel's center.
Tensor _upsample_nearest_exact1d(const Tensor& input, SymIntArrayRef output_size,
                                 std::optional<double> scales = std::nullopt);
Tensor _upsample_nearest_exact2d(const Tensor& input, SymIntArrayRef output_size,
                                 std::optional<double> scales_h = std::nullopt,
                                 std::optional<double> scales_w = std::nullopt);
Tensor _upsample_nearest_exact3d(const Tensor& input, SymIntArrayRef output_size,
                                 std::optional<double> scales_d = std::nullopt,
                                 std::optional<double> scales_h = std::nullopt,
                                 std::optional<double> scales_w = std::nullopt);
Tensor upsample_linear1d(const Tensor& input, SymIntArrayRef output_size, bool align_corners,
                         std::optional<double> scales = std::nullopt);
Tensor upsample_bilinear2d(const Tensor& input, SymIntArrayRef output_size, bool align_corners,
                           std::optional<double> scales_h = std::nullopt,
                           std::optional<double> scales_w = std::nullopt);
Tensor upsample_bicubic2d(const Tensor& input, SymIntArrayRef output_size, bool align_corners,
                          std::optional<double> scales_h = std::nullopt,
                          std::optional<double> scales_w = std::nullopt);
Tensor upsample_trilinear3d(const Tensor& input, SymIntArrayRef output_size, bool align_corners,
                            std::optional<double> scales_d = std::nullopt,
                            std::optional<double> scales_h = std::nullopt,
                            std::optional<double> scales_w = std::nullopt);

// (*, C r^2, H, W) -> (*, C, H r, W r); ShapeError unless C is divisible by r^2.
Tensor pixel_shuffle(const Tensor& input, int64_t upscale_factor);
// (*, C, H r, W r) -> (*, C r^2, H, W); ShapeError unless H and W are divisible by r.
Tensor pixel_unshuffle(const Tensor& input, int64_t downscale_factor);

// ---- embedding ----

// Rows of weight (num_embeddings, dim) picked by integer indices (any integer dtype): the result
// has shape indices.shape + [dim]. IndexError for an index outside [0, num_embeddings).
// padding_idx (negative counts from the end) only affects the gradient, as in PyTorch.
Tensor embedding(const Tensor& weight, const Tensor& indices,
                 std::optional<int64_t> padding_idx = std::nullopt);

// ---- attention ----

// softmax(q k^T * scale + mask) v for q (..., L, E), k (..., S, E), v (..., S, Ev); batch dims
// broadcast. attn_mask broadcasts to (..., L, S): bool (true = attend) or floating (added).
// is_causal: attend only to keys j <= i. scale defaults to 1 / sqrt(E). A query row with every
// key masked gives zeros (PyTorch's math backend, _safe_softmax). dropout_p must be 0 for now.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = {}, double dropout_p = 0.0,
                                    bool is_causal = false,
                                    std::optional<double> scale = std::nullopt);

// ---- losses ----
// reduction: "mean", "sum" or "none".

// input (C), (N, C) or (N, C, d1, ...) of logits; target class indices (integer, shape without
// the C dim) or class probabilities (floating, input's shape).
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                     std::string_view reduction = "mean", int64_t ignore_index = -100,
                     double label_smoothing = 0.0);
// input of log-probabilities, shapes as cross_entropy with class-index targets.
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                std::string_view reduction = "mean", int64_t ignore_index = -100);
// (input - target)^2; input and target broadcast.
Tensor mse_loss(const Tensor& input, const Tensor& target, std::string_view reduction = "mean");
// -w [pos_weight * t * log sigmoid(x) + (1 - t) * log(1 - sigmoid(x))], computed stably from
// logits; target has input's shape, weight and pos_weight broadcast to it.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight = {}, const Tensor& pos_weight = {},
                                        std::string_view reduction = "mean");

}  // namespace kiln
