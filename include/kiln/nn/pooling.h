// Pooling layers, as torch.nn.MaxPool2d / AvgPool2d / AdaptiveAvgPool2d. Input [N, C, H, W] or
// [C, H, W]; the ops are in kiln/ops/linalg.h.
#pragma once

#include <optional>

#include "kiln/nn/expanding_array.h"
#include "kiln/nn/module.h"

namespace kiln::nn {

struct MaxPool2dOptions {
  std::optional<ExpandingArray<2>> stride;  // default: kernel_size
  ExpandingArray<2> padding = 0;            // at most half the kernel
  ExpandingArray<2> dilation = 1;
  bool ceil_mode = false;
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(ExpandingArray<2> kernel_size, MaxPool2dOptions options = {});
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const ExpandingArray<2> kernel_size;
  const MaxPool2dOptions options;
};

struct AvgPool2dOptions {
  std::optional<ExpandingArray<2>> stride;  // default: kernel_size
  ExpandingArray<2> padding = 0;
  bool ceil_mode = false;
  bool count_include_pad = true;
  std::optional<int64_t> divisor_override;
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(ExpandingArray<2> kernel_size, AvgPool2dOptions options = {});
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const ExpandingArray<2> kernel_size;
  const AvgPool2dOptions options;
};

// Averages over windows chosen so that the output is [.., output_size].
class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(ExpandingArray<2> output_size);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const ExpandingArray<2> output_size;
};

}  // namespace kiln::nn
