// Dropout, as torch.nn.Dropout: active only in training mode.
#pragma once

#include "kiln/generator.h"
#include "kiln/nn/module.h"

namespace kiln::nn {

// In training, zeroes each element with probability p and scales the others by 1 / (1 - p); in
// eval mode returns its input. Draws from `generator`, or the default generator when null (seed
// it with kiln::manual_seed for reproducible masks). ValueError for p outside [0, 1].
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, Generator* generator = nullptr);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const double p;

 private:
  Generator* generator_;
};

}  // namespace kiln::nn
