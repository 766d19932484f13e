// Conv1d, Conv2d and Conv3d, as torch.nn.Conv1d / Conv2d / Conv3d (transposed convolutions:
// kiln/nn/conv_transpose.h):
//
//   nn::Conv2d conv(3, 16, 3, {.padding = 1});                 // 3x3, stride 1, "same" size
//   nn::Conv2d down(16, 32, {3, 3}, {.stride = 2, .padding = "valid", .bias = false});
//
// Input [N, C_in, *spatial] or [C_in, *spatial] (unbatched). Initialized as PyTorch: weight ~
// kaiming_uniform_(a = sqrt(5)) and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with
// fan_in = C_in / groups * prod(kernel_size).
#pragma once

#include <concepts>
#include <string>
#include <string_view>
#include <variant>

#include "kiln/nn/expanding_array.h"
#include "kiln/nn/module.h"

namespace kiln::nn {

// Padding of a convolution: one size for every spatial dim, one per dim, or "same" / "valid".
template <size_t D>
class ConvPaddingSpec {
 public:
  // A template so that a literal 0 picks this over the const char* overload.
  template <std::integral I>
  ConvPaddingSpec(I padding) : value_(ExpandingArray<D>(static_cast<int64_t>(padding))) {}
  ConvPaddingSpec(std::initializer_list<int64_t> padding) : value_(ExpandingArray<D>(padding)) {}
  ConvPaddingSpec(ExpandingArray<D> padding) : value_(padding) {}
  // "same" (output as large as the input; stride must be 1) or "valid" (no padding).
  ConvPaddingSpec(std::string_view mode) : value_(std::string(mode)) {}
  ConvPaddingSpec(const char* mode) : value_(std::string(mode)) {}

  bool is_mode() const { return std::holds_alternative<std::string>(value_); }
  const std::string& mode() const { return std::get<std::string>(value_); }
  const ExpandingArray<D>& sizes() const { return std::get<ExpandingArray<D>>(value_); }

 private:
  std::variant<ExpandingArray<D>, std::string> value_;
};

template <size_t D>
struct ConvOptions {
  ExpandingArray<D> stride = 1;
  ConvPaddingSpec<D> padding = int64_t{0};
  ExpandingArray<D> dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  // How the padding is filled: "zeros", "reflect", "replicate" or "circular".
  std::string padding_mode = "zeros";
};

template <size_t D>
class ConvNd : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<ConvNd>(in_channels, out_channels, kernel_size, options));
  }
  ConvNd(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size,
         ConvOptions<D> options = {});

  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  // Draws fresh weights from the default generator (kiln::manual_seed).
  void reset_parameters();

  const int64_t in_channels;
  const int64_t out_channels;
  const ExpandingArray<D> kernel_size;
  const ConvOptions<D> options;
  Tensor& weight;  // [out_channels, in_channels / groups, *kernel_size]; Note [Parameter slots]
  Tensor& bias;    // [out_channels], undefined when options.bias is false
};

using Conv1d = ConvNd<1>;
using Conv2d = ConvNd<2>;
using Conv3d = ConvNd<3>;

}  // namespace kiln::nn
