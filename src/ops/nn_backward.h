// The backward ops of the nn family (src/ops/nn_backward.cpp, nn_attention.cpp): dedicated kernels
// for the gradients of the normalizations, cross_entropy, embedding and attention, called by their
// derivative formulas (src/autograd/formulas/nn.cpp). Not part of the public API: users get these
// gradients through autograd.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <tuple>

#include "kiln/tensor.h"

namespace kiln {

// Which of (grad_input, grad_weight, grad_bias) to compute; the others come back as empty
// tensors of shape [0].
using NormGradMask = std::array<bool, 3>;

// mean/rstd: the statistics native_layer_norm returned.
std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward(
    const Tensor& grad_out, const Tensor& input, IntArrayRef normalized_shape, const Tensor& mean,
    const Tensor& rstd, const Tensor& weight, NormGradMask mask);

// training: mean/invstd are the batch statistics native_batch_norm returned; eval: the running
// mean and 1 / sqrt(running_var + eps).
std::tuple<Tensor, Tensor, Tensor> native_batch_norm_backward(
    const Tensor& grad_out, const Tensor& input, const Tensor& weight, const Tensor& mean,
    const Tensor& invstd, bool training, NormGradMask mask);

std::tuple<Tensor, Tensor, Tensor> native_group_norm_backward(
    const Tensor& grad_out, const Tensor& input, const Tensor& mean, const Tensor& rstd,
    const Tensor& weight, int64_t num_groups, NormGradMask mask);

// d cross_entropy / d input for class-index targets (Note [Cross-entropy gradient]).
Tensor cross_entropy_backward(const Tensor& grad_output, const Tensor& input, const Tensor& target,
                              const Tensor& weight, std::string_view reduction,
                              int64_t ignore_index, double label_smoothing);

// d embedding / d weight: (num_weights, D), the padding_idx row zero.
Tensor embedding_dense_backward(const Tensor& grad_output, const Tensor& indices,
                                int64_t num_weights, std::optional<int64_t> padding_idx);

// The gradients of scaled_dot_product_attention with respect to (query, key, value), for
// dropout_p = 0 (Note [Attention backward] in src/kernels/cpu/attention.cpp), each in the batch
// shape the three broadcast to; those not in output_mask come back as empty [0] tensors. The
// op has no derivative of its own: double backward goes through the formula's composite form.
std::tuple<Tensor, Tensor, Tensor> scaled_dot_product_attention_backward(
    const Tensor& grad_out, const Tensor& query, const Tensor& key, const Tensor& value,
    const Tensor& attn_mask, bool is_causal, std::optional<double> scale,
    std::array<bool, 3> output_mask);

}  // namespace kiln
