// Transposed convolutions: conv_transpose1d, conv_transpose2d and conv_transpose3d, with ATen's
// arguments (input, weight, bias, stride, padding, output_padding, groups, dilation), and their
// gradient conv_transpose_backward. Registered by register_conv_ops (conv.cpp).
//
// Note [Transposed convolution as a convolution's gradient]
// A transposed convolution with weight [C_in, C_out / groups, *k] computes the input gradient of
// the convolution with the same stride, padding, dilation and groups whose weight that is (read
// as [out_channels = C_in, in_channels / groups = C_out / groups, *k]), for grad_output = its
// input: every input element scatters weight * value into the output at
// position * stride - padding + tap * dilation. So the kernel is that gradient's GEMM + col2im
// (cpu::conv_transpose over the convolution's geometry, whose input is this op's output), with
// no zeros multiplied. Along each spatial dim the output has
//   (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1
// positions: output_padding adds positions at the end that the convolution would not have read
// (it picks one of the sizes that convolve back to `in`); PyTorch bounds it by
// max(stride, dilation) - 1, and so does Kiln. By the same identity the gradients are
// convolutions: the input gradient is the convolution of grad_output with the weight, the weight
// gradient the convolution's weight gradient with grad_output as its input and the input as its
// output gradient, and the bias gradient grad_output's sum per channel (conv_transpose_backward,
// one op for every rank).
#include <array>

#include "kiln/ops/linalg.h"
#include "src/core/shape.h"
#include "src/kernels/cpu/conv.h"
#include "src/ops/conv_common.h"
#include "src/ops/linalg_backward.h"
#include "src/ops/registry.h"

namespace kiln {
namespace {

// Argument positions shared by the forward ops and conv_transpose_backward, from `first` (the
// stride): stride, padding, output_padding, groups, dilation.
struct TransposedArgs {
  IntArrayRef stride, padding, output_padding, dilation;
  int64_t groups;
};
TransposedArgs transposed_args(const OpCall& call, size_t first) {
  return {call.ints(first), call.ints(first + 1), call.ints(first + 2), call.ints(first + 4),
          call.int_arg(first + 3)};
}

// The shape rules of one transposed convolution in SymInt (Note [Symbolic convolution output
// size]: a trace with symbolic sizes gets symbolic output sizes), spatial arrays in (D, H, W)
// order as conv_spatial_arg gives them.
struct TransposedSetup {
  bool batched = true;
  SymInt batch = 1, in_channels = 0, out_channels = 0;
  std::array<SymInt, 3> in_size{1, 1, 1}, kernel{1, 1, 1}, out_size{1, 1, 1};
  std::array<int64_t, 3> stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1};
  int64_t groups = 1;
  SymDimVector out_shape;

