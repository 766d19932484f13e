#include "kiln/nn/transformer.h"

#include <limits>

#include "kiln/ops/creation.h"
#include "kiln/ops/unary.h"
#include "src/nn/naming.h"

namespace kiln::nn {

namespace {

void check_layer_options(std::string_view who, const TransformerEncoderLayerOptions& options) {
  KILN_CHECK(options.activation == "relu" || options.activation == "gelu", ValueError,
             "{}: activation must be \"relu\" or \"gelu\", got \"{}\"", who, options.activation);
  KILN_CHECK(options.dim_feedforward > 0, ValueError,
             "{}: dim_feedforward must be positive, got {}", who, options.dim_feedforward);
}

MultiheadAttentionOptions attention_options(const TransformerEncoderLayerOptions& options) {
  return {.dropout = options.dropout, .batch_first = options.batch_first};
}

std::shared_ptr<LayerNorm> layer_norm(int64_t d_model, const TransformerEncoderLayerOptions& o) {
  return std::make_shared<LayerNorm>(std::vector<int64_t>{d_model}, o.layer_norm_eps);
}

// linear2(dropout(activation(linear1(x)))), the feed-forward block of both layers.
Tensor feed_forward(const TransformerEncoderLayerOptions& options, Linear& linear1,
                    Dropout& dropout, Linear& linear2, const Tensor& x) {
  Tensor h = linear1.forward(x);
  h = options.activation == "relu" ? relu(h) : gelu(h);
  return linear2.forward(dropout.forward(h));
}

}  // namespace

Tensor generate_square_subsequent_mask(const SymInt& size, ScalarType dtype) {
  KILN_CHECK(size.is_symbolic() || size.expect_int() >= 0, ValueError,
             "generate_square_subsequent_mask: the size must be >= 0, got {}", size.expect_int());
  KILN_CHECK(is_floating(dtype), DTypeError,
             "generate_square_subsequent_mask: the mask holds -inf, so its dtype must be "
             "floating, got {}",
             dtype_name(dtype));
  return full({size, size}, -std::numeric_limits<double>::infinity(), dtype).triu(1);
}

TransformerEncoderLayer::TransformerEncoderLayer(int64_t d_model, int64_t nhead,
                                                 TransformerEncoderLayerOptions options)
    : Module("TransformerEncoderLayer"), d_model(d_model), nhead(nhead), options(options) {
  check_layer_options("TransformerEncoderLayer", options);
  // Registered in PyTorch's order, so that state_dict keys and printouts match.
  self_attn = register_module("self_attn", std::make_shared<MultiheadAttention>(
                                               d_model, nhead, attention_options(options)));
  linear1 = register_module("linear1", std::make_shared<Linear>(d_model, options.dim_feedforward));
  dropout = register_module("dropout", std::make_shared<Dropout>(options.dropout));
  linear2 = register_module("linear2", std::make_shared<Linear>(options.dim_feedforward, d_model));
  norm1 = register_module("norm1", layer_norm(d_model, options));
  norm2 = register_module("norm2", layer_norm(d_model, options));
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
  return dropout2->forward(feed_forward(options, *linear1, *dropout, *linear2, x));
}

TransformerDecoderLayer::TransformerDecoderLayer(int64_t d_model, int64_t nhead,
                                                 TransformerDecoderLayerOptions options)
    : Module("TransformerDecoderLayer"), d_model(d_model), nhead(nhead), options(options) {
  check_layer_options("TransformerDecoderLayer", options);
  // Registered in PyTorch's order, so that state_dict keys and printouts match.
  self_attn = register_module("self_attn", std::make_shared<MultiheadAttention>(
                                               d_model, nhead, attention_options(options)));
  multihead_attn = register_module(
      "multihead_attn",
      std::make_shared<MultiheadAttention>(d_model, nhead, attention_options(options)));
  linear1 = register_module("linear1", std::make_shared<Linear>(d_model, options.dim_feedforward));
  dropout = register_module("dropout", std::make_shared<Dropout>(options.dropout));
  linear2 = register_module("linear2", std::make_shared<Linear>(options.dim_feedforward, d_model));
  norm1 = register_module("norm1", layer_norm(d_model, options));
  norm2 = register_module("norm2", layer_norm(d_model, options));
  norm3 = register_module("norm3", layer_norm(d_model, options));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(options.dropout));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(options.dropout));
  dropout3 = register_module("dropout3", std::make_shared<Dropout>(options.dropout));
}

Tensor TransformerDecoderLayer::forward(const Tensor& tgt, const Tensor& memory,
                                        const Tensor& tgt_mask, const Tensor& memory_mask,
                                        const Tensor& tgt_key_padding_mask,
                                        const Tensor& memory_key_padding_mask, bool tgt_is_causal) {
  check_input_defined(tgt, "tgt");
  check_input_defined(memory, "memory");
  Tensor self_mask = tgt_mask;
  if (tgt_is_causal && !self_mask.defined()) {
    const int64_t time_dim = tgt.dim() == 3 && options.batch_first ? 1 : 0;
    self_mask = generate_square_subsequent_mask(tgt.size(time_dim), tgt.dtype());
  }
  Tensor x = tgt;
  if (options.norm_first) {
    x = x + self_attention_block(norm1->forward(x), self_mask, tgt_key_padding_mask);
    x = x + cross_attention_block(norm2->forward(x), memory, memory_mask, memory_key_padding_mask);
    x = x + feed_forward_block(norm3->forward(x));
  } else {
    x = norm1->forward(x + self_attention_block(x, self_mask, tgt_key_padding_mask));
    x = norm2->forward(x + cross_attention_block(x, memory, memory_mask, memory_key_padding_mask));
    x = norm3->forward(x + feed_forward_block(x));
  }
  return x;
}

Tensor TransformerDecoderLayer::self_attention_block(const Tensor& x, const Tensor& mask,
                                                     const Tensor& padding_mask) {
  return dropout1->forward(
      self_attn->forward(x, x, x, padding_mask, /*need_weights=*/false, mask).first);
}

Tensor TransformerDecoderLayer::cross_attention_block(const Tensor& x, const Tensor& memory,
                                                      const Tensor& mask,
                                                      const Tensor& padding_mask) {
  return dropout2->forward(
      multihead_attn->forward(x, memory, memory, padding_mask, /*need_weights=*/false, mask).first);
}

Tensor TransformerDecoderLayer::feed_forward_block(const Tensor& x) {
  return dropout3->forward(feed_forward(options, *linear1, *dropout, *linear2, x));
}

}  // namespace kiln::nn
