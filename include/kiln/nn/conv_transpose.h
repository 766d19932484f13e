// ConvTranspose1d, ConvTranspose2d and ConvTranspose3d ("deconvolutions"), as
// torch.nn.ConvTranspose1d / 2d / 3d:
//
//   nn::ConvTranspose2d up(64, 32, 4, {.stride = 2, .padding = 1});   // doubles H and W
//   Tensor y = up(x);                                                 // [N, 32, 2H, 2W]
//   Tensor z = up.forward(x, {2 * H + 1, 2 * W + 1});                 // an output_size
//
// Input [N, C_in, *spatial] or [C_in, *spatial] (unbatched); the op is kiln::conv_transpose<D>d
// (kiln/ops/linalg.h). Initialized as PyTorch: weight [C_in, C_out / groups, *kernel] ~
// kaiming_uniform_(a = sqrt(5)) and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), where fan_in is
// the weight's fan_in: weight.size(1) * prod(kernel_size) = C_out / groups * prod(kernel_size).
#pragma once

#include <string>

#include "kiln/nn/expanding_array.h"
#include "kiln/nn/module.h"

namespace kiln::nn {

template <size_t D>
struct ConvTransposeOptions {
  ExpandingArray<D> stride = 1;
  // Removed from both ends of every spatial dim of the full output.
  ExpandingArray<D> padding = 0;
  // Added at the end of every spatial dim; smaller than the stride or the dilation.
  ExpandingArray<D> output_padding = 0;
  int64_t groups = 1;
  bool bias = true;
  ExpandingArray<D> dilation = 1;
  // Only "zeros", as in PyTorch.
  std::string padding_mode = "zeros";
};

template <size_t D>
class ConvTransposeNd : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(
        std::make_shared<ConvTransposeNd>(in_channels, out_channels, kernel_size, options));
  }
  ConvTransposeNd(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size,
                  ConvTransposeOptions<D> options = {});

  Tensor forward(const Tensor& input) override;
  // With the output's spatial size chosen by output_size (D sizes, or the whole output shape
  // with its batch and channel dims) instead of options.output_padding, as PyTorch's
  // forward(input, output_size): each size must lie in the stride's range of sizes that
  // convolve back to the input's (ValueError otherwise).
  Tensor forward(const Tensor& input, IntArrayRef output_size);
  std::string extra_repr() const override;
  // Draws fresh weights from the default generator (kiln::manual_seed).
  void reset_parameters();

  const int64_t in_channels;
  const int64_t out_channels;
  const ExpandingArray<D> kernel_size;
  const ConvTransposeOptions<D> options;
  Tensor& weight;  // [in_channels, out_channels / groups, *kernel_size]; Note [Parameter slots]
  Tensor& bias;    // [out_channels], undefined when options.bias is false

 private:
  Tensor run(const Tensor& input, IntArrayRef output_padding);
};

using ConvTranspose1d = ConvTransposeNd<1>;
using ConvTranspose2d = ConvTransposeNd<2>;
using ConvTranspose3d = ConvTransposeNd<3>;

}  // namespace kiln::nn
