// torch::nn::Embedding over Kiln's (kiln/nn/embedding.h). Kiln's embedding has no max_norm
// renormalization, frequency-scaled gradients or sparse gradients: those options raise
// NotImplementedError when set.
#pragma once

#include <cstdint>
#include <optional>

#include "kiln/nn/embedding.h"
#include "kiln/tensor.h"
#include "kiln/torch/arg.h"
#include "kiln/torch/module_holder.h"

namespace torch::nn {

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  TORCH_ARG(int64_t, num_embeddings);
  TORCH_ARG(int64_t, embedding_dim);
  TORCH_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  TORCH_ARG(std::optional<double>, max_norm) = std::nullopt;
  TORCH_ARG(double, norm_type) = 2.;
  TORCH_ARG(bool, scale_grad_by_freq) = false;
  TORCH_ARG(bool, sparse) = false;
  // A weight to use instead of a freshly drawn one: (num_embeddings, embedding_dim).
  TORCH_ARG(kiln::Tensor, _weight) = kiln::Tensor();
};

struct EmbeddingFromPretrainedOptions {
  TORCH_ARG(bool, freeze) = true;
  TORCH_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  TORCH_ARG(std::optional<double>, max_norm) = std::nullopt;
  TORCH_ARG(double, norm_type) = 2.;
  TORCH_ARG(bool, scale_grad_by_freq) = false;
  TORCH_ARG(bool, sparse) = false;
};

class EmbeddingImpl : public kiln::nn::Embedding {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<EmbeddingImpl>(options));
  }
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  // ShapeError when _weight is not (num_embeddings, embedding_dim).
  explicit EmbeddingImpl(EmbeddingOptions options);

  EmbeddingOptions options;
};

// LibTorch's Embedding holder, with from_pretrained.
class Embedding : public ModuleHolder<EmbeddingImpl> {
 public:
  using ModuleHolder<EmbeddingImpl>::ModuleHolder;
  using Impl = EmbeddingImpl;

  // An Embedding whose weight is `embeddings` (2-D), trained unless freeze.
  static Embedding from_pretrained(const kiln::Tensor& embeddings,
                                   const EmbeddingFromPretrainedOptions& options = {});
};

namespace functional {

struct EmbeddingFuncOptions {
  TORCH_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  TORCH_ARG(std::optional<double>, max_norm) = std::nullopt;
  TORCH_ARG(double, norm_type) = 2.;
  TORCH_ARG(bool, scale_grad_by_freq) = false;
  TORCH_ARG(bool, sparse) = false;
};

// kiln::embedding(weight, input, padding_idx).
kiln::Tensor embedding(const kiln::Tensor& input, const kiln::Tensor& weight,
                       const EmbeddingFuncOptions& options = {});

}  // namespace functional

}  // namespace torch::nn
