// torch::nn's transformer decoder layer, stacks and model (kiln/torch/nn_transformer.h): LibTorch's
// options turned into Kiln's, and the options Kiln has no counterpart for refused.
#include <fmt/format.h>

#include "kiln/error.h"
#include "kiln/torch/nn_transformer.h"

namespace torch::nn {

namespace {

using kiln::NotImplementedError;
using kiln::Tensor;

std::string kiln_activation(const activation_t& activation, std::string_view who) {
  KILN_CHECK(!std::holds_alternative<std::function<Tensor(const Tensor&)>>(activation),
             NotImplementedError,
             "{}: Kiln's layers take the activation torch::kReLU or torch::kGELU, not a function",
             who);
  return std::holds_alternative<enumtype::kGELU>(activation) ? "gelu" : "relu";
}

kiln::nn::TransformerDecoderLayerOptions kiln_options(const TransformerDecoderLayerOptions& o) {
  return {.dim_feedforward = o.dim_feedforward(),
          .dropout = o.dropout(),
          .activation = kiln_activation(o.activation(), "TransformerDecoderLayer")};
}

kiln::nn::TransformerOptions kiln_options(const TransformerOptions& o) {
  KILN_CHECK(o.custom_encoder().is_empty() && o.custom_decoder().is_empty(), NotImplementedError,
             "Transformer: custom_encoder and custom_decoder are not supported by Kiln's "
             "Transformer; build the model from a TransformerEncoder and a TransformerDecoder "
             "instead");
  return {.d_model = o.d_model(),
          .nhead = o.nhead(),
          .num_encoder_layers = o.num_encoder_layers(),
          .num_decoder_layers = o.num_decoder_layers(),
          .dim_feedforward = o.dim_feedforward(),
          .dropout = o.dropout(),
          .activation = kiln_activation(o.activation(), "Transformer")};
}

}  // namespace

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(
    const TransformerDecoderLayerOptions& options)
    : kiln::nn::TransformerDecoderLayer(options.d_model(), options.nhead(), kiln_options(options)),
      options(options) {}

// The copies in `layers` are torch::nn layers built from the given layer's LibTorch options, so
// that they keep its type (See Note [Copies of a layer] in kiln/nn/transformer_stack.h).
TransformerEncoderImpl::TransformerEncoderImpl(TransformerEncoderOptions options)
    : kiln::nn::TransformerEncoder(
          *options.encoder_layer(), options.num_layers(), options.norm().ptr(),
          [&options] {
            return std::make_shared<TransformerEncoderLayerImpl>(options.encoder_layer()->options);
          }),
      options(std::move(options)) {}

std::shared_ptr<kiln::nn::Module> TransformerEncoderImpl::clone() const {
  TransformerEncoderOptions copied = options;
  copied.encoder_layer(TransformerEncoderLayer(
      std::dynamic_pointer_cast<TransformerEncoderLayerImpl>(options.encoder_layer()->clone())));
  if (!options.norm().is_empty()) copied.norm(options.norm().clone());
  return finish_clone(std::make_shared<TransformerEncoderImpl>(std::move(copied)));
}

TransformerDecoderImpl::TransformerDecoderImpl(TransformerDecoderOptions options)
    : kiln::nn::TransformerDecoder(
          *options.decoder_layer(), options.num_layers(), options.norm().ptr(),
          [&options] {
            return std::make_shared<TransformerDecoderLayerImpl>(options.decoder_layer()->options);
          }),
      options(std::move(options)) {}

std::shared_ptr<kiln::nn::Module> TransformerDecoderImpl::clone() const {
  TransformerDecoderOptions copied = options;
  copied.decoder_layer(TransformerDecoderLayer(
      std::dynamic_pointer_cast<TransformerDecoderLayerImpl>(options.decoder_layer()->clone())));
  if (!options.norm().is_empty()) copied.norm(options.norm().clone());
  return finish_clone(std::make_shared<TransformerDecoderImpl>(std::move(copied)));
}

TransformerImpl::TransformerImpl(TransformerOptions options)
    : kiln::nn::Transformer(kiln_options(options)), options(std::move(options)) {}

}  // namespace torch::nn
