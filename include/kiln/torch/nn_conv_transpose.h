// torch::nn::ConvTranspose1d and ConvTranspose2d ("deconvolutions", as DCGAN's generator uses),
// with LibTorch's options, functionals and torch::conv_transpose1d/2d.
//
// Note [Transposed convolution as a composite]
// Kiln has no transposed-convolution kernel, so this is composed of Kiln's differentiable ops:
// the input is spread out with stride - 1 zeros between its elements (pad of a reshaped view),
// padded by dilation * (kernel - 1) - padding on each side (plus output_padding at the end;
// negative amounts crop), and convolved at stride 1 with the weight's in/out channels swapped
// (per group) and its kernel flipped. That is the gradient of the convolution with the same
// settings, which is what a transposed convolution computes; its own gradient comes from the ops.
// It costs the zeros' multiply-adds (about stride^D times a direct kernel's work).
// The layer belongs in kiln::nn; it sits here until Kiln grows one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kiln/tensor.h"
#include "kiln/torch/arg.h"
#include "kiln/torch/module_holder.h"
#include "kiln/torch/nn_conv.h"
#include "kiln/torch/nn_expanding_array.h"

namespace torch {

// ATen's argument order: (input, weight, bias, stride, padding, output_padding, groups,
// dilation). Input (N, C_in, *) or (C_in, *); weight (C_in, C_out / groups, *kernel).
kiln::Tensor conv_transpose1d(const kiln::Tensor& input, const kiln::Tensor& weight,
                              const kiln::Tensor& bias = {}, kiln::IntArrayRef stride = 1,
                              kiln::IntArrayRef padding = 0, kiln::IntArrayRef output_padding = 0,
                              int64_t groups = 1, kiln::IntArrayRef dilation = 1);
kiln::Tensor conv_transpose2d(const kiln::Tensor& input, const kiln::Tensor& weight,
                              const kiln::Tensor& bias = {}, kiln::IntArrayRef stride = 1,
                              kiln::IntArrayRef padding = 0, kiln::IntArrayRef output_padding = 0,
                              int64_t groups = 1, kiln::IntArrayRef dilation = 1);

}  // namespace torch

namespace torch::nn {

template <size_t D>
struct ConvTransposeOptions {
  using padding_mode_t = detail::conv_padding_mode_t;
  ConvTransposeOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  TORCH_ARG(int64_t, in_channels);
  TORCH_ARG(int64_t, out_channels);
  TORCH_ARG(ExpandingArray<D>, kernel_size);
  TORCH_ARG(ExpandingArray<D>, stride) = 1;
  TORCH_ARG(ExpandingArray<D>, padding) = 0;
  TORCH_ARG(ExpandingArray<D>, output_padding) = 0;
  TORCH_ARG(int64_t, groups) = 1;
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(ExpandingArray<D>, dilation) = 1;
  // Only torch::kZeros (ValueError otherwise), as in LibTorch.
  TORCH_ARG(padding_mode_t, padding_mode) = torch::kZeros;
};
using ConvTranspose1dOptions = ConvTransposeOptions<1>;
using ConvTranspose2dOptions = ConvTransposeOptions<2>;

namespace detail {

// Parameters weight (in_channels, out_channels / groups, *kernel_size) and bias (out_channels),
// initialized as PyTorch: kaiming_uniform_(a = sqrt(5)) with fan_in = weight.size(1) * prod(kernel)
// and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
template <size_t D>
class ConvTransposeImpl : public Module {
 public:
  ConvTransposeImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : ConvTransposeImpl(ConvTransposeOptions<D>(in_channels, out_channels, kernel_size)) {}
  explicit ConvTransposeImpl(const ConvTransposeOptions<D>& options);

  kiln::Tensor forward(const kiln::Tensor& input) override;
  // The output's spatial size chosen among those the stride allows (LibTorch's output_size):
  // the trailing D entries of output_size give it; ValueError if it is not reachable.
  kiln::Tensor forward(const kiln::Tensor& input, kiln::IntArrayRef output_size);
  std::string extra_repr() const override;
  void reset_parameters();

  ConvTransposeOptions<D> options;
  kiln::Tensor& weight;  // Note [Parameter slots] (kiln/nn/module.h)
  kiln::Tensor& bias;    // undefined without bias

 private:
  kiln::Tensor run(const kiln::Tensor& input, const ExpandingArray<D>& output_padding);
};

}  // namespace detail

class ConvTranspose1dImpl : public detail::ConvTransposeImpl<1> {
 public:
  using ConvTransposeImpl::ConvTransposeImpl;
};
TORCH_MODULE(ConvTranspose1d);

class ConvTranspose2dImpl : public detail::ConvTransposeImpl<2> {
 public:
  using ConvTransposeImpl::ConvTransposeImpl;
};
TORCH_MODULE(ConvTranspose2d);

namespace functional {

template <size_t D>
struct ConvTransposeFuncOptions {
  TORCH_ARG(kiln::Tensor, bias) = kiln::Tensor();
  TORCH_ARG(ExpandingArray<D>, stride) = 1;
  TORCH_ARG(ExpandingArray<D>, padding) = 0;
  TORCH_ARG(ExpandingArray<D>, output_padding) = 0;
  TORCH_ARG(int64_t, groups) = 1;
  TORCH_ARG(ExpandingArray<D>, dilation) = 1;
};
using ConvTranspose1dFuncOptions = ConvTransposeFuncOptions<1>;
using ConvTranspose2dFuncOptions = ConvTransposeFuncOptions<2>;

kiln::Tensor conv_transpose1d(const kiln::Tensor& input, const kiln::Tensor& weight,
                              const ConvTranspose1dFuncOptions& options = {});
kiln::Tensor conv_transpose2d(const kiln::Tensor& input, const kiln::Tensor& weight,
                              const ConvTranspose2dFuncOptions& options = {});

}  // namespace functional

}  // namespace torch::nn