  // The geometry of the convolution whose input gradient this is (see the Note): its input is
  // this op's output, its output this op's input.
  cpu::ConvGeometry geometry() const {
    ConvSizes s;
    for (int i = 0; i < 3; ++i) {
      s.in[i] = out_size[i].expect_int(), s.out[i] = in_size[i].expect_int();
      s.kernel[i] = kernel[i].expect_int();
    }
    s.stride = stride, s.pad = padding, s.dilation = dilation;
    return conv_geometry(batch.expect_int(), out_channels.expect_int(), in_channels.expect_int(),
                         groups, s);
  }
};

TransposedSetup transposed_setup(std::string_view op, const Tensor& input, const Tensor& weight,
                                 const Tensor& bias, const TransposedArgs& a, int spatial) {
  KILN_CHECK(input.dim() == spatial + 1 || input.dim() == spatial + 2, ShapeError,
             "{}: expected a {}-D (batched) or {}-D (unbatched) input, got shape {}", op,
             spatial + 2, spatial + 1, shape_str(input.sym_sizes()));
  KILN_CHECK(
      weight.dim() == spatial + 2, ShapeError,
      "{}: weight must be {}-D [in_channels, out_channels / groups, kernel...], got shape {}", op,
      spatial + 2, shape_str(weight.sym_sizes()));
  KILN_CHECK(input.dtype() == weight.dtype(), DTypeError,
             "{}: input ({}) and weight ({}) must have the same dtype", op,
             dtype_name(input.dtype()), dtype_name(weight.dtype()));
  KILN_CHECK(is_floating(input.dtype()), DTypeError,
             "{}: dtype {} is not supported; transposed convolutions need a floating dtype", op,
             dtype_name(input.dtype()));
  KILN_CHECK(!bias.defined() || bias.dtype() == input.dtype(), DTypeError,
             "{}: bias ({}) must have the input's dtype ({})", op, dtype_name(bias.dtype()),
             dtype_name(input.dtype()));
  KILN_CHECK(a.groups > 0, ValueError, "{}: groups must be positive, got {}", op, a.groups);
  TransposedSetup s;
  s.groups = a.groups;
  s.batched = input.dim() == spatial + 2;
  const int64_t lead = s.batched ? 1 : 0;
  const SymIntArrayRef in_sizes = input.sym_sizes(), w_sizes = weight.sym_sizes();
  s.in_channels = in_sizes[lead];
  s.out_channels = w_sizes[1] * a.groups;
  KILN_CHECK(s.in_channels == w_sizes[0], ShapeError,
             "{}: input {} has {} channels but weight {} [in_channels, out_channels / groups, "
             "kernel...] expects {}",
             op, shape_str(in_sizes), s.in_channels, shape_str(w_sizes), w_sizes[0]);
  KILN_CHECK(s.in_channels % a.groups == 0, ShapeError,
             "{}: weight {} has {} input channels, not divisible by groups={}", op,
             shape_str(w_sizes), s.in_channels, a.groups);
  if (bias.defined())
    KILN_CHECK(bias.dim() == 1 && bias.sym_sizes()[0] == s.out_channels, ShapeError,
               "{}: bias must be 1-D of size out_channels={} (weight {} with groups={}), got shape "
               "{}",
               op, s.out_channels, shape_str(w_sizes), a.groups, shape_str(bias.sym_sizes()));
  s.stride = conv_spatial_arg(op, "stride", a.stride, spatial, 1);
  s.padding = conv_spatial_arg(op, "padding", a.padding, spatial, 0);
  const auto output_padding = conv_spatial_arg(op, "output_padding", a.output_padding, spatial, 0);
  s.dilation = conv_spatial_arg(op, "dilation", a.dilation, spatial, 1);
  for (int i = 0; i < 3; ++i) {
    KILN_CHECK(s.stride[i] > 0 && s.dilation[i] > 0, ValueError,
               "{}: stride {} and dilation {} must be positive", op, shape_str(a.stride),
               shape_str(a.dilation));
    KILN_CHECK(s.padding[i] >= 0 && output_padding[i] >= 0, ValueError,
               "{}: padding {} and output_padding {} must be non-negative", op,
               shape_str(a.padding), shape_str(a.output_padding));
    KILN_CHECK(output_padding[i] < std::max(s.stride[i], s.dilation[i]), ValueError,
               "{}: output_padding {} must be smaller than the stride {} or the dilation {} in "
               "every dim",
               op, shape_str(a.output_padding), shape_str(a.stride), shape_str(a.dilation));
  }
  for (int i = 0; i < spatial; ++i) {
    const int d = 3 - spatial + i;
    s.in_size[d] = in_sizes[lead + 1 + i];
    s.kernel[d] = w_sizes[2 + i];
    s.out_size[d] = (s.in_size[d] - 1) * s.stride[d] - 2 * s.padding[d] +
                    s.dilation[d] * (s.kernel[d] - 1) + output_padding[d] + 1;
    // A symbolic input size guards here.
    KILN_CHECK(s.out_size[d] >= 1, ShapeError,
               "{}: input {} with weight {}, stride {}, padding {}, output_padding {} and "
               "dilation {} gives output size {} in spatial dim {}; use less padding",
               op, shape_str(in_sizes), shape_str(w_sizes), shape_str(a.stride),
               shape_str(a.padding), shape_str(a.output_padding), shape_str(a.dilation),
               s.out_size[d], i);
  }
  s.batch = s.batched ? in_sizes[0] : SymInt(1);
  if (s.batched) s.out_shape.push_back(s.batch);
  s.out_shape.push_back(s.out_channels);
  for (int d = 3 - spatial; d < 3; ++d) s.out_shape.push_back(s.out_size[d]);
  return s;
}

std::string_view base_name(const OpCall& call) {
  std::string_view n = call.name();
  return n.substr(0, n.find('.'));
}

template <int Spatial>
TransposedSetup forward_setup(const OpCall& call) {
  return transposed_setup(base_name(call), call.tensor(0), call.tensor(1), call.optional_tensor(2),
                          transposed_args(call, 3), Spatial);
}
template <int Spatial>
void meta_conv_transpose(OpCall& call) {
  call.set_output(0, call.tensor(0).dtype(), forward_setup<Spatial>(call).out_shape);
}
template <int Spatial>
void cpu_conv_transpose(OpCall& call) {
  cpu::conv_transpose(call.tensor(0), call.tensor(1), call.optional_tensor(2), call.output(0),
                      forward_setup<Spatial>(call).geometry());
}

// conv_transpose_backward(grad_output, input, weight, stride, padding, output_padding, groups,
// dilation, input_grad, weight_grad, bias_grad): the forward's setup (without a bias) and a
// grad_output of the forward output's shape.
constexpr std::string_view kBackward = "conv_transpose_backward";

TransposedSetup backward_setup(const OpCall& call) {
  const Tensor& grad_output = call.tensor(0);
  const Tensor& input = call.tensor(1);
  const Tensor& weight = call.tensor(2);
  KILN_CHECK(weight.dim() >= 3 && weight.dim() <= 5, ShapeError,
             "{}: weight must be 3-D, 4-D or 5-D [in_channels, out_channels / groups, "
             "kernel...], got shape {}",
             kBackward, shape_str(weight.sym_sizes()));
  KILN_CHECK(grad_output.dtype() == input.dtype(), DTypeError,
             "{}: grad_output ({}) must have the input's dtype ({})", kBackward,
             dtype_name(grad_output.dtype()), dtype_name(input.dtype()));
  TransposedSetup s = transposed_setup(kBackward, input, weight, Tensor(), transposed_args(call, 3),
                                       static_cast<int>(weight.dim()) - 2);
  const SymIntArrayRef go = grad_output.sym_sizes();
  bool fits = go.size() == s.out_shape.size();
  for (size_t i = 0; fits && i < go.size(); ++i) fits = sizes_equal(go[i], s.out_shape[i]);
  KILN_CHECK(fits, ShapeError,
             "{}: grad_output {} must have the shape {} of the transposed convolution's output "
             "(input {}, weight {})",
             kBackward, shape_str(go), shape_str(SymIntArrayRef(s.out_shape)),
             shape_str(input.sym_sizes()), shape_str(weight.sym_sizes()));
  return s;
}

void meta_conv_transpose_backward(OpCall& call) {
  const TransposedSetup s = backward_setup(call);
  const ScalarType dt = call.tensor(1).dtype();
  const SymDimVector empty{0};
  auto shape_if = [&](size_t mask_arg, SymIntArrayRef shape) {
    return call.bool_arg(mask_arg) ? shape : SymIntArrayRef(empty);
  };
  call.set_output(0, dt, shape_if(8, call.tensor(1).sym_sizes()));
  call.set_output(1, dt, shape_if(9, call.tensor(2).sym_sizes()));
  call.set_output(2, dt, shape_if(10, SymIntArrayRef(&s.out_channels, 1)));
}

void cpu_conv_transpose_backward(OpCall& call) {
  auto wanted = [&](size_t i) { return call.bool_arg(8 + i) ? call.output(i) : Tensor(); };
  cpu::conv_transpose_backward(call.tensor(0), call.tensor(1), call.tensor(2), wanted(0), wanted(1),
                               wanted(2), backward_setup(call).geometry());
}

IValue bias_arg(const Tensor& bias) { return bias.defined() ? IValue(bias) : IValue(); }

Tensor call_forward(OpId id, const Tensor& input, const Tensor& weight, const Tensor& bias,
                    IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding,
                    int64_t groups, IntArrayRef dilation) {
  return dispatch::call_tensor(id, input, weight, bias_arg(bias), stride, padding, output_padding,
                               groups, dilation);
}

}  // namespace

