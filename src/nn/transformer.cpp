#include "kiln/nn/transformer.h"

#include "kiln/ops/unary.h"
#include "src/nn/naming.h"

namespace kiln::nn {

TransformerEncoderLayer::TransformerEncoderLayer(int64_t d_model, int64_t nhead,
                                                 TransformerEncoderLayerOptions options)
    : Module("TransformerEncoderLayer"), d_model(d_model), nhead(nhead), options(options) {
  KILN_CHECK(options.activation == "relu" || options.activation == "gelu", ValueError,
             "TransformerEncoderLayer: activation must be \"relu\" or \"gelu\", got \"{}\"",
             options.activation);
  KILN_CHECK(options.dim_feedforward > 0, ValueError,
             "TransformerEncoderLayer: dim_feedforward must be positive, got {}",
             options.dim_feedforward);
  // Registered in PyTorch's order, so that state_dict keys and printouts match.
  self_attn = register_module("self_attn",
                              std::make_shared<MultiheadAttention>(
                                  d_model, nhead,
                                  MultiheadAttentionOptions{.dropout = options.dropout,
                                                            .batch_first = options.batch_first}));
  linear1 = register_module("linear1", std::make_shared<Linear>(d_model, options.dim_feedforward));
  dropout = register_module("dropout", std::make_shared<Dropout>(options.dropout));
  linear2 = register_module("linear2", std::make_shared<Linear>(options.dim_feedforward, d_model));
  norm1 = register_module(
      "norm1", std::make_shared<LayerNorm>(std::vector<int64_t>{d_model}, options.layer_norm_eps));
  norm2 = register_module(
      "norm2", std::make_shared<LayerNorm>(std::vector<int64_t>{d_model}, options.layer_norm_eps));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(options.dropout));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(options.dropout));
}

Tensor TransformerEncoderLayer::forward(const Tensor& src) { return forward(src, {}, {}); }

Tensor TransformerEncoderLayer::forward(const Tensor& src, const Tensor& src_mask,
                                        const Tensor& src_key_padding_mask) {
  Tensor x = src;
  if (options.norm_first) {
    x = x + self_attention_block(norm1->forward(x), src_mask, src_key_padding_mask);
    x = x + feed_forward_block(norm2->forward(x));
  } else {
    x = norm1->forward(x + self_attention_block(x, src_mask, src_key_padding_mask));
    x = norm2->forward(x + feed_forward_block(x));
  }
  return x;
}

Tensor TransformerEncoderLayer::self_attention_block(const Tensor& x, const Tensor& mask,
                                                     const Tensor& padding_mask) {
  return dropout1->forward(
      self_attn->forward(x, x, x, padding_mask, /*need_weights=*/false, mask).first);
}

Tensor TransformerEncoderLayer::feed_forward_block(const Tensor& x) {
  Tensor h = linear1->forward(x);
  h = options.activation == "relu" ? relu(h) : gelu(h);
  return dropout2->forward(linear2->forward(dropout->forward(h)));
}

}  // namespace kiln::nn
