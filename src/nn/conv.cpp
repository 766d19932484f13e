#include "kiln/nn/conv.h"

#include <cmath>

#include "kiln/nn/init.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/shape.h"
#include "src/core/shape.h"
#include "src/nn/naming.h"

namespace kiln::nn {
namespace {

template <size_t D>
DimVector weight_shape(int64_t in_channels, int64_t out_channels,
                       const ExpandingArray<D>& kernel_size, int64_t groups) {
  DimVector shape{out_channels, groups > 0 ? in_channels / groups : in_channels};
  for (int64_t k : kernel_size) shape.push_back(k);
  return shape;
}

// Options a ConvNd accepts, checked before its parameters are made.
template <size_t D>
void check_conv_options(std::string_view name, int64_t in_channels, int64_t out_channels,
                        const ExpandingArray<D>& kernel_size, const ConvOptions<D>& o) {
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
  }
  if (o.padding.is_mode()) {
    const std::string& mode = o.padding.mode();
    KILN_CHECK(mode == "same" || mode == "valid", ValueError,
               "{}: padding must be \"same\", \"valid\" or sizes, got \"{}\"", name, mode);
    KILN_CHECK(mode != "same" || o.stride.all_equal(1), ValueError,
               "{}: padding=\"same\" is not supported for strided convolutions (stride {})", name,
               o.stride.repr());
  } else {
    for (int64_t p : o.padding.sizes())
      KILN_CHECK(p >= 0, ValueError, "{}: padding must be >= 0, got {}", name,
                 o.padding.sizes().repr());
  }
  KILN_CHECK(o.padding_mode == "zeros" || o.padding_mode == "reflect" ||
                 o.padding_mode == "replicate" || o.padding_mode == "circular",
             ValueError,
             "{}: padding_mode must be \"zeros\", \"reflect\", \"replicate\" or \"circular\", got "
             "\"{}\"",
             name, o.padding_mode);
}

std::string conv_name(size_t dims) { return fmt::format("Conv{}d", dims); }

}  // namespace

template <size_t D>
ConvNd<D>::ConvNd(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size,
                  ConvOptions<D> options)
    : Module(conv_name(D)),
      in_channels(in_channels),
      out_channels(out_channels),
      kernel_size(kernel_size),
      options((check_conv_options<D>(conv_name(D), in_channels, out_channels, kernel_size, options),
               std::move(options))),
      weight(register_parameter(
          "weight",
          empty(weight_shape<D>(in_channels, out_channels, kernel_size, this->options.groups)))),
      bias(register_parameter("bias", this->options.bias ? empty({out_channels}) : Tensor())) {
  reset_parameters();
}

template <size_t D>
void ConvNd<D>::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

template <size_t D>
Tensor ConvNd<D>::forward(const Tensor& input) {
  const int64_t rank = static_cast<int64_t>(D);
  KILN_CHECK(input.dim() == rank + 1 || input.dim() == rank + 2, ShapeError,
             "{}: expected a {}-D (unbatched) or {}-D (batched) input, got shape {}",
             describe(*this), rank + 1, rank + 2, shape_str(input.sizes()));
  const int64_t channel_dim = input.dim() == rank + 2 ? 1 : 0;
  KILN_CHECK(input.size(channel_dim) == in_channels, ShapeError,
             "{}: expected an input with {} channels in dim {}, got shape {}", describe(*this),
             in_channels, channel_dim, shape_str(input.sizes()));
  const ConvPaddingSpec<D>& padding = options.padding;
  auto conv = [&](const Tensor& x, auto&& pad_arg) {
    if constexpr (D == 1) {
      return conv1d(x, weight, bias, options.stride, pad_arg, options.dilation, options.groups);
    } else if constexpr (D == 2) {
      return conv2d(x, weight, bias, options.stride, pad_arg, options.dilation, options.groups);
    } else {
      return conv3d(x, weight, bias, options.stride, pad_arg, options.dilation, options.groups);
    }
  };
  return with_context(*this, [&]() -> Tensor {
    if (options.padding_mode == "zeros") {
      if (padding.is_mode())
        return conv(input, padding.mode() == "same" ? ConvPadding::Same : ConvPadding::Valid);
      return conv(input, padding.sizes().ref());
    }
    // Other modes pad explicitly first, (left, right) per dim starting from the last dim as
    // kiln::pad wants; "same" puts the odd element at the end, as the convolution op does.
    DimVector pads;
    for (size_t i = D; i-- > 0;) {
      int64_t left = 0, right = 0;
      if (!padding.is_mode()) {
        left = right = padding.sizes()[i];
      } else if (padding.mode() == "same") {
        const int64_t total = options.dilation[i] * (kernel_size[i] - 1);
        left = total / 2;
        right = total - left;
      }
      pads.push_back(left);
      pads.push_back(right);
    }
    return conv(pad(input, pads, options.padding_mode), IntArrayRef(int64_t{0}));
  });
}

template <size_t D>
std::string ConvNd<D>::extra_repr() const {
  std::string s = fmt::format("{}, {}, kernel_size={}, stride={}", in_channels, out_channels,
                              kernel_size.repr(), options.stride.repr());
  if (options.padding.is_mode()) {
    s += fmt::format(", padding={}", options.padding.mode());
  } else if (!options.padding.sizes().all_equal(0)) {
    s += fmt::format(", padding={}", options.padding.sizes().repr());
  }
  if (!options.dilation.all_equal(1)) s += fmt::format(", dilation={}", options.dilation.repr());
  if (options.groups != 1) s += fmt::format(", groups={}", options.groups);
  if (!bias.defined()) s += ", bias=False";
  if (options.padding_mode != "zeros") s += fmt::format(", padding_mode={}", options.padding_mode);
  return s;
}

template class ConvNd<1>;
template class ConvNd<2>;
template class ConvNd<3>;

}  // namespace kiln::nn
