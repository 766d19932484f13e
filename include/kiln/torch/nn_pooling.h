// torch::nn::MaxPool2d, AvgPool2d and AdaptiveAvgPool2d over Kiln's (kiln/nn/pooling.h), and
// their functionals. Kiln pools 2-d inputs only, so there are no 1-d or 3-d pools.
#pragma once

#include <cstdint>
#include <optional>
#include <tuple>

#include "kiln/nn/pooling.h"
#include "kiln/tensor.h"
#include "kiln/torch/arg.h"
#include "kiln/torch/module_holder.h"
#include "kiln/torch/nn_expanding_array.h"

namespace torch::nn {

template <size_t D>
struct MaxPoolOptions {
  MaxPoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  TORCH_ARG(ExpandingArray<D>, kernel_size);
  TORCH_ARG(ExpandingArray<D>, stride);  // the kernel size unless set
  TORCH_ARG(ExpandingArray<D>, padding) = 0;
  TORCH_ARG(ExpandingArray<D>, dilation) = 1;
  TORCH_ARG(bool, ceil_mode) = false;
};
using MaxPool2dOptions = MaxPoolOptions<2>;

class MaxPool2dImpl : public kiln::nn::MaxPool2d {
 public:
  MaxPool2dImpl(ExpandingArray<2> kernel_size) : MaxPool2dImpl(MaxPool2dOptions(kernel_size)) {}
  explicit MaxPool2dImpl(const MaxPool2dOptions& options)
      : kiln::nn::MaxPool2d(options.kernel_size().to_kiln(),
                            {.stride = options.stride().to_kiln(),
                             .padding = options.padding().to_kiln(),
                             .dilation = options.dilation().to_kiln(),
                             .ceil_mode = options.ceil_mode()}),
        options(options) {}

  // LibTorch's options; hides Kiln's (kiln::nn::MaxPool2d::options), which say the same.
  MaxPool2dOptions options;
};
TORCH_MODULE(MaxPool2d);

template <size_t D>
struct AvgPoolOptions {
  AvgPoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  TORCH_ARG(ExpandingArray<D>, kernel_size);
  TORCH_ARG(ExpandingArray<D>, stride);  // the kernel size unless set
  TORCH_ARG(ExpandingArray<D>, padding) = 0;
  TORCH_ARG(bool, ceil_mode) = false;
  TORCH_ARG(bool, count_include_pad) = true;
  TORCH_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};
using AvgPool2dOptions = AvgPoolOptions<2>;

class AvgPool2dImpl : public kiln::nn::AvgPool2d {
 public:
  AvgPool2dImpl(ExpandingArray<2> kernel_size) : AvgPool2dImpl(AvgPool2dOptions(kernel_size)) {}
  explicit AvgPool2dImpl(const AvgPool2dOptions& options)
      : kiln::nn::AvgPool2d(options.kernel_size().to_kiln(),
                            {.stride = options.stride().to_kiln(),
                             .padding = options.padding().to_kiln(),
                             .ceil_mode = options.ceil_mode(),
                             .count_include_pad = options.count_include_pad(),
                             .divisor_override = options.divisor_override()}),
        options(options) {}

  AvgPool2dOptions options;
};
TORCH_MODULE(AvgPool2d);

template <typename output_size_t>
struct AdaptiveAvgPoolOptions {
  AdaptiveAvgPoolOptions(output_size_t output_size) : output_size_(output_size) {}
  TORCH_ARG(output_size_t, output_size);
};
// An element may be nullopt: that dim keeps the input's size.
using AdaptiveAvgPool2dOptions = AdaptiveAvgPoolOptions<ExpandingArrayWithOptionalElem<2>>;

// Kiln's layer when every output size is given; with a nullopt element, forward resolves it
// from the input (Kiln's layer is then built with that element 1 and not used).
class AdaptiveAvgPool2dImpl : public kiln::nn::AdaptiveAvgPool2d {
 public:
  AdaptiveAvgPool2dImpl(ExpandingArrayWithOptionalElem<2> output_size)
      : AdaptiveAvgPool2dImpl(AdaptiveAvgPool2dOptions(output_size)) {}
  explicit AdaptiveAvgPool2dImpl(const AdaptiveAvgPool2dOptions& options);
  kiln::Tensor forward(const kiln::Tensor& input) override;

  AdaptiveAvgPool2dOptions options;
};
TORCH_MODULE(AdaptiveAvgPool2d);

namespace functional {

using MaxPool2dFuncOptions = MaxPool2dOptions;
using AvgPool2dFuncOptions = AvgPool2dOptions;
using AdaptiveAvgPool2dFuncOptions = AdaptiveAvgPool2dOptions;

// The pooling ops of kiln/ops/linalg.h with LibTorch's options.
kiln::Tensor max_pool2d(const kiln::Tensor& input, const MaxPool2dFuncOptions& options);
std::tuple<kiln::Tensor, kiln::Tensor> max_pool2d_with_indices(const kiln::Tensor& input,
                                                               const MaxPool2dFuncOptions& options);
kiln::Tensor avg_pool2d(const kiln::Tensor& input, const AvgPool2dFuncOptions& options);
kiln::Tensor adaptive_avg_pool2d(const kiln::Tensor& input,
                                 const AdaptiveAvgPool2dFuncOptions& options);

}  // namespace functional

}  // namespace torch::nn
