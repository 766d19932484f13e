// torch::nn::MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d and
// AdaptiveMaxPool1d/2d/3d over Kiln's layers (kiln/nn/pooling.h), with LibTorch's options, and
// their functionals (torch::nn::functional::max_pool1d(x, MaxPool1dFuncOptions(3)), ...). The
// max pools have LibTorch's forward_with_indices. The ATen-style free functions
// (torch::max_pool1d, torch::adaptive_max_pool2d, ...) are in nn_aten.h.
#pragma once

#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "kiln/nn/pooling.h"
#include "kiln/tensor.h"
#include "kiln/torch/arg.h"
#include "kiln/torch/module_holder.h"
#include "kiln/torch/nn_expanding_array.h"

namespace torch::nn {

// ---- max pooling ----

template <size_t D>
struct MaxPoolOptions {
  MaxPoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  TORCH_ARG(ExpandingArray<D>, kernel_size);
  TORCH_ARG(ExpandingArray<D>, stride);  // the kernel size unless set
  TORCH_ARG(ExpandingArray<D>, padding) = 0;
  TORCH_ARG(ExpandingArray<D>, dilation) = 1;
  TORCH_ARG(bool, ceil_mode) = false;
};
using MaxPool1dOptions = MaxPoolOptions<1>;
using MaxPool2dOptions = MaxPoolOptions<2>;
using MaxPool3dOptions = MaxPoolOptions<3>;

namespace detail {

// The shared body of MaxPool1dImpl, MaxPool2dImpl and MaxPool3dImpl.
template <size_t D>
class MaxPoolImpl : public kiln::nn::MaxPoolNd<D> {
 public:
  MaxPoolImpl(ExpandingArray<D> kernel_size) : MaxPoolImpl(MaxPoolOptions<D>(kernel_size)) {}
  explicit MaxPoolImpl(const MaxPoolOptions<D>& options)
      : kiln::nn::MaxPoolNd<D>(options.kernel_size().to_kiln(),
                               {.stride = options.stride().to_kiln(),
                                .padding = options.padding().to_kiln(),
                                .dilation = options.dilation().to_kiln(),
                                .ceil_mode = options.ceil_mode()}),
        options(options) {}

  // (values, indices), as a std::tuple like LibTorch's.
  std::tuple<kiln::Tensor, kiln::Tensor> forward_with_indices(const kiln::Tensor& input) {
    auto [values, indices] = kiln::nn::MaxPoolNd<D>::forward_with_indices(input);
    return {values, indices};
  }

  // LibTorch's options; hides Kiln's (kiln::nn::MaxPoolNd<D>::options), which say the same.
  MaxPoolOptions<D> options;
};

}  // namespace detail

class MaxPool1dImpl : public detail::MaxPoolImpl<1> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<MaxPool1dImpl>(options));
  }
  using MaxPoolImpl::MaxPoolImpl;
};
TORCH_MODULE(MaxPool1d);

class MaxPool2dImpl : public detail::MaxPoolImpl<2> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<MaxPool2dImpl>(options));
  }
  using MaxPoolImpl::MaxPoolImpl;
};
TORCH_MODULE(MaxPool2d);

class MaxPool3dImpl : public detail::MaxPoolImpl<3> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<MaxPool3dImpl>(options));
  }
  using MaxPoolImpl::MaxPoolImpl;
};
TORCH_MODULE(MaxPool3d);

// ---- average pooling ----

template <size_t D>
struct AvgPoolOptions {
  AvgPoolOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  TORCH_ARG(ExpandingArray<D>, kernel_size);
  TORCH_ARG(ExpandingArray<D>, stride);  // the kernel size unless set
  TORCH_ARG(ExpandingArray<D>, padding) = 0;
  TORCH_ARG(bool, ceil_mode) = false;
  TORCH_ARG(bool, count_include_pad) = true;
  // Ignored by the 1-d pool, as in LibTorch.
  TORCH_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};
using AvgPool1dOptions = AvgPoolOptions<1>;
using AvgPool2dOptions = AvgPoolOptions<2>;
using AvgPool3dOptions = AvgPoolOptions<3>;

