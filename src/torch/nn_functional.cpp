// torch::nn::functional: LibTorch's options unpacked into Kiln's ops and nn::functional.
#include <fmt/format.h>

#include "kiln/error.h"
#include "kiln/nn/dropout.h"
#include "kiln/nn/functional.h"
#include "kiln/torch/nn_functional.h"
#include "src/core/shape.h"

namespace torch::nn::functional {

using kiln::NotImplementedError;
using kiln::ShapeError;
using kiln::Tensor;
using kiln::ValueError;
namespace kf = kiln::nn::functional;

namespace {

template <size_t D>
Tensor conv(const Tensor& input, const Tensor& weight, const ConvFuncOptions<D>& o) {
  const auto* sizes = std::get_if<ExpandingArray<D>>(&o.padding());
  auto run = [&](const auto& padding) {
    if constexpr (D == 1) {
      return kiln::conv1d(input, weight, o.bias(), o.stride(), padding, o.dilation(), o.groups());
    } else if constexpr (D == 2) {
      return kiln::conv2d(input, weight, o.bias(), o.stride(), padding, o.dilation(), o.groups());
    } else {
      return kiln::conv3d(input, weight, o.bias(), o.stride(), padding, o.dilation(), o.groups());
    }
  };
  if (sizes) return run(kiln::IntArrayRef(*sizes));
  return run(std::holds_alternative<enumtype::kSame>(o.padding()) ? kiln::ConvPadding::Same
                                                                  : kiln::ConvPadding::Valid);
}

// feature_dropout of a batched (N, C, *spatial) or unbatched (C, *spatial) input.
Tensor dropout_nd(const char* name, int64_t spatial_dims, const Tensor& input,
                  const DropoutFuncOptions& o) {
  KILN_CHECK(o.p() >= 0.0 && o.p() <= 1.0, ValueError,
             "{}: probability p must be between 0 and 1, got {}", name, o.p());
  KILN_CHECK(input.defined(), ValueError, "{}: the input is an undefined Tensor", name);
  const int64_t batched = spatial_dims + 2;
  KILN_CHECK(input.dim() == batched || input.dim() == batched - 1, ShapeError,
             "{}: expected a {}-D (C, *spatial) or {}-D (N, C, *spatial) input, got shape {}", name,
             batched - 1, batched, kiln::shape_str(input.sym_sizes()));
  if (input.dim() == batched) return kiln::nn::feature_dropout(input, o.p(), o.training());
  return kiln::nn::feature_dropout(input.unsqueeze(0), o.p(), o.training()).squeeze(0);
}

}  // namespace

// ---- convolution, linear (pooling: nn_pooling.cpp) ----

Tensor conv1d(const Tensor& input, const Tensor& weight, const Conv1dFuncOptions& options) {
  return conv<1>(input, weight, options);
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Conv2dFuncOptions& options) {
  return conv<2>(input, weight, options);
}

Tensor conv3d(const Tensor& input, const Tensor& weight, const Conv3dFuncOptions& options) {
  return conv<3>(input, weight, options);
}

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  return kiln::linear(input, weight, bias);
}

// ---- activations ----

Tensor relu(const Tensor& input, const ReLUFuncOptions&) { return kiln::relu(input); }
Tensor leaky_relu(const Tensor& input, const LeakyReLUFuncOptions& o) {
  return kf::leaky_relu(input, o.negative_slope());
}
Tensor elu(const Tensor& input, const ELUFuncOptions& o) { return kf::elu(input, o.alpha()); }
Tensor gelu(const Tensor& input, const GELUFuncOptions& o) {
  return kiln::gelu(input, o.approximate());
}
Tensor silu(const Tensor& input) { return kiln::silu(input); }
Tensor softplus(const Tensor& input, const SoftplusFuncOptions& o) {
  return kiln::softplus(input, o.beta(), o.threshold());
}
Tensor sigmoid(const Tensor& input) { return kiln::sigmoid(input); }
Tensor tanh(const Tensor& input) { return kiln::tanh(input); }
Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& o) {
  return kiln::softmax(input, o.dim(), o.dtype());
}
Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& o) {
  return kiln::log_softmax(input, o.dim(), o.dtype());
}

