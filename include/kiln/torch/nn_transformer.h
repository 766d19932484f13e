// torch::nn::MultiheadAttention, TransformerEncoderLayer, TransformerDecoderLayer,
// TransformerEncoder, TransformerDecoder and Transformer over Kiln's (kiln/nn/attention.h,
// kiln/nn/transformer.h, kiln/nn/transformer_stack.h). Their forwards are Kiln's, which take
// LibTorch's arguments:
//
//   auto [out, weights] = mha->forward(q, k, v);          // a std::pair (LibTorch: std::tuple);
//   std::tie(out, weights) = mha->forward(q, k, v, mask);  // std::get<0> works on either
//   auto y = layer->forward(src, src_mask, src_key_padding_mask);
//   torch::nn::TransformerEncoder encoder(torch::nn::TransformerEncoderOptions(layer, 6));
//   auto mask = torch::nn::TransformerImpl::generate_square_subsequent_mask(tgt.size(0));
//   auto out = transformer->forward(src, tgt, {}, mask);
//
// Kiln's attention projects key and value of the query's size with no extra key/value biases:
// kdim or vdim other than embed_dim, add_bias_kv and add_zero_attn raise NotImplementedError, and
// so do a std::function activation of a layer (Kiln's take "relu" or "gelu") and a Transformer's
// custom_encoder or custom_decoder. A stack's `layers` and `norm` and a Transformer's `encoder`
// and `decoder` are Kiln's std::shared_ptr members (LibTorch: a ModuleList holder and AnyModules);
// the copies in `layers` are of torch::nn's layer type
// (`layers->at<TransformerEncoderLayerImpl>(0)`), made as Note [Copies of a layer] in
// kiln/nn/transformer_stack.h says (LibTorch clones).
#pragma once

#include <cstdint>
#include <functional>
#include <variant>

#include "kiln/nn/attention.h"
#include "kiln/nn/transformer.h"
#include "kiln/tensor.h"
#include "kiln/torch/arg.h"
#include "kiln/torch/module_holder.h"
#include "kiln/torch/nn_any_module.h"
#include "kiln/torch/nn_enum.h"

namespace torch::nn {

struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads)
      : embed_dim_(embed_dim), num_heads_(num_heads), kdim_(embed_dim), vdim_(embed_dim) {}
  TORCH_ARG(int64_t, embed_dim);
  TORCH_ARG(int64_t, num_heads);
  TORCH_ARG(double, dropout) = 0.0;
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(bool, add_bias_kv) = false;
  TORCH_ARG(bool, add_zero_attn) = false;
  TORCH_ARG(int64_t, kdim);
  TORCH_ARG(int64_t, vdim);
};

class MultiheadAttentionImpl : public kiln::nn::MultiheadAttention {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<MultiheadAttentionImpl>(options));
  }
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttentionImpl(MultiheadAttentionOptions(embed_dim, num_heads)) {}
  explicit MultiheadAttentionImpl(const MultiheadAttentionOptions& options);

  // LibTorch's options; hides Kiln's (kiln::nn::MultiheadAttention::options).
  MultiheadAttentionOptions options;
};
TORCH_MODULE(MultiheadAttention);

using activation_t = std::variant<enumtype::kReLU, enumtype::kGELU,
                                  std::function<kiln::Tensor(const kiln::Tensor&)>>;

struct TransformerEncoderLayerOptions {
  TransformerEncoderLayerOptions(int64_t d_model, int64_t nhead)
      : d_model_(d_model), nhead_(nhead) {}
  TORCH_ARG(int64_t, d_model);
  TORCH_ARG(int64_t, nhead);
  TORCH_ARG(int64_t, dim_feedforward) = 2048;
  TORCH_ARG(double, dropout) = 0.1;
  TORCH_ARG(activation_t, activation) = torch::kReLU;
};

class TransformerEncoderLayerImpl : public kiln::nn::TransformerEncoderLayer {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<TransformerEncoderLayerImpl>(options));
  }
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerEncoderLayerImpl(TransformerEncoderLayerOptions(d_model, nhead)) {}
  explicit TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options);

  // LibTorch's options; hides Kiln's (kiln::nn::TransformerEncoderLayer::options).
  TransformerEncoderLayerOptions options;
};
TORCH_MODULE(TransformerEncoderLayer);

struct TransformerDecoderLayerOptions {
  TransformerDecoderLayerOptions(int64_t d_model, int64_t nhead)
      : d_model_(d_model), nhead_(nhead) {}
  TORCH_ARG(int64_t, d_model);
  TORCH_ARG(int64_t, nhead);
  TORCH_ARG(int64_t, dim_feedforward) = 2048;
  TORCH_ARG(double, dropout) = 0.1;
  TORCH_ARG(activation_t, activation) = torch::kReLU;
};

