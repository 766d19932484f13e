// torch::nn::functional's transposed convolutions: Kiln's ops with LibTorch's options.
#include "kiln/torch/nn_conv_transpose.h"

namespace torch::nn::functional {

kiln::Tensor conv_transpose1d(const kiln::Tensor& input, const kiln::Tensor& weight,
                              const ConvTranspose1dFuncOptions& o) {
  return kiln::conv_transpose1d(input, weight, o.bias(), o.stride(), o.padding(),
                                o.output_padding(), o.groups(), o.dilation());
}

kiln::Tensor conv_transpose2d(const kiln::Tensor& input, const kiln::Tensor& weight,
                              const ConvTranspose2dFuncOptions& o) {
  return kiln::conv_transpose2d(input, weight, o.bias(), o.stride(), o.padding(),
                                o.output_padding(), o.groups(), o.dilation());
}

kiln::Tensor conv_transpose3d(const kiln::Tensor& input, const kiln::Tensor& weight,
                              const ConvTranspose3dFuncOptions& o) {
  return kiln::conv_transpose3d(input, weight, o.bias(), o.stride(), o.padding(),
                                o.output_padding(), o.groups(), o.dilation());
}

}  // namespace torch::nn::functional
