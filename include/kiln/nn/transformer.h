// The layers of a transformer, as torch.nn.TransformerEncoderLayer and TransformerDecoderLayer:
// self-attention (and, in the decoder, attention over the encoder's output) and a feed-forward
// block, each with a residual connection, dropout and LayerNorm (after, or before with
// norm_first). The stacks of them and the whole encoder-decoder model are in
// kiln/nn/transformer_stack.h, included at the end of this header.
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
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<TransformerEncoderLayer>(d_model, nhead, options));
  }
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

// The decoder layer takes the encoder layer's options (PyTorch's take the same arguments).
using TransformerDecoderLayerOptions = TransformerEncoderLayerOptions;

// Submodules with PyTorch's names, registered in its order: self_attn, multihead_attn, linear1,
// dropout, linear2, norm1, norm2, norm3, dropout1, dropout2, dropout3.
class TransformerDecoderLayer : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<TransformerDecoderLayer>(d_model, nhead, options));
  }
  TransformerDecoderLayer(int64_t d_model, int64_t nhead,
                          TransformerDecoderLayerOptions options = {});

  // tgt (T, N, E) and memory (S, N, E) ((N, T, E), (N, S, E) with batch_first; unbatched (T, E),
  // (S, E)). tgt_mask (T, T) / memory_mask (T, S) and the key padding masks (N, T) / (N, S) are
  // MultiheadAttention's attn_mask and key_padding_mask of the self- and the cross-attention.
  // tgt_is_causal: with no tgt_mask, the self-attention gets the causal mask
  // (generate_square_subsequent_mask(T)); with one, it is only PyTorch's hint that tgt_mask is
  // causal, and tgt_mask is used as given. (PyTorch raises for the flag without a mask.)
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& tgt_key_padding_mask = {},
                 const Tensor& memory_key_padding_mask = {}, bool tgt_is_causal = false);
  // The one-tensor forward raises NotImplementedError: a decoder layer needs memory.
  using Module::forward;

  const int64_t d_model;
  const int64_t nhead;
  const TransformerDecoderLayerOptions options;
  std::shared_ptr<MultiheadAttention> self_attn;
  std::shared_ptr<MultiheadAttention> multihead_attn;
  std::shared_ptr<Linear> linear1;
  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<Linear> linear2;
  std::shared_ptr<LayerNorm> norm1;
  std::shared_ptr<LayerNorm> norm2;
  std::shared_ptr<LayerNorm> norm3;
  std::shared_ptr<Dropout> dropout1;
  std::shared_ptr<Dropout> dropout2;
  std::shared_ptr<Dropout> dropout3;

 private:
  Tensor self_attention_block(const Tensor& x, const Tensor& mask, const Tensor& padding_mask);
  Tensor cross_attention_block(const Tensor& x, const Tensor& memory, const Tensor& mask,
                               const Tensor& padding_mask);
  Tensor feed_forward_block(const Tensor& x);
};

// A float mask of `size` x `size` for causal attention: -inf above the diagonal (position i may
// not attend to j > i), 0 elsewhere; torch.nn.Transformer.generate_square_subsequent_mask. A
// traced sequence length stays symbolic.
Tensor generate_square_subsequent_mask(const SymInt& size, ScalarType dtype = kFloat32);

}  // namespace kiln::nn

#include "kiln/nn/transformer_stack.h"