class TransformerDecoderLayerImpl : public kiln::nn::TransformerDecoderLayer {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<TransformerDecoderLayerImpl>(options));
  }
  TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerDecoderLayerImpl(TransformerDecoderLayerOptions(d_model, nhead)) {}
  explicit TransformerDecoderLayerImpl(const TransformerDecoderLayerOptions& options);

  // LibTorch's options; hides Kiln's (kiln::nn::TransformerDecoderLayer::options).
  TransformerDecoderLayerOptions options;
};
TORCH_MODULE(TransformerDecoderLayer);

struct TransformerEncoderOptions {
  TransformerEncoderOptions(TransformerEncoderLayer encoder_layer, int64_t num_layers)
      : encoder_layer_(std::move(encoder_layer)), num_layers_(num_layers) {}
  // A layer built from the options, as LibTorch's.
  TransformerEncoderOptions(const TransformerEncoderLayerOptions& encoder_layer_options,
                            int64_t num_layers)
      : encoder_layer_(encoder_layer_options), num_layers_(num_layers) {}
  TORCH_ARG(TransformerEncoderLayer, encoder_layer) = nullptr;
  TORCH_ARG(int64_t, num_layers);
  TORCH_ARG(AnyModule, norm);
};

class TransformerEncoderImpl : public kiln::nn::TransformerEncoder {
 public:
  TransformerEncoderImpl(TransformerEncoderLayer encoder_layer, int64_t num_layers)
      : TransformerEncoderImpl(TransformerEncoderOptions(std::move(encoder_layer), num_layers)) {}
  explicit TransformerEncoderImpl(TransformerEncoderOptions options);
  // Clones its layer and its norm.
  std::shared_ptr<kiln::nn::Module> clone() const override;

  // LibTorch's options (the layer given and the norm).
  TransformerEncoderOptions options;
};
TORCH_MODULE(TransformerEncoder);

struct TransformerDecoderOptions {
  TransformerDecoderOptions(TransformerDecoderLayer decoder_layer, int64_t num_layers)
      : decoder_layer_(std::move(decoder_layer)), num_layers_(num_layers) {}
  TransformerDecoderOptions(const TransformerDecoderLayerOptions& decoder_layer_options,
                            int64_t num_layers)
      : decoder_layer_(decoder_layer_options), num_layers_(num_layers) {}
  TORCH_ARG(TransformerDecoderLayer, decoder_layer) = nullptr;
  TORCH_ARG(int64_t, num_layers);
  TORCH_ARG(AnyModule, norm);
};

class TransformerDecoderImpl : public kiln::nn::TransformerDecoder {
 public:
  TransformerDecoderImpl(TransformerDecoderLayer decoder_layer, int64_t num_layers)
      : TransformerDecoderImpl(TransformerDecoderOptions(std::move(decoder_layer), num_layers)) {}
  explicit TransformerDecoderImpl(TransformerDecoderOptions options);
  // Clones its layer and its norm.
  std::shared_ptr<kiln::nn::Module> clone() const override;

  TransformerDecoderOptions options;
};
TORCH_MODULE(TransformerDecoder);

struct TransformerOptions {
  TransformerOptions() = default;
  TransformerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  TransformerOptions(int64_t d_model, int64_t nhead, int64_t num_encoder_layers,
                     int64_t num_decoder_layers)
      : d_model_(d_model),
        nhead_(nhead),
        num_encoder_layers_(num_encoder_layers),
        num_decoder_layers_(num_decoder_layers) {}
  TORCH_ARG(int64_t, d_model) = 512;
  TORCH_ARG(int64_t, nhead) = 8;
  TORCH_ARG(int64_t, num_encoder_layers) = 6;
  TORCH_ARG(int64_t, num_decoder_layers) = 6;
  TORCH_ARG(int64_t, dim_feedforward) = 2048;
  TORCH_ARG(double, dropout) = 0.1;
  TORCH_ARG(activation_t, activation) = torch::kReLU;
  TORCH_ARG(AnyModule, custom_encoder);
  TORCH_ARG(AnyModule, custom_decoder);
};

// generate_square_subsequent_mask is Kiln's static member (TransformerImpl::... as in LibTorch).
class TransformerImpl : public kiln::nn::Transformer {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<TransformerImpl>(options));
  }
  explicit TransformerImpl(TransformerOptions options);

  // LibTorch's options; hides Kiln's (kiln::nn::Transformer::options).
  TransformerOptions options;
};
TORCH_MODULE(Transformer);

}  // namespace torch::nn
