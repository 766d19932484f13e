// Transposed convolution composed of Kiln's ops: Note [Transposed convolution as a composite]
// in kiln/torch/nn_conv_transpose.h.
#include "kiln/torch/nn_conv_transpose.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "kiln/error.h"
#include "kiln/nn/init.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/shape.h"
#include "src/core/shape.h"

namespace torch {

namespace {

using kiln::IntArrayRef;
using kiln::ShapeError;
using kiln::Tensor;
using kiln::ValueError;

// One value per spatial dim: a one-element list is repeated (ValueError naming `op` for any other
// length, or a value below `min`).
template <size_t D>
std::array<int64_t, D> per_dim(const char* op, const char* what, IntArrayRef values, int64_t min) {
  KILN_CHECK(values.size() == D || values.size() == 1, ValueError,
             "{}: expected {} value(s) for {}, got {}", op, D, what, values.size());
  std::array<int64_t, D> out{};
  for (size_t i = 0; i < D; ++i) {
    out[i] = values[values.size() == 1 ? 0 : i];
    KILN_CHECK(out[i] >= min, ValueError, "{}: {} must be at least {}, got {}", op, what, min,
               out[i]);
  }
  return out;
}

template <size_t D>
Tensor conv_transpose(const char* op, const Tensor& input, const Tensor& weight, const Tensor& bias,
                      IntArrayRef stride_arg, IntArrayRef padding_arg,
                      IntArrayRef output_padding_arg, int64_t groups, IntArrayRef dilation_arg) {
  constexpr int64_t rank = static_cast<int64_t>(D);
  KILN_CHECK(input.defined() && weight.defined(), ValueError,
             "{}: the input and the weight must be defined tensors", op);
  KILN_CHECK(input.dim() == rank + 1 || input.dim() == rank + 2, ShapeError,
             "{}: expected a {}-D (unbatched) or {}-D (batched) input, got shape {}", op, rank + 1,
             rank + 2, kiln::shape_str(input.sym_sizes()));
  KILN_CHECK(weight.dim() == rank + 2, ShapeError,
             "{}: expected a {}-D weight (C_in, C_out / groups, *kernel), got shape {}", op,
             rank + 2, kiln::shape_str(weight.sym_sizes()));
  KILN_CHECK(groups > 0 && weight.size(0) % groups == 0, ValueError,
             "{}: groups ({}) must be positive and divide the weight's C_in ({})", op, groups,
             weight.size(0));
  const auto stride = per_dim<D>(op, "stride", stride_arg, 1);
  const auto padding = per_dim<D>(op, "padding", padding_arg, 0);
  const auto output_padding = per_dim<D>(op, "output_padding", output_padding_arg, 0);
  const auto dilation = per_dim<D>(op, "dilation", dilation_arg, 1);
  const Tensor x = input.dim() == rank + 2 ? input : input.unsqueeze(0);
  KILN_CHECK(x.size(1) == weight.size(0), ShapeError,
             "{}: the input has {} channels but the weight {} (C_in, C_out / groups, *kernel) "
             "expects {}",
             op, x.size(1), kiln::shape_str(weight.sym_sizes()), weight.size(0));

  // The input spread out: x[.., i, ..] lands at i * stride, zeros between (a view with a size-1
  // dim after each spatial dim, padded to the stride and flattened back).
  std::vector<int64_t> spread_view = {x.size(0), x.size(1)}, spread_pads,
                       spread_shape = spread_view;
  for (size_t i = 0; i < D; ++i) {
    spread_view.insert(spread_view.end(), {x.size(2 + static_cast<int64_t>(i)), 1});
    spread_shape.push_back(x.size(2 + static_cast<int64_t>(i)) * stride[i]);
  }
  for (size_t i = D; i-- > 0;) spread_pads.insert(spread_pads.end(), {0, stride[i] - 1, 0, 0});
  Tensor spread = kiln::pad(x.reshape(spread_view), spread_pads).reshape(spread_shape);

  // Full padding for the stride-1 convolution, minus `padding`, plus output_padding at the end;
  // the last stride - 1 zeros of the spreading are not part of the input's extent.
  std::vector<int64_t> full_pads;
  for (size_t i = D; i-- > 0;) {
    const int64_t kernel = weight.size(2 + static_cast<int64_t>(i));
    const int64_t reach = dilation[i] * (kernel - 1);
    const int64_t out_size = (x.size(2 + static_cast<int64_t>(i)) - 1) * stride[i] -
                             2 * padding[i] + reach + output_padding[i] + 1;
    KILN_CHECK(output_padding[i] < stride[i] || output_padding[i] < dilation[i], ValueError,
               "{}: output_padding ({}) must be smaller than the stride ({}) or the dilation ({})",
               op, output_padding[i], stride[i], dilation[i]);
    KILN_CHECK(out_size > 0, ShapeError,
               "{}: the output would have size {} in spatial dim {} (input {}, padding {})", op,
               out_size, i, kiln::shape_str(x.sym_sizes()), padding[i]);
    full_pads.insert(full_pads.end(), {reach - padding[i],
                                       reach - padding[i] + output_padding[i] - (stride[i] - 1)});
  }
  const Tensor padded = kiln::pad(spread, full_pads);

  // Weight (C_in, C_out/g, *k) -> (C_out, C_in/g, *k): swap the channel dims within each group,
  // then flip the kernel.
  const int64_t in_per_group = weight.size(0) / groups, out_per_group = weight.size(1);
  std::vector<int64_t> grouped = {groups, in_per_group, out_per_group};
  std::vector<int64_t> swapped = {groups * out_per_group, in_per_group};
  std::vector<int64_t> kernel_dims;
  for (size_t i = 0; i < D; ++i) {
    grouped.push_back(weight.size(2 + static_cast<int64_t>(i)));
    swapped.push_back(weight.size(2 + static_cast<int64_t>(i)));
    kernel_dims.push_back(2 + static_cast<int64_t>(i));
  }
  const Tensor w = weight.reshape(grouped).transpose(1, 2).reshape(swapped).flip(kernel_dims);
  const std::vector<int64_t> dil(dilation.begin(), dilation.end());
  Tensor out;
  if constexpr (D == 1) {
    out = kiln::conv1d(padded, w, bias, 1, 0, dil, groups);
  } else {
    out = kiln::conv2d(padded, w, bias, 1, 0, dil, groups);
  }
  return input.dim() == rank + 2 ? out : out.squeeze(0);
}

}  // namespace

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding,
                        int64_t groups, IntArrayRef dilation) {
  return conv_transpose<1>("conv_transpose1d", input, weight, bias, stride, padding, output_padding,
                           groups, dilation);
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding,
                        int64_t groups, IntArrayRef dilation) {
  return conv_transpose<2>("conv_transpose2d", input, weight, bias, stride, padding, output_padding,
                           groups, dilation);
}

}  // namespace torch