// ---- dropout ----

Tensor dropout(const Tensor& input, const DropoutFuncOptions& o) {
  return kiln::dropout(input, o.p(), o.training());
}
Tensor dropout1d(const Tensor& input, const Dropout1dFuncOptions& o) {
  return dropout_nd("dropout1d", 1, input, o);
}
Tensor dropout2d(const Tensor& input, const Dropout2dFuncOptions& o) {
  return dropout_nd("dropout2d", 2, input, o);
}
Tensor dropout3d(const Tensor& input, const Dropout3dFuncOptions& o) {
  return dropout_nd("dropout3d", 3, input, o);
}

// ---- normalization, embedding ----

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& o) {
  KILN_CHECK(o.momentum().has_value(), ValueError,
             "batch_norm: momentum must be a number (a cumulative average needs BatchNorm's "
             "batch count)");
  return kiln::batch_norm(input, running_mean, running_var, o.weight(), o.bias(), o.training(),
                          *o.momentum(), o.eps());
}

Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& o) {
  return kiln::layer_norm(input, o.normalized_shape(), o.weight(), o.bias(), o.eps());
}

Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& o) {
  return kiln::group_norm(input, o.num_groups(), o.weight(), o.bias(), o.eps());
}

Tensor instance_norm(const Tensor& input, const InstanceNormFuncOptions& o) {
  return kiln::instance_norm(input, o.running_mean(), o.running_var(), o.weight(), o.bias(),
                             o.use_input_stats(), o.momentum(), o.eps());
}

Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& o) {
  KILN_CHECK(!o.max_norm() && !o.scale_grad_by_freq() && !o.sparse(), NotImplementedError,
             "embedding: max_norm, scale_grad_by_freq and sparse are not supported by Kiln's "
             "embedding");
  return kiln::embedding(weight, input, o.padding_idx());
}

// ---- pad, normalize, flatten ----

Tensor pad(const Tensor& input, const PadFuncOptions& o) {
  const std::string mode = enumtype::kiln_name(o.mode());
  return kiln::pad(input, o.pad(), mode,
                   mode == "constant" ? std::optional<double>(o.value()) : std::nullopt);
}

Tensor normalize(const Tensor& input, NormalizeFuncOptions o) {
  KILN_CHECK(!o.out().defined(), NotImplementedError,
             "normalize: out= is not supported; use the returned tensor");
  const Tensor norm = kiln::norm(input, o.p(), {o.dim()}, /*keepdim=*/true);
  return input / norm.clamp(o.eps()).expand_as(input);
}

Tensor flatten(const Tensor& input, int64_t start_dim, int64_t end_dim) {
  return input.flatten(start_dim, end_dim);
}

// ---- losses ----

Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& o) {
  return kf::l1_loss(input, target, enumtype::kiln_name(o.reduction()));
}

Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& o) {
  return kiln::mse_loss(input, target, enumtype::kiln_name(o.reduction()));
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& o,
                      double beta) {
  return kf::smooth_l1_loss(input, target, enumtype::kiln_name(o.reduction()),
                            beta != 1. ? beta : o.beta());
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& o) {
  return kf::huber_loss(input, target, enumtype::kiln_name(o.reduction()), o.delta());
}

Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& o) {
  return kf::kl_div(input, target, enumtype::kiln_name(o.reduction()), o.log_target());
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const BinaryCrossEntropyFuncOptions& o) {
  return kf::binary_cross_entropy(input, target, o.weight(), enumtype::kiln_name(o.reduction()));
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& o) {
  return kiln::binary_cross_entropy_with_logits(input, target, o.weight(), o.pos_weight(),
                                                enumtype::kiln_name(o.reduction()));
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& o) {
  return kiln::nll_loss(input, target, o.weight(), enumtype::kiln_name(o.reduction()),
                        o.ignore_index());
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& o) {
  return kiln::cross_entropy(input, target, o.weight(), enumtype::kiln_name(o.reduction()),
                             o.ignore_index(), o.label_smoothing());
}

}  // namespace torch::nn::functional
