// TransformerEncoderLayer, as torch.nn.TransformerEncoderLayer: self-attention and a feed-forward
// block, each with a residual connection, dropout and LayerNorm (after, or before with norm_first).
#pragma once

#include <memory>
#include <string>

#include "kiln/nn/attention.h"
#include "kiln/nn/dropout.h"
#include "kiln/nn/linear.h"
#include "kiln/nn/module.h"
#include "kiln/nn/norm.h"

namespace kiln::nn {

struct TransformerEncoderLayerOptions {
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  std::string activation = "relu";  // "relu" or "gelu"
  double layer_norm_eps = 1e-5;
  bool batch_first = false;  // inputs (N, S, E) instead of (S, N, E)
  bool norm_first = false;   // LayerNorm before each block instead of after the residual sum
};

// Submodules with PyTorch's names: self_attn, linear1, dropout, linear2, norm1, norm2, dropout1,
// dropout2.
class TransformerEncoderLayer : public Module {
 public:
  TransformerEncoderLayer(int64_t d_model, int64_t nhead,
                          TransformerEncoderLayerOptions options = {});

  Tensor forward(const Tensor& src) override;
  // src_mask and src_key_padding_mask as MultiheadAttention's attn_mask and key_padding_mask.
  Tensor forward(const Tensor& src, const Tensor& src_mask,
                 const Tensor& src_key_padding_mask = {});

  const int64_t d_model;
  const int64_t nhead;
  const TransformerEncoderLayerOptions options;
  std::shared_ptr<MultiheadAttention> self_attn;
  std::shared_ptr<Linear> linear1;
  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<Linear> linear2;
  std::shared_ptr<LayerNorm> norm1;
  std::shared_ptr<LayerNorm> norm2;
  std::shared_ptr<Dropout> dropout1;
  std::shared_ptr<Dropout> dropout2;

 private:
  Tensor self_attention_block(const Tensor& x, const Tensor& mask, const Tensor& padding_mask);
  Tensor feed_forward_block(const Tensor& x);
};

}  // namespace kiln::nn
