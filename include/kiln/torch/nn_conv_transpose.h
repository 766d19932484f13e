// torch::nn::ConvTranspose1d, ConvTranspose2d and ConvTranspose3d ("deconvolutions", as DCGAN's
// generator uses) over Kiln's ConvTransposeNd (kiln/nn/conv_transpose.h), with LibTorch's
// options, functionals and torch::conv_transpose1d/2d/3d (Kiln's ops, kiln/ops/linalg.h):
//
//   torch::nn::ConvTranspose2d up(torch::nn::ConvTranspose2dOptions(64, 32,
//   4).stride(2).padding(1)); F::conv_transpose2d(x, w, F::ConvTranspose2dFuncOptions().stride(2));
#pragma once

#include <cstdint>

#include "kiln/nn/conv_transpose.h"
#include "kiln/ops/linalg.h"
#include "kiln/tensor.h"
#include "kiln/torch/arg.h"
#include "kiln/torch/module_holder.h"
#include "kiln/torch/nn_conv.h"
#include "kiln/torch/nn_expanding_array.h"

namespace torch {

// ATen's argument order: (input, weight, bias, stride, padding, output_padding, groups,
// dilation). Input (N, C_in, *) or (C_in, *); weight (C_in, C_out / groups, *kernel).
using kiln::conv_transpose1d;
using kiln::conv_transpose2d;
using kiln::conv_transpose3d;

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
using ConvTranspose3dOptions = ConvTransposeOptions<3>;

namespace detail {

// Kiln's layer options for LibTorch's.
template <size_t D>
kiln::nn::ConvTransposeOptions<D> kiln_conv_transpose_options(const ConvTransposeOptions<D>& o) {
  return {.stride = o.stride().to_kiln(),
          .padding = o.padding().to_kiln(),
          .output_padding = o.output_padding().to_kiln(),
          .groups = o.groups(),
          .bias = o.bias(),
          .dilation = o.dilation().to_kiln(),
          .padding_mode = enumtype::kiln_name(o.padding_mode())};
}

// The shared body of ConvTranspose1dImpl, 2dImpl and 3dImpl: forward(input) and
// forward(input, output_size) are Kiln's.
template <size_t D>
class ConvTransposeImpl : public kiln::nn::ConvTransposeNd<D> {
 public:
  ConvTransposeImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : ConvTransposeImpl(ConvTransposeOptions<D>(in_channels, out_channels, kernel_size)) {}
  explicit ConvTransposeImpl(const ConvTransposeOptions<D>& options)
      : kiln::nn::ConvTransposeNd<D>(options.in_channels(), options.out_channels(),
                                     options.kernel_size().to_kiln(),
                                     kiln_conv_transpose_options(options)),
        options(options) {}

  // LibTorch's options; hides Kiln's (kiln::nn::ConvTransposeNd<D>::options), which say the same.
  ConvTransposeOptions<D> options;
};

}  // namespace detail

class ConvTranspose1dImpl : public detail::ConvTransposeImpl<1> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<ConvTranspose1dImpl>(options));
  }
  using ConvTransposeImpl::ConvTransposeImpl;
};
TORCH_MODULE(ConvTranspose1d);

class ConvTranspose2dImpl : public detail::ConvTransposeImpl<2> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<ConvTranspose2dImpl>(options));
  }
  using ConvTransposeImpl::ConvTransposeImpl;
};
TORCH_MODULE(ConvTranspose2d);

class ConvTranspose3dImpl : public detail::ConvTransposeImpl<3> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<ConvTranspose3dImpl>(options));
  }
  using ConvTransposeImpl::ConvTransposeImpl;
};
TORCH_MODULE(ConvTranspose3d);

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
using ConvTranspose3dFuncOptions = ConvTransposeFuncOptions<3>;

// kiln::conv_transpose1d / 2d / 3d with LibTorch's options.
kiln::Tensor conv_transpose1d(const kiln::Tensor& input, const kiln::Tensor& weight,
                              const ConvTranspose1dFuncOptions& options = {});
kiln::Tensor conv_transpose2d(const kiln::Tensor& input, const kiln::Tensor& weight,
                              const ConvTranspose2dFuncOptions& options = {});
kiln::Tensor conv_transpose3d(const kiln::Tensor& input, const kiln::Tensor& weight,
                              const ConvTranspose3dFuncOptions& options = {});

}  // namespace functional

}  // namespace torch::nn
