// torch::'s neural-network ops with ATen's arguments, over Kiln's ops.
#include "kiln/torch/nn_aten.h"

#include "kiln/error.h"
#include "kiln/nn/dropout.h"
#include "kiln/nn/functional.h"

namespace torch {

namespace kf = kiln::nn::functional;

Tensor leaky_relu(const Tensor& input, const Scalar& negative_slope) {
  return kf::leaky_relu(input, negative_slope.to<double>());
}

Tensor feature_dropout(const Tensor& input, double p, bool train) {
  return kiln::nn::feature_dropout(input, p, train);
}

Tensor batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, bool training,
                  double momentum, double eps, bool /*cudnn_enabled*/) {
  return kiln::batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps);
}

Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps, bool /*cudnn_enable*/) {
  return kiln::layer_norm(input, normalized_shape, weight, bias, eps);
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps, bool /*cudnn_enabled*/) {
  return kiln::group_norm(input, num_groups, weight, bias, eps);
}

Tensor instance_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                     const Tensor& running_mean, const Tensor& running_var, bool use_input_stats,
                     double momentum, double eps, bool /*cudnn_enabled*/) {
  return kiln::instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                             momentum, eps);
}

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx,
                 bool scale_grad_by_freq, bool sparse) {
  KILN_CHECK(!scale_grad_by_freq && !sparse, NotImplementedError,
             "embedding: scale_grad_by_freq and sparse are not supported by Kiln's embedding");
  return kiln::embedding(weight, indices,
                         padding_idx == -1 ? std::nullopt : std::optional<int64_t>(padding_idx));
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, int64_t reduction,
                int64_t ignore_index) {
  return kiln::nll_loss(input, target, weight, reduction_name(reduction), ignore_index);
}

Tensor cross_entropy_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                          int64_t reduction, int64_t ignore_index, double label_smoothing) {
  return kiln::cross_entropy(input, target, weight, reduction_name(reduction), ignore_index,
                             label_smoothing);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            int64_t reduction) {
  return kf::binary_cross_entropy(input, target, weight, reduction_name(reduction));
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight, const Tensor& pos_weight,
                                        int64_t reduction) {
  return kiln::binary_cross_entropy_with_logits(input, target, weight, pos_weight,
                                                reduction_name(reduction));
}

Tensor mse_loss(const Tensor& input, const Tensor& target, int64_t reduction) {
  return kiln::mse_loss(input, target, reduction_name(reduction));
}

Tensor l1_loss(const Tensor& input, const Tensor& target, int64_t reduction) {
  return kf::l1_loss(input, target, reduction_name(reduction));
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, int64_t reduction, double beta) {
  return kf::smooth_l1_loss(input, target, reduction_name(reduction), beta);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, int64_t reduction, double delta) {
  return kf::huber_loss(input, target, reduction_name(reduction), delta);
}

Tensor kl_div(const Tensor& input, const Tensor& target, int64_t reduction, bool log_target) {
  return kf::kl_div(input, target, reduction_name(reduction), log_target);
}

}  // namespace torch
