// Linear and Identity, as torch.nn.Linear / torch.nn.Identity.
#pragma once

#include "kiln/nn/module.h"

namespace kiln::nn {

// y = x W^T + b for x (*, in_features): weight (out_features, in_features), bias (out_features).
// Initialized as PyTorch: W ~ kaiming_uniform_(a = sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in)), and
// b ~ U(-1/sqrt(in), 1/sqrt(in)).
class Linear : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<Linear>(in_features, out_features, bias.defined()));
  }
  Linear(int64_t in_features, int64_t out_features, bool bias = true);

  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  // Draws fresh weights from the default generator (kiln::manual_seed).
  void reset_parameters();

  const int64_t in_features;
  const int64_t out_features;
  Tensor& weight;  // Note [Parameter slots]
  Tensor& bias;    // undefined when bias = false
};

// Returns its input.
class Identity : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<Identity>());
  }
  Identity() : Module("Identity") {}
  Tensor forward(const Tensor& input) override { return input; }
};

}  // namespace kiln::nn
