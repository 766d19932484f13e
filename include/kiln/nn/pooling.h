// Pooling layers, as torch.nn.MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d and
// AdaptiveMaxPool1d/2d/3d. Input [N, C, *spatial] or [C, *spatial] with D spatial dims; the ops
// are in kiln/ops/pooling.h. PyTorch's return_indices=True is forward_with_indices() here (forward
// returns one Tensor, as Sequential needs).
#pragma once

#include <optional>
#include <utility>

#include "kiln/nn/expanding_array.h"
#include "kiln/nn/module.h"

namespace kiln::nn {

template <size_t D>
struct MaxPoolOptions {
  std::optional<ExpandingArray<D>> stride;  // default: kernel_size
  ExpandingArray<D> padding = 0;            // at most half the kernel
  ExpandingArray<D> dilation = 1;
  bool ceil_mode = false;
};
using MaxPool1dOptions = MaxPoolOptions<1>;
using MaxPool2dOptions = MaxPoolOptions<2>;
using MaxPool3dOptions = MaxPoolOptions<3>;

template <size_t D>
class MaxPoolNd : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<MaxPoolNd>(kernel_size, options));
  }
  explicit MaxPoolNd(ExpandingArray<D> kernel_size, MaxPoolOptions<D> options = {});
  Tensor forward(const Tensor& input) override;
  // (values, indices): indices are flat positions in each input plane or box (kiln/ops/pooling.h).
  std::pair<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::string extra_repr() const override;

  const ExpandingArray<D> kernel_size;
  const MaxPoolOptions<D> options;
};
using MaxPool1d = MaxPoolNd<1>;
using MaxPool2d = MaxPoolNd<2>;
using MaxPool3d = MaxPoolNd<3>;

template <size_t D>
struct AvgPoolOptions {
  std::optional<ExpandingArray<D>> stride;  // default: kernel_size
  ExpandingArray<D> padding = 0;
  bool ceil_mode = false;
  bool count_include_pad = true;
  // 2-d and 3-d only: AvgPool1d has none (as torch.nn.AvgPool1d), and refuses one.
  std::optional<int64_t> divisor_override;
};
using AvgPool1dOptions = AvgPoolOptions<1>;
using AvgPool2dOptions = AvgPoolOptions<2>;
using AvgPool3dOptions = AvgPoolOptions<3>;

template <size_t D>
class AvgPoolNd : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<AvgPoolNd>(kernel_size, options));
  }
  explicit AvgPoolNd(ExpandingArray<D> kernel_size, AvgPoolOptions<D> options = {});
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const ExpandingArray<D> kernel_size;
  const AvgPoolOptions<D> options;
};
using AvgPool1d = AvgPoolNd<1>;
using AvgPool2d = AvgPoolNd<2>;
using AvgPool3d = AvgPoolNd<3>;

// Averages over windows chosen so that the output is [.., output_size].
template <size_t D>
class AdaptiveAvgPoolNd : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<AdaptiveAvgPoolNd>(output_size));
  }
  explicit AdaptiveAvgPoolNd(ExpandingArray<D> output_size);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const ExpandingArray<D> output_size;
};
using AdaptiveAvgPool1d = AdaptiveAvgPoolNd<1>;
using AdaptiveAvgPool2d = AdaptiveAvgPoolNd<2>;
using AdaptiveAvgPool3d = AdaptiveAvgPoolNd<3>;

// Maxima over windows chosen so that the output is [.., output_size].
template <size_t D>
class AdaptiveMaxPoolNd : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<AdaptiveMaxPoolNd>(output_size));
  }
  explicit AdaptiveMaxPoolNd(ExpandingArray<D> output_size);
  Tensor forward(const Tensor& input) override;
  std::pair<Tensor, Tensor> forward_with_indices(const Tensor& input);
  std::string extra_repr() const override;

  const ExpandingArray<D> output_size;
};
using AdaptiveMaxPool1d = AdaptiveMaxPoolNd<1>;
using AdaptiveMaxPool2d = AdaptiveMaxPoolNd<2>;
using AdaptiveMaxPool3d = AdaptiveMaxPoolNd<3>;

extern template class MaxPoolNd<1>;
extern template class MaxPoolNd<2>;
extern template class MaxPoolNd<3>;
extern template class AvgPoolNd<1>;
extern template class AvgPoolNd<2>;
extern template class AvgPoolNd<3>;
extern template class AdaptiveAvgPoolNd<1>;
extern template class AdaptiveAvgPoolNd<2>;
extern template class AdaptiveAvgPoolNd<3>;
extern template class AdaptiveMaxPoolNd<1>;
extern template class AdaptiveMaxPoolNd<2>;
extern template class AdaptiveMaxPoolNd<3>;

}  // namespace kiln::nn
