// Embedding, as torch.nn.Embedding: a lookup table of num_embeddings rows of embedding_dim.
#pragma once

#include <optional>

#include "kiln/nn/module.h"

namespace kiln::nn {

// forward(indices) -> indices.shape + [embedding_dim], for integer indices in [0, num_embeddings).
// The weight starts as N(0, 1), with the padding_idx row (if any) zero; that row gets no gradient.
class Embedding : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<Embedding>(num_embeddings, embedding_dim, padding_idx));
  }
  Embedding(int64_t num_embeddings, int64_t embedding_dim,
            std::optional<int64_t> padding_idx = std::nullopt);
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;
  void reset_parameters();

  const int64_t num_embeddings;
  const int64_t embedding_dim;
  const std::optional<int64_t> padding_idx;  // normalized to [0, num_embeddings)
  Tensor& weight;                            // [num_embeddings, embedding_dim]
};

}  // namespace kiln::nn
