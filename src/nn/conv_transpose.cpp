#include "kiln/nn/conv_transpose.h"

#include <cmath>

#include "kiln/nn/init.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/linalg.h"
#include "src/core/shape.h"
#include "src/nn/naming.h"

namespace kiln::nn {
namespace {

std::string layer_name(size_t dims) { return fmt::format("ConvTranspose{}d", dims); }

// Options a ConvTransposeNd accepts, checked before its parameters are made.
template <size_t D>
const ConvTransposeOptions<D>& checked(int64_t in_channels, int64_t out_channels,
                                       const ExpandingArray<D>& kernel_size,
                                       const ConvTransposeOptions<D>& o) {
  const std::string name = layer_name(D);
  KILN_CHECK(in_channels > 0 && out_channels > 0, ValueError,
             "{}: in_channels and out_channels must be positive, got {} and {}", name, in_channels,
             out_channels);
  KILN_CHECK(o.groups > 0, ValueError, "{}: groups must be positive, got {}", name, o.groups);
  KILN_CHECK(in_channels % o.groups == 0 && out_channels % o.groups == 0, ValueError,
             "{}: in_channels ({}) and out_channels ({}) must both be divisible by groups ({})",
             name, in_channels, out_channels, o.groups);
  for (size_t d = 0; d < D; ++d) {
    KILN_CHECK(kernel_size[d] > 0 && o.stride[d] > 0 && o.dilation[d] > 0, ValueError,
               "{}: kernel_size {}, stride {} and dilation {} must be positive", name,
               kernel_size.repr(), o.stride.repr(), o.dilation.repr());
    KILN_CHECK(o.padding[d] >= 0 && o.output_padding[d] >= 0, ValueError,
               "{}: padding {} and output_padding {} must be >= 0", name, o.padding.repr(),
               o.output_padding.repr());
    KILN_CHECK(o.output_padding[d] < std::max(o.stride[d], o.dilation[d]), ValueError,
               "{}: output_padding {} must be smaller than the stride {} or the dilation {}", name,
               o.output_padding.repr(), o.stride.repr(), o.dilation.repr());
  }
  KILN_CHECK(o.padding_mode == "zeros", ValueError,
             "{}: only padding_mode \"zeros\" is supported for transposed convolutions, got \"{}\"",
             name, o.padding_mode);
  return o;
}

template <size_t D>
DimVector weight_shape(int64_t in_channels, int64_t out_channels,
                       const ExpandingArray<D>& kernel_size, int64_t groups) {
  DimVector shape{in_channels, out_channels / groups};
  for (int64_t k : kernel_size) shape.push_back(k);
  return shape;
}

}  // namespace

template <size_t D>
ConvTransposeNd<D>::ConvTransposeNd(int64_t in_channels, int64_t out_channels,
                                    ExpandingArray<D> kernel_size, ConvTransposeOptions<D> options)
    : Module(layer_name(D)),
      in_channels(in_channels),
      out_channels(out_channels),
      kernel_size(kernel_size),
      options(checked<D>(in_channels, out_channels, kernel_size, options)),
      weight(register_parameter(
          "weight",
          empty(weight_shape<D>(in_channels, out_channels, kernel_size, this->options.groups)))),
      bias(register_parameter("bias", this->options.bias ? empty({out_channels}) : Tensor())) {
  reset_parameters();
}

template <size_t D>
void ConvTransposeNd<D>::reset_parameters() {
  // The weight's fan_in is weight.size(1) * prod(kernel): C_out / groups, as PyTorch computes it.
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

template <size_t D>
Tensor ConvTransposeNd<D>::run(const Tensor& input, IntArrayRef output_padding) {
  const int64_t rank = static_cast<int64_t>(D);
  KILN_CHECK(input.dim() == rank + 1 || input.dim() == rank + 2, ShapeError,
             "{}: expected a {}-D (unbatched) or {}-D (batched) input, got shape {}",
             describe(*this), rank + 1, rank + 2, shape_str(input.sizes()));
  const int64_t channel_dim = input.dim() == rank + 2 ? 1 : 0;
  KILN_CHECK(input.size(channel_dim) == in_channels, ShapeError,
             "{}: expected an input with {} channels in dim {}, got shape {}", describe(*this),
             in_channels, channel_dim, shape_str(input.sizes()));
  return with_context(*this, [&]() -> Tensor {
    const ConvTransposeOptions<D>& o = options;
    if constexpr (D == 1) {
      return conv_transpose1d(input, weight, bias, o.stride, o.padding, output_padding, o.groups,
                              o.dilation);
    } else if constexpr (D == 2) {
      return conv_transpose2d(input, weight, bias, o.stride, o.padding, output_padding, o.groups,
                              o.dilation);
    } else {
      return conv_transpose3d(input, weight, bias, o.stride, o.padding, output_padding, o.groups,
                              o.dilation);
    }
  });
}

template <size_t D>
Tensor ConvTransposeNd<D>::forward(const Tensor& input) {
  return run(input, options.output_padding);
}

template <size_t D>
Tensor ConvTransposeNd<D>::forward(const Tensor& input, IntArrayRef output_size) {
  const size_t rank = D;
  const size_t non_spatial = input.dim() == static_cast<int64_t>(rank + 1) ? 1 : 2;
  KILN_CHECK(input.dim() >= static_cast<int64_t>(rank) &&
                 (output_size.size() == rank || output_size.size() == rank + non_spatial),
             ValueError,
             "{}: output_size must have {} or {} elements (the spatial sizes, or the whole output "
             "shape), got {}",
             describe(*this), rank, rank + non_spatial, shape_str(output_size));
  const IntArrayRef spatial = output_size.slice(output_size.size() - rank);
  std::array<int64_t, D> output_padding{};
  for (size_t i = 0; i < D; ++i) {
    const int64_t in_size = input.size(input.dim() - static_cast<int64_t>(rank - i));
    const int64_t smallest = (in_size - 1) * options.stride[i] - 2 * options.padding[i] +
                             options.dilation[i] * (kernel_size[i] - 1) + 1;
    const int64_t largest = smallest + options.stride[i] - 1;
    KILN_CHECK(spatial[i] >= smallest && spatial[i] <= largest, ValueError,
               "{}: output_size {} is not reachable from input {}: spatial dim {} can be {} to {}",
               describe(*this), shape_str(output_size), shape_str(input.sizes()), i, smallest,
               largest);
    output_padding[i] = spatial[i] - smallest;
  }
  return run(input, IntArrayRef(output_padding.data(), D));
}

template <size_t D>
std::string ConvTransposeNd<D>::extra_repr() const {
  // PyTorch's order: padding, dilation, output_padding, groups, bias.
  std::string s = fmt::format("{}, {}, kernel_size={}, stride={}", in_channels, out_channels,
                              kernel_size.repr(), options.stride.repr());
  if (!options.padding.all_equal(0)) s += fmt::format(", padding={}", options.padding.repr());
  if (!options.dilation.all_equal(1)) s += fmt::format(", dilation={}", options.dilation.repr());
  if (!options.output_padding.all_equal(0))
    s += fmt::format(", output_padding={}", options.output_padding.repr());
  if (options.groups != 1) s += fmt::format(", groups={}", options.groups);
  if (!bias.defined()) s += ", bias=False";
  return s;
}

template class ConvTransposeNd<1>;
template class ConvTransposeNd<2>;
template class ConvTransposeNd<3>;

}  // namespace kiln::nn
