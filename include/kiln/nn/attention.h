// MultiheadAttention, as torch.nn.MultiheadAttention (query, key and value of size embed_dim).
#pragma once

#include <memory>
#include <utility>

#include "kiln/nn/linear.h"
#include "kiln/nn/module.h"

namespace kiln::nn {

struct MultiheadAttentionOptions {
  double dropout = 0.0;      // dropout on the attention weights, in training
  bool bias = true;          // biases of the input and output projections
  bool batch_first = false;  // inputs (N, L, E) instead of (L, N, E)
};

// Parameters (PyTorch's names, so state dicts load either way): in_proj_weight (3E, E) holding the
// query, key and value projections, in_proj_bias (3E), and out_proj (Linear E -> E). Initialized
// as PyTorch: xavier_uniform_ in_proj_weight, zero biases, out_proj.weight as Linear.
class MultiheadAttention : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<MultiheadAttention>(embed_dim, num_heads, options));
  }
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, MultiheadAttentionOptions options = {});

  // query (L, N, E), key and value (S, N, E) (batch first: (N, L, E), (N, S, E)); unbatched
  // (L, E), (S, E) also work. Returns (attn_output shaped like query, attn_weights).
  //   key_padding_mask (N, S) or (S): bool, true = ignore that key; or floating, added.
  //   attn_mask (L, S) or (N * num_heads, L, S): bool, true = may NOT attend (the opposite of
  //     scaled_dot_product_attention's bool mask, as in PyTorch); or floating, added.
  //   need_weights: also return the attention weights (N, L, S), averaged over heads unless
  //     average_attn_weights is false ((N, num_heads, L, S)); otherwise the second is undefined.
  std::pair<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& key_padding_mask = {}, bool need_weights = true,
                                    const Tensor& attn_mask = {}, bool average_attn_weights = true);
  // Self-attention without masks: forward(x, x, x).first.
  Tensor forward(const Tensor& input) override;
  void reset_parameters();

  const int64_t embed_dim;
  const int64_t num_heads;
  const int64_t head_dim;
  const MultiheadAttentionOptions options;
  Tensor& in_proj_weight;  // (3 * embed_dim, embed_dim)
  Tensor& in_proj_bias;    // (3 * embed_dim); undefined without bias
  std::shared_ptr<Linear> out_proj;
};

}  // namespace kiln::nn
