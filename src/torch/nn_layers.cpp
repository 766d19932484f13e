// The torch::nn layers whose construction does more than pass LibTorch's options on to Kiln's
// layer: checks of options Kiln has no counterpart for, a given weight, resolved output sizes.
#include <fmt/format.h>

#include "kiln/error.h"
#include "kiln/ops/linalg.h"
#include "kiln/torch/nn_embedding.h"
#include "kiln/torch/nn_transformer.h"
#include "src/core/shape.h"

namespace torch::nn {

namespace {

using kiln::NotImplementedError;
using kiln::ShapeError;
using kiln::Tensor;
using kiln::ValueError;

// NotImplementedError for the options Kiln's embedding does not have.
const EmbeddingOptions& checked(const EmbeddingOptions& o) {
  KILN_CHECK(!o.max_norm() && !o.scale_grad_by_freq() && !o.sparse(), NotImplementedError,
             "Embedding: max_norm, scale_grad_by_freq and sparse are not supported by Kiln's "
             "embedding (got max_norm={}, scale_grad_by_freq={}, sparse={})",
             o.max_norm() ? fmt::format("{}", *o.max_norm()) : "nullopt", o.scale_grad_by_freq(),
             o.sparse());
  return o;
}

kiln::nn::MultiheadAttentionOptions kiln_options(const MultiheadAttentionOptions& o) {
  KILN_CHECK(o.kdim() == o.embed_dim() && o.vdim() == o.embed_dim(), NotImplementedError,
             "MultiheadAttention: Kiln's attention takes keys and values of embed_dim ({}), got "
             "kdim={}, vdim={}",
             o.embed_dim(), o.kdim(), o.vdim());
  KILN_CHECK(!o.add_bias_kv() && !o.add_zero_attn(), NotImplementedError,
             "MultiheadAttention: add_bias_kv and add_zero_attn are not supported by Kiln's "
             "attention");
  return {.dropout = o.dropout(), .bias = o.bias()};
}

kiln::nn::TransformerEncoderLayerOptions kiln_options(const TransformerEncoderLayerOptions& o) {
  KILN_CHECK(!std::holds_alternative<std::function<Tensor(const Tensor&)>>(o.activation()),
             NotImplementedError,
             "TransformerEncoderLayer: Kiln's layer takes the activation torch::kReLU or "
             "torch::kGELU, not a function");
  return {.dim_feedforward = o.dim_feedforward(),
          .dropout = o.dropout(),
          .activation = std::holds_alternative<enumtype::kGELU>(o.activation()) ? "gelu" : "relu"};
}

}  // namespace

EmbeddingImpl::EmbeddingImpl(EmbeddingOptions options)
    : kiln::nn::Embedding(options.num_embeddings(), options.embedding_dim(),
                          checked(options).padding_idx()),
      options(std::move(options)) {
  const Tensor& given = this->options._weight();
  if (!given.defined()) return;
  KILN_CHECK(given.dim() == 2 && given.size(0) == num_embeddings && given.size(1) == embedding_dim,
             ShapeError, "Embedding: _weight must have shape [{}, {}], got {}", num_embeddings,
             embedding_dim, kiln::shape_str(given.sym_sizes()));
  // The given tensor's storage becomes the parameter, as in LibTorch.
  weight = given.detach();
  weight.requires_grad_(true);
}

Embedding Embedding::from_pretrained(const Tensor& embeddings,
                                     const EmbeddingFromPretrainedOptions& options) {
  KILN_CHECK(embeddings.defined() && embeddings.dim() == 2, ValueError,
             "Embedding::from_pretrained: expected a 2-D embeddings tensor, got {}",
             embeddings.defined() ? kiln::shape_str(embeddings.sym_sizes()) : "an undefined one");
  Embedding embedding(EmbeddingOptions(embeddings.size(0), embeddings.size(1))
                          ._weight(embeddings)
                          .padding_idx(options.padding_idx())
                          .max_norm(options.max_norm())
                          .norm_type(options.norm_type())
                          .scale_grad_by_freq(options.scale_grad_by_freq())
                          .sparse(options.sparse()));
  embedding->weight.requires_grad_(!options.freeze());
  return embedding;
}

MultiheadAttentionImpl::MultiheadAttentionImpl(const MultiheadAttentionOptions& options)
    : kiln::nn::MultiheadAttention(options.embed_dim(), options.num_heads(), kiln_options(options)),
      options(options) {}

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(
    const TransformerEncoderLayerOptions& options)
    : kiln::nn::TransformerEncoderLayer(options.d_model(), options.nhead(), kiln_options(options)),
      options(options) {}

}  // namespace torch::nn
