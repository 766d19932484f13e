// torch::nn::Conv1d, Conv2d and Conv3d over Kiln's ConvNd (kiln/nn/conv.h), with LibTorch's
// options:
//
//   torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 16, 3).stride(2).padding(1).bias(false));
//   torch::nn::Conv2d same(torch::nn::Conv2dOptions(3, 16, 3).padding(torch::kSame));
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <variant>

#include "kiln/nn/conv.h"
#include "kiln/tensor.h"
#include "kiln/torch/arg.h"
#include "kiln/torch/module_holder.h"
#include "kiln/torch/nn_enum.h"
#include "kiln/torch/nn_expanding_array.h"

namespace torch::nn {

namespace detail {

using conv_padding_mode_t =
    std::variant<enumtype::kZeros, enumtype::kReflect, enumtype::kReplicate, enumtype::kCircular>;
template <size_t D>
using conv_padding_t = std::variant<ExpandingArray<D>, enumtype::kValid, enumtype::kSame>;

// Kiln's padding argument for LibTorch's: sizes, or the mode "valid" / "same".
template <size_t D>
kiln::nn::ConvPaddingSpec<D> kiln_padding(const conv_padding_t<D>& padding) {
  if (const auto* sizes = std::get_if<ExpandingArray<D>>(&padding)) {
    return kiln::nn::ConvPaddingSpec<D>(sizes->to_kiln());
  }
  return kiln::nn::ConvPaddingSpec<D>(std::holds_alternative<enumtype::kSame>(padding)
                                          ? std::string_view("same")
                                          : std::string_view("valid"));
}

}  // namespace detail

template <size_t D>
struct ConvOptions {
  using padding_mode_t = detail::conv_padding_mode_t;
  using padding_t = detail::conv_padding_t<D>;

  ConvOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}

  TORCH_ARG(int64_t, in_channels);
  TORCH_ARG(int64_t, out_channels);
  TORCH_ARG(ExpandingArray<D>, kernel_size);
  TORCH_ARG(ExpandingArray<D>, stride) = 1;
  TORCH_ARG(padding_t, padding) = 0;

 public:
  // A braced list would be ambiguous between the variant's alternatives.
  decltype(auto) padding(std::initializer_list<int64_t> il) {
    return padding(padding_t(ExpandingArray<D>(il)));
  }
  TORCH_ARG(ExpandingArray<D>, dilation) = 1;
  TORCH_ARG(int64_t, groups) = 1;
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(padding_mode_t, padding_mode) = torch::kZeros;
};
using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;
using Conv3dOptions = ConvOptions<3>;

namespace detail {

// Kiln's layer options for LibTorch's.
template <size_t D>
kiln::nn::ConvOptions<D> kiln_conv_options(const ConvOptions<D>& o) {
  return {.stride = o.stride().to_kiln(),
          .padding = kiln_padding<D>(o.padding()),
          .dilation = o.dilation().to_kiln(),
          .groups = o.groups(),
          .bias = o.bias(),
          .padding_mode = enumtype::kiln_name(o.padding_mode())};
}

// The shared body of Conv1dImpl, Conv2dImpl and Conv3dImpl.
template <size_t D>
class ConvImpl : public kiln::nn::ConvNd<D> {
 public:
  ConvImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : ConvImpl(ConvOptions<D>(in_channels, out_channels, kernel_size)) {}
  explicit ConvImpl(const ConvOptions<D>& options)
      : kiln::nn::ConvNd<D>(options.in_channels(), options.out_channels(),
                            options.kernel_size().to_kiln(), kiln_conv_options(options)),
        options(options) {}

  // LibTorch's options; hides Kiln's (kiln::nn::ConvNd<D>::options), which say the same.
  ConvOptions<D> options;
};

}  // namespace detail

class Conv1dImpl : public detail::ConvImpl<1> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<Conv1dImpl>(options));
  }
  using ConvImpl::ConvImpl;
};
TORCH_MODULE(Conv1d);

class Conv2dImpl : public detail::ConvImpl<2> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<Conv2dImpl>(options));
  }
  using ConvImpl::ConvImpl;
};
TORCH_MODULE(Conv2d);

class Conv3dImpl : public detail::ConvImpl<3> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<Conv3dImpl>(options));
  }
  using ConvImpl::ConvImpl;
};
TORCH_MODULE(Conv3d);

namespace functional {

template <size_t D>
struct ConvFuncOptions {
  using padding_t = torch::nn::detail::conv_padding_t<D>;
  TORCH_ARG(kiln::Tensor, bias) = kiln::Tensor();
  TORCH_ARG(ExpandingArray<D>, stride) = 1;
  TORCH_ARG(padding_t, padding) = 0;

 public:
  decltype(auto) padding(std::initializer_list<int64_t> il) {
    return padding(padding_t(ExpandingArray<D>(il)));
  }
  TORCH_ARG(ExpandingArray<D>, dilation) = 1;
  TORCH_ARG(int64_t, groups) = 1;
};
using Conv1dFuncOptions = ConvFuncOptions<1>;
using Conv2dFuncOptions = ConvFuncOptions<2>;
using Conv3dFuncOptions = ConvFuncOptions<3>;

// kiln::conv1d / conv2d / conv3d with LibTorch's options.
kiln::Tensor conv1d(const kiln::Tensor& input, const kiln::Tensor& weight,
                    const Conv1dFuncOptions& options = {});
kiln::Tensor conv2d(const kiln::Tensor& input, const kiln::Tensor& weight,
                    const Conv2dFuncOptions& options = {});
kiln::Tensor conv3d(const kiln::Tensor& input, const kiln::Tensor& weight,
                    const Conv3dFuncOptions& options = {});

}  // namespace functional

}  // namespace torch::nn