namespace detail {

template <size_t D>
class AvgPoolImpl : public kiln::nn::AvgPoolNd<D> {
 public:
  AvgPoolImpl(ExpandingArray<D> kernel_size) : AvgPoolImpl(AvgPoolOptions<D>(kernel_size)) {}
  explicit AvgPoolImpl(const AvgPoolOptions<D>& options)
      : kiln::nn::AvgPoolNd<D>(
            options.kernel_size().to_kiln(),
            {.stride = options.stride().to_kiln(),
             .padding = options.padding().to_kiln(),
             .ceil_mode = options.ceil_mode(),
             .count_include_pad = options.count_include_pad(),
             .divisor_override = D == 1 ? std::nullopt : options.divisor_override()}),
        options(options) {}

  AvgPoolOptions<D> options;
};

}  // namespace detail

class AvgPool1dImpl : public detail::AvgPoolImpl<1> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<AvgPool1dImpl>(options));
  }
  using AvgPoolImpl::AvgPoolImpl;
};
TORCH_MODULE(AvgPool1d);

class AvgPool2dImpl : public detail::AvgPoolImpl<2> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<AvgPool2dImpl>(options));
  }
  using AvgPoolImpl::AvgPoolImpl;
};
TORCH_MODULE(AvgPool2d);

class AvgPool3dImpl : public detail::AvgPoolImpl<3> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<AvgPool3dImpl>(options));
  }
  using AvgPoolImpl::AvgPoolImpl;
};
TORCH_MODULE(AvgPool3d);

// ---- adaptive pooling ----

template <typename output_size_t>
struct AdaptiveAvgPoolOptions {
  AdaptiveAvgPoolOptions(output_size_t output_size) : output_size_(output_size) {}
  TORCH_ARG(output_size_t, output_size);
};
template <typename output_size_t>
struct AdaptiveMaxPoolOptions {
  AdaptiveMaxPoolOptions(output_size_t output_size) : output_size_(output_size) {}
  TORCH_ARG(output_size_t, output_size);
};
// An element of a 2-d or 3-d output_size may be nullopt: that dim keeps the input's size.
using AdaptiveAvgPool1dOptions = AdaptiveAvgPoolOptions<ExpandingArray<1>>;
using AdaptiveAvgPool2dOptions = AdaptiveAvgPoolOptions<ExpandingArrayWithOptionalElem<2>>;
using AdaptiveAvgPool3dOptions = AdaptiveAvgPoolOptions<ExpandingArrayWithOptionalElem<3>>;
using AdaptiveMaxPool1dOptions = AdaptiveMaxPoolOptions<ExpandingArray<1>>;
using AdaptiveMaxPool2dOptions = AdaptiveMaxPoolOptions<ExpandingArrayWithOptionalElem<2>>;
using AdaptiveMaxPool3dOptions = AdaptiveMaxPoolOptions<ExpandingArrayWithOptionalElem<3>>;

namespace detail {

// Kiln's layer's output size: the given sizes, 1 for a nullopt element (a layer with one is
// not run: forward resolves the element from the input, adaptive_output_size).
template <size_t D>
kiln::nn::ExpandingArray<D> given_or_one(const ExpandingArray<D>& size) {
  return size.to_kiln();
}
template <size_t D>
kiln::nn::ExpandingArray<D> given_or_one(const ExpandingArrayWithOptionalElem<D>& size) {
  ExpandingArray<D> given(int64_t{1});
  for (size_t i = 0; i < D; ++i) (*given)[i] = size[i].value_or(1);
  return given.to_kiln();
}
template <size_t D>
bool all_given(const ExpandingArray<D>&) {
  return true;
}
template <size_t D>
bool all_given(const ExpandingArrayWithOptionalElem<D>& size) {
  return size.all_given();
}

// output_size for `input` (of D spatial dims, unbatched or not: ShapeError naming `op`
// otherwise), each nullopt element replaced by the input's size of that dim.
std::vector<int64_t> adaptive_output_size(const char* op, size_t spatial, const kiln::Tensor& input,
                                          const std::vector<std::optional<int64_t>>& size);
template <size_t D>
std::vector<int64_t> adaptive_output_size(const char* op, const kiln::Tensor& input,
                                          const ExpandingArray<D>& size) {
  return adaptive_output_size(op, D, input, {(*size).begin(), (*size).end()});
}
template <size_t D>
std::vector<int64_t> adaptive_output_size(const char* op, const kiln::Tensor& input,
                                          const ExpandingArrayWithOptionalElem<D>& size) {
  return adaptive_output_size(op, D, input, {(*size).begin(), (*size).end()});
}

// The op of each kind and dimensionality (kiln/ops/pooling.h).
kiln::Tensor adaptive_avg_pool(size_t spatial, const kiln::Tensor& input,
                               kiln::IntArrayRef output_size);
std::tuple<kiln::Tensor, kiln::Tensor> adaptive_max_pool(size_t spatial, const kiln::Tensor& input,
                                                         kiln::IntArrayRef output_size);

template <size_t D, typename output_size_t>
class AdaptiveAvgPoolImpl : public kiln::nn::AdaptiveAvgPoolNd<D> {
 public:
  AdaptiveAvgPoolImpl(output_size_t output_size)
      : AdaptiveAvgPoolImpl(AdaptiveAvgPoolOptions<output_size_t>(output_size)) {}
  explicit AdaptiveAvgPoolImpl(const AdaptiveAvgPoolOptions<output_size_t>& options)
      : kiln::nn::AdaptiveAvgPoolNd<D>(given_or_one<D>(options.output_size())), options(options) {}

