// LibTorch's neural-network ops in namespace torch (ATen's: torch::relu, torch::max_pool2d,
// torch::nll_loss, ...). Where Kiln's op has ATen's signature it is brought in by a
// using-declaration, so torch::relu and kiln::relu are one function and an unqualified call
// (found through kiln::Tensor's namespace) is not ambiguous. The rest take ATen's arguments,
// reductions as torch::Reduction::Mean etc. (int64_t), and call Kiln's ops: those are distinct
// from Kiln's overloads of the same name, so an unqualified call with only the leading
// arguments (`nll_loss(x, y)` under `using namespace torch`) is ambiguous; qualify it.
#pragma once

#include <cstdint>

#include "kiln/ops/linalg.h"
#include "kiln/ops/nn.h"
#include "kiln/ops/random.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/unary.h"
#include "kiln/tensor.h"
#include "kiln/torch/types.h"

namespace torch {

// ---- activations ----
using kiln::gelu;
using kiln::log_softmax;
using kiln::relu;
using kiln::sigmoid;
using kiln::silu;
using kiln::softmax;
using kiln::softplus;
using kiln::tanh;
// x for x > 0, negative_slope * x otherwise.
Tensor leaky_relu(const Tensor& input, const Scalar& negative_slope = 0.01);

// ---- linear, convolution, pooling ----
using kiln::adaptive_avg_pool1d;
using kiln::adaptive_avg_pool2d;
using kiln::adaptive_avg_pool3d;
using kiln::avg_pool1d;
using kiln::avg_pool2d;
using kiln::avg_pool3d;
using kiln::conv1d;
using kiln::conv2d;
using kiln::conv3d;
using kiln::linear;
// (an int kernel works: torch::max_pool2d(x, 2)). The _with_indices pools and the adaptive max
// pools return a std::pair (ATen: a std::tuple); std::get, std::tie and structured bindings read
// either.
using kiln::adaptive_max_pool1d;
using kiln::adaptive_max_pool2d;
using kiln::adaptive_max_pool3d;
using kiln::max_pool1d;
using kiln::max_pool1d_with_indices;
using kiln::max_pool2d;
using kiln::max_pool2d_with_indices;
using kiln::max_pool3d;
using kiln::max_pool3d_with_indices;

// ---- upsampling and pixel shuffle (ATen's signatures; F::interpolate picks one) ----
using kiln::_upsample_nearest_exact1d;
using kiln::_upsample_nearest_exact2d;
using kiln::_upsample_nearest_exact3d;
using kiln::pixel_shuffle;
using kiln::pixel_unshuffle;
using kiln::upsample_bicubic2d;
using kiln::upsample_bilinear2d;
using kiln::upsample_linear1d;
using kiln::upsample_nearest1d;
using kiln::upsample_nearest2d;
using kiln::upsample_nearest3d;
using kiln::upsample_trilinear3d;

// ---- dropout ----
// torch::dropout(x, p, train).
using kiln::dropout;
// Channel dropout of (N, C, *): kiln::nn::feature_dropout.
Tensor feature_dropout(const Tensor& input, double p, bool train);

// ---- normalization and embedding, in ATen's argument order ----
Tensor batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, bool training,
                  double momentum, double eps, bool cudnn_enabled);
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5, bool cudnn_enable = true);
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5, bool cudnn_enabled = true);
Tensor instance_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                     const Tensor& running_mean, const Tensor& running_var, bool use_input_stats,
                     double momentum, double eps, bool cudnn_enabled);
// padding_idx -1: none (ATen's convention; Kiln's negative padding_idx counts from the end).
// scale_grad_by_freq and sparse raise NotImplementedError.
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1,
                 bool scale_grad_by_freq = false, bool sparse = false);

// ---- losses (reduction: torch::Reduction::None, Mean or Sum) ----
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                int64_t reduction = Reduction::Mean, int64_t ignore_index = -100);
Tensor cross_entropy_loss(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                          int64_t reduction = Reduction::Mean, int64_t ignore_index = -100,
                          double label_smoothing = 0.0);
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = {},
                            int64_t reduction = Reduction::Mean);
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight = {}, const Tensor& pos_weight = {},
                                        int64_t reduction = Reduction::Mean);
Tensor mse_loss(const Tensor& input, const Tensor& target, int64_t reduction = Reduction::Mean);
Tensor l1_loss(const Tensor& input, const Tensor& target, int64_t reduction = Reduction::Mean);
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      int64_t reduction = Reduction::Mean, double beta = 1.0);
Tensor huber_loss(const Tensor& input, const Tensor& target, int64_t reduction = Reduction::Mean,
                  double delta = 1.0);
Tensor kl_div(const Tensor& input, const Tensor& target, int64_t reduction = Reduction::Mean,
              bool log_target = false);

}  // namespace torch
