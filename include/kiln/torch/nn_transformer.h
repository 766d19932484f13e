// torch::nn::MultiheadAttention and TransformerEncoderLayer over Kiln's (kiln/nn/attention.h,
// kiln/nn/transformer.h). Their forwards are Kiln's, which take LibTorch's arguments:
//
//   auto [out, weights] = mha->forward(q, k, v);          // a std::pair (LibTorch: std::tuple);
//   std::tie(out, weights) = mha->forward(q, k, v, mask);  // std::get<0> works on either
//   auto y = layer->forward(src, src_mask, src_key_padding_mask);
//
// Kiln's attention projects key and value of the query's size with no extra key/value biases:
// kdim or vdim other than embed_dim, add_bias_kv and add_zero_attn raise NotImplementedError, and
// so does a std::function activation of the encoder layer (Kiln's takes "relu" or "gelu").
#pragma once

#include <cstdint>
#include <functional>
#include <variant>

#include "kiln/nn/attention.h"
#include "kiln/nn/transformer.h"
#include "kiln/tensor.h"
#include "kiln/torch/arg.h"
#include "kiln/torch/module_holder.h"
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
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerEncoderLayerImpl(TransformerEncoderLayerOptions(d_model, nhead)) {}
  explicit TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options);

  // LibTorch's options; hides Kiln's (kiln::nn::TransformerEncoderLayer::options).
  TransformerEncoderLayerOptions options;
};
TORCH_MODULE(TransformerEncoderLayer);

}  // namespace torch::nn