  kiln::Tensor forward(const kiln::Tensor& input) override {
    if (all_given<D>(options.output_size())) return kiln::nn::AdaptiveAvgPoolNd<D>::forward(input);
    return adaptive_avg_pool(
        D, input, adaptive_output_size<D>(this->name().c_str(), input, options.output_size()));
  }

  AdaptiveAvgPoolOptions<output_size_t> options;
};

template <size_t D, typename output_size_t>
class AdaptiveMaxPoolImpl : public kiln::nn::AdaptiveMaxPoolNd<D> {
 public:
  AdaptiveMaxPoolImpl(output_size_t output_size)
      : AdaptiveMaxPoolImpl(AdaptiveMaxPoolOptions<output_size_t>(output_size)) {}
  explicit AdaptiveMaxPoolImpl(const AdaptiveMaxPoolOptions<output_size_t>& options)
      : kiln::nn::AdaptiveMaxPoolNd<D>(given_or_one<D>(options.output_size())), options(options) {}

  kiln::Tensor forward(const kiln::Tensor& input) override {
    return std::get<0>(forward_with_indices(input));
  }
  std::tuple<kiln::Tensor, kiln::Tensor> forward_with_indices(const kiln::Tensor& input) {
    if (all_given<D>(options.output_size())) {
      auto [values, indices] = kiln::nn::AdaptiveMaxPoolNd<D>::forward_with_indices(input);
      return {values, indices};
    }
    return adaptive_max_pool(
        D, input, adaptive_output_size<D>(this->name().c_str(), input, options.output_size()));
  }

  AdaptiveMaxPoolOptions<output_size_t> options;
};

}  // namespace detail

class AdaptiveAvgPool1dImpl : public detail::AdaptiveAvgPoolImpl<1, ExpandingArray<1>> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<AdaptiveAvgPool1dImpl>(options));
  }
  using AdaptiveAvgPoolImpl::AdaptiveAvgPoolImpl;
};
TORCH_MODULE(AdaptiveAvgPool1d);

class AdaptiveAvgPool2dImpl
    : public detail::AdaptiveAvgPoolImpl<2, ExpandingArrayWithOptionalElem<2>> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<AdaptiveAvgPool2dImpl>(options));
  }
  using AdaptiveAvgPoolImpl::AdaptiveAvgPoolImpl;
};
TORCH_MODULE(AdaptiveAvgPool2d);

class AdaptiveAvgPool3dImpl
    : public detail::AdaptiveAvgPoolImpl<3, ExpandingArrayWithOptionalElem<3>> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<AdaptiveAvgPool3dImpl>(options));
  }
  using AdaptiveAvgPoolImpl::AdaptiveAvgPoolImpl;
};
TORCH_MODULE(AdaptiveAvgPool3d);

class AdaptiveMaxPool1dImpl : public detail::AdaptiveMaxPoolImpl<1, ExpandingArray<1>> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<AdaptiveMaxPool1dImpl>(options));
  }
  using AdaptiveMaxPoolImpl::AdaptiveMaxPoolImpl;
};
TORCH_MODULE(AdaptiveMaxPool1d);

class AdaptiveMaxPool2dImpl
    : public detail::AdaptiveMaxPoolImpl<2, ExpandingArrayWithOptionalElem<2>> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<AdaptiveMaxPool2dImpl>(options));
  }
  using AdaptiveMaxPoolImpl::AdaptiveMaxPoolImpl;
};
TORCH_MODULE(AdaptiveMaxPool2d);

