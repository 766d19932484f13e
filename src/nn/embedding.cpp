#include "kiln/nn/embedding.h"

#include "kiln/autograd.h"
#include "kiln/nn/init.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/nn.h"
#include "src/core/shape.h"
#include "src/nn/naming.h"

namespace kiln::nn {
namespace {

std::optional<int64_t> normalized_padding_idx(int64_t num_embeddings,
                                              std::optional<int64_t> padding_idx) {
  if (!padding_idx) return std::nullopt;
  KILN_CHECK(*padding_idx >= -num_embeddings && *padding_idx < num_embeddings, ValueError,
             "Embedding: padding_idx must be within [-{}, {}) (num_embeddings), got {}",
             num_embeddings, num_embeddings, *padding_idx);
  return *padding_idx < 0 ? *padding_idx + num_embeddings : *padding_idx;
}

}  // namespace

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim,
                     std::optional<int64_t> padding_idx)
    : Module("Embedding"),
      num_embeddings(check_positive("Embedding", "num_embeddings", num_embeddings)),
      embedding_dim(check_positive("Embedding", "embedding_dim", embedding_dim)),
      padding_idx(normalized_padding_idx(num_embeddings, padding_idx)),
      weight(register_parameter("weight", empty({num_embeddings, embedding_dim}))) {
  reset_parameters();
}

void Embedding::reset_parameters() {
  init::normal_(weight);
  if (padding_idx) {
    NoGradGuard no_grad;
    weight.select(0, *padding_idx).zero_();
  }
}

Tensor Embedding::forward(const Tensor& indices) {
  return with_context(*this, [&] { return embedding(weight, indices, padding_idx); });
}

std::string Embedding::extra_repr() const {
  std::string s = fmt::format("{}, {}", num_embeddings, embedding_dim);
  if (padding_idx) s += fmt::format(", padding_idx={}", *padding_idx);
  return s;
}

}  // namespace kiln::nn
