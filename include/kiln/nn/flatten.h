// Flatten and Unflatten, as torch.nn.Flatten / torch.nn.Unflatten.
#pragma once

#include <vector>

#include "kiln/nn/module.h"

namespace kiln::nn {

// Merges dims start_dim..end_dim into one (by default every dim after the batch dim).
class Flatten : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<Flatten>(start_dim, end_dim));
  }
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const int64_t start_dim;
  const int64_t end_dim;
};

// Splits dim into `sizes` (one may be -1).
class Unflatten : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<Unflatten>(dim, sizes));
  }
  Unflatten(int64_t dim, std::vector<int64_t> sizes);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const int64_t dim;
  const std::vector<int64_t> sizes;
};

}  // namespace kiln::nn