class AdaptiveMaxPool3dImpl
    : public detail::AdaptiveMaxPoolImpl<3, ExpandingArrayWithOptionalElem<3>> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<AdaptiveMaxPool3dImpl>(options));
  }
  using AdaptiveMaxPoolImpl::AdaptiveMaxPoolImpl;
};
TORCH_MODULE(AdaptiveMaxPool3d);

namespace functional {

using MaxPool1dFuncOptions = MaxPool1dOptions;
using MaxPool2dFuncOptions = MaxPool2dOptions;
using MaxPool3dFuncOptions = MaxPool3dOptions;
using AvgPool1dFuncOptions = AvgPool1dOptions;
using AvgPool2dFuncOptions = AvgPool2dOptions;
using AvgPool3dFuncOptions = AvgPool3dOptions;
using AdaptiveAvgPool1dFuncOptions = AdaptiveAvgPool1dOptions;
using AdaptiveAvgPool2dFuncOptions = AdaptiveAvgPool2dOptions;
using AdaptiveAvgPool3dFuncOptions = AdaptiveAvgPool3dOptions;
using AdaptiveMaxPool1dFuncOptions = AdaptiveMaxPool1dOptions;
using AdaptiveMaxPool2dFuncOptions = AdaptiveMaxPool2dOptions;
using AdaptiveMaxPool3dFuncOptions = AdaptiveMaxPool3dOptions;

// The pooling ops of kiln/ops/pooling.h with LibTorch's options.
kiln::Tensor max_pool1d(const kiln::Tensor& input, const MaxPool1dFuncOptions& options);
kiln::Tensor max_pool2d(const kiln::Tensor& input, const MaxPool2dFuncOptions& options);
kiln::Tensor max_pool3d(const kiln::Tensor& input, const MaxPool3dFuncOptions& options);
std::tuple<kiln::Tensor, kiln::Tensor> max_pool1d_with_indices(const kiln::Tensor& input,
                                                               const MaxPool1dFuncOptions& options);
std::tuple<kiln::Tensor, kiln::Tensor> max_pool2d_with_indices(const kiln::Tensor& input,
                                                               const MaxPool2dFuncOptions& options);
std::tuple<kiln::Tensor, kiln::Tensor> max_pool3d_with_indices(const kiln::Tensor& input,
                                                               const MaxPool3dFuncOptions& options);
// divisor_override is ignored, as LibTorch's avg_pool1d does.
kiln::Tensor avg_pool1d(const kiln::Tensor& input, const AvgPool1dFuncOptions& options);
kiln::Tensor avg_pool2d(const kiln::Tensor& input, const AvgPool2dFuncOptions& options);
kiln::Tensor avg_pool3d(const kiln::Tensor& input, const AvgPool3dFuncOptions& options);
kiln::Tensor adaptive_avg_pool1d(const kiln::Tensor& input,
                                 const AdaptiveAvgPool1dFuncOptions& options);
kiln::Tensor adaptive_avg_pool2d(const kiln::Tensor& input,
                                 const AdaptiveAvgPool2dFuncOptions& options);
kiln::Tensor adaptive_avg_pool3d(const kiln::Tensor& input,
                                 const AdaptiveAvgPool3dFuncOptions& options);
kiln::Tensor adaptive_max_pool1d(const kiln::Tensor& input,
                                 const AdaptiveMaxPool1dFuncOptions& options);
kiln::Tensor adaptive_max_pool2d(const kiln::Tensor& input,
                                 const AdaptiveMaxPool2dFuncOptions& options);
kiln::Tensor adaptive_max_pool3d(const kiln::Tensor& input,
                                 const AdaptiveMaxPool3dFuncOptions& options);
std::tuple<kiln::Tensor, kiln::Tensor> adaptive_max_pool1d_with_indices(
    const kiln::Tensor& input, const AdaptiveMaxPool1dFuncOptions& options);
std::tuple<kiln::Tensor, kiln::Tensor> adaptive_max_pool2d_with_indices(
    const kiln::Tensor& input, const AdaptiveMaxPool2dFuncOptions& options);
std::tuple<kiln::Tensor, kiln::Tensor> adaptive_max_pool3d_with_indices(
    const kiln::Tensor& input, const AdaptiveMaxPool3dFuncOptions& options);

}  // namespace functional

}  // namespace torch::nn