namespace torch::nn {

namespace detail {

namespace {

std::vector<int64_t> weight_shape(int64_t in, int64_t out, int64_t groups, IntArrayRef kernel) {
  std::vector<int64_t> shape = {in, out / groups};
  shape.insert(shape.end(), kernel.begin(), kernel.end());
  return shape;
}

template <size_t D>
const ConvTransposeOptions<D>& checked(const ConvTransposeOptions<D>& o) {
  const char* name = D == 1 ? "ConvTranspose1d" : "ConvTranspose2d";
  KILN_CHECK(o.in_channels() > 0 && o.out_channels() > 0, ValueError,
             "{}: in_channels ({}) and out_channels ({}) must be positive", name, o.in_channels(),
             o.out_channels());
  KILN_CHECK(
      o.groups() > 0 && o.in_channels() % o.groups() == 0 && o.out_channels() % o.groups() == 0,
      ValueError, "{}: groups ({}) must divide in_channels ({}) and out_channels ({})", name,
      o.groups(), o.in_channels(), o.out_channels());
  KILN_CHECK(std::holds_alternative<enumtype::kZeros>(o.padding_mode()), ValueError,
             "{}: only torch::kZeros padding mode is supported, got {}", name,
             enumtype::get_enum_name(o.padding_mode()));
  return o;
}

}  // namespace

template <size_t D>
ConvTransposeImpl<D>::ConvTransposeImpl(const ConvTransposeOptions<D>& options)
    : Module(D == 1 ? "ConvTranspose1d" : "ConvTranspose2d"),
      options(checked(options)),
      weight(register_parameter(
          "weight", kiln::empty(weight_shape(options.in_channels(), options.out_channels(),
                                             options.groups(), options.kernel_size())))),
      bias(register_parameter(
          "bias", options.bias() ? kiln::empty({options.out_channels()}) : kiln::Tensor())) {
  reset_parameters();
}

template <size_t D>
void ConvTransposeImpl<D>::reset_parameters() {
  kiln::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = kiln::nn::init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    kiln::nn::init::uniform_(bias, -bound, bound);
  }
}

template <size_t D>
kiln::Tensor ConvTransposeImpl<D>::run(const kiln::Tensor& input,
                                       const ExpandingArray<D>& output_padding) {
  check_input_defined(input);
  try {
    return D == 1 ? conv_transpose1d(input, weight, bias, options.stride(), options.padding(),
                                     output_padding, options.groups(), options.dilation())
                  : conv_transpose2d(input, weight, bias, options.stride(), options.padding(),
                                     output_padding, options.groups(), options.dilation());
  } catch (const kiln::ShapeError& e) {
    throw kiln::ShapeError(name() + ": " + e.what());
  } catch (const kiln::ValueError& e) {
    throw kiln::ValueError(name() + ": " + e.what());
  }
}

template <size_t D>
kiln::Tensor ConvTransposeImpl<D>::forward(const kiln::Tensor& input) {
  return run(input, options.output_padding());
}

template <size_t D>
kiln::Tensor ConvTransposeImpl<D>::forward(const kiln::Tensor& input, IntArrayRef output_size) {
  check_input_defined(input);
  KILN_CHECK(output_size.size() >= D && input.dim() >= static_cast<int64_t>(D), ValueError,
             "{}: output_size needs at least {} values, got {}", name(), D, output_size.size());
  std::array<int64_t, D> extra{};
  for (size_t i = 0; i < D; ++i) {
    const int64_t in_size = input.size(input.dim() - static_cast<int64_t>(D - i));
    const int64_t smallest = (in_size - 1) * options.stride()[i] - 2 * options.padding()[i] +
                             options.dilation()[i] * (options.kernel_size()[i] - 1) + 1;
    const int64_t wanted = output_size[output_size.size() - D + i];
    extra[i] = wanted - smallest;
    KILN_CHECK(extra[i] >= 0 && extra[i] < options.stride()[i], ValueError,
               "{}: output_size {} is not reachable: spatial dim {} can be {} to {}", name(),
               wanted, i, smallest, smallest + options.stride()[i] - 1);
  }
  return run(input, ExpandingArray<D>(extra));
}

template <size_t D>
std::string ConvTransposeImpl<D>::extra_repr() const {
  std::string s = fmt::format("{}, {}, kernel_size={}, stride={}", options.in_channels(),
                              options.out_channels(), options.kernel_size().to_kiln().repr(),
                              options.stride().to_kiln().repr());
  if (!options.padding().to_kiln().all_equal(0))
    s += ", padding=" + options.padding().to_kiln().repr();
  if (!options.output_padding().to_kiln().all_equal(0))
    s += ", output_padding=" + options.output_padding().to_kiln().repr();
  if (!options.dilation().to_kiln().all_equal(1))
    s += ", dilation=" + options.dilation().to_kiln().repr();
  if (options.groups() != 1) s += fmt::format(", groups={}", options.groups());
  if (!options.bias()) s += ", bias=False";
  return s;
}

template class ConvTransposeImpl<1>;
template class ConvTransposeImpl<2>;

}  // namespace detail

namespace functional {

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight,
                        const ConvTranspose1dFuncOptions& o) {
  return torch::conv_transpose1d(input, weight, o.bias(), o.stride(), o.padding(),
                                 o.output_padding(), o.groups(), o.dilation());
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight,
                        const ConvTranspose2dFuncOptions& o) {
  return torch::conv_transpose2d(input, weight, o.bias(), o.stride(), o.padding(),
                                 o.output_padding(), o.groups(), o.dilation());
}

}  // namespace functional

}  // namespace torch::nn