void register_conv_transpose_ops(OpRegistry& r) {
  r.add({.name = "conv_transpose1d",
         .schema = "conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] "
                   "stride=1, SymInt[1] padding=0, SymInt[1] output_padding=0, SymInt groups=1, "
                   "SymInt[1] dilation=1) -> Tensor",
         .family = "linalg",
         .meta = meta_conv_transpose<1>,
         .cpu = cpu_conv_transpose<1>,
         .dtypes = dtypes::kFloating});
  r.add({.name = "conv_transpose2d",
         .schema = "conv_transpose2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] "
                   "stride=1, SymInt[2] padding=0, SymInt[2] output_padding=0, SymInt groups=1, "
                   "SymInt[2] dilation=1) -> Tensor",
         .family = "linalg",
         .meta = meta_conv_transpose<2>,
         .cpu = cpu_conv_transpose<2>,
         .dtypes = dtypes::kFloating});
  r.add({.name = "conv_transpose3d",
         .schema = "conv_transpose3d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] "
                   "stride=1, SymInt[3] padding=0, SymInt[3] output_padding=0, SymInt groups=1, "
                   "SymInt[3] dilation=1) -> Tensor",
         .family = "linalg",
         .meta = meta_conv_transpose<3>,
         .cpu = cpu_conv_transpose<3>,
         .dtypes = dtypes::kFloating});
  r.add({.name = "conv_transpose_backward",
         .schema = "conv_transpose_backward(Tensor grad_output, Tensor input, Tensor weight, "
                   "SymInt[] stride, SymInt[] padding, SymInt[] output_padding, SymInt groups, "
                   "SymInt[] dilation, bool input_grad=True, bool weight_grad=True, bool "
                   "bias_grad=True) -> (Tensor, Tensor, Tensor)",
         .family = "linalg",
         .meta = meta_conv_transpose_backward,
         .cpu = cpu_conv_transpose_backward,
         .dtypes = dtypes::kFloating});
}

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding,
                        int64_t groups, IntArrayRef dilation) {
  static const OpId id = op_id("conv_transpose1d");
  return call_forward(id, input, weight, bias, stride, padding, output_padding, groups, dilation);
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding,
                        int64_t groups, IntArrayRef dilation) {
  static const OpId id = op_id("conv_transpose2d");
  return call_forward(id, input, weight, bias, stride, padding, output_padding, groups, dilation);
}
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding,
                        int64_t groups, IntArrayRef dilation) {
  static const OpId id = op_id("conv_transpose3d");
  return call_forward(id, input, weight, bias, stride, padding, output_padding, groups, dilation);
}

std::tuple<Tensor, Tensor, Tensor> conv_transpose_backward(
    const Tensor& grad_output, const Tensor& input, const Tensor& weight, IntArrayRef stride,
    IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation,
    std::array<bool, 3> output_mask) {
  static const OpId id = op_id("conv_transpose_backward");
  Stack out =
      dispatch::call_boxed(id, grad_output, input, weight, stride, padding, output_padding, groups,
                           dilation, output_mask[0], output_mask[1], output_mask[2]);
  return {std::move(out[0].tensor()), std::move(out[1].tensor()), std::move(out[2].tensor())};
}

}  // namespace kiln
