// convolution_backward: the gradients of conv1d, conv2d and conv3d (both padding overloads) in one
// op, with a GEMM kernel like the forward's (src/kernels/cpu/conv_backward.cpp). Registered from
// register_linalg_ops (src/ops/linalg.cpp).
//
// Note [Convolution backward padding]
// `padding` is the leading padding of each spatial dim. The trailing padding is implied by
// grad_output's size: equal to the leading padding, or one more (padding="same" with an odd total
// puts the extra zero at the end). That covers every forward call, so one op serves both conv
// overloads, and the meta function still rejects a grad_output of any other size. (The kernel only
// reads the leading padding: trailing zeros only decide how many output positions there are.)
#include "src/kernels/cpu/conv.h"
#include "src/ops/conv_common.h"
#include "src/ops/linalg_backward.h"
#include "src/ops/registry.h"

namespace kiln {
namespace {

constexpr std::string_view kOp = "convolution_backward";

// Validates a call (arguments: grad_output, input, weight, stride, padding, dilation, groups, 3
// output-mask bools) with SymInt arithmetic, so a trace with symbolic sizes only guards on what the
// checks need. Returns the geometry the kernel runs with when `want_geometry` (concrete sizes
// only).
cpu::ConvGeometry check_backward(const OpCall& call, bool want_geometry) {
  const Tensor& grad_output = call.tensor(0);
  const Tensor& input = call.tensor(1);
  const Tensor& weight = call.tensor(2);
  const int64_t groups = call.int_arg(6);
  const SymIntArrayRef go_sizes = grad_output.sym_sizes(), in_sizes = input.sym_sizes(),
                       w_sizes = weight.sym_sizes();
  KILN_CHECK(weight.dim() >= 3 && weight.dim() <= 5, ShapeError,
             "{}: weight must be 3-D (conv1d), 4-D (conv2d) or 5-D (conv3d) [out_channels, "
             "in_channels / groups, kernel...], got shape {}",
             kOp, shape_str(w_sizes));
  const int spatial = static_cast<int>(weight.dim()) - 2;
  KILN_CHECK(input.dim() == spatial + 1 || input.dim() == spatial + 2, ShapeError,
             "{}: expected a {}-D (batched) or {}-D (unbatched) input for weight {}, got shape {}",
             kOp, spatial + 2, spatial + 1, shape_str(w_sizes), shape_str(in_sizes));
  KILN_CHECK(grad_output.dim() == input.dim(), ShapeError,
             "{}: grad_output {} must have the rank of input {}", kOp, shape_str(go_sizes),
             shape_str(in_sizes));
  KILN_CHECK(input.dtype() == weight.dtype() && grad_output.dtype() == input.dtype(), DTypeError,
             "{}: grad_output ({}), input ({}) and weight ({}) must have one dtype", kOp,
             dtype_name(grad_output.dtype()), dtype_name(input.dtype()),
             dtype_name(weight.dtype()));
  KILN_CHECK(is_floating(input.dtype()), DTypeError,
             "{}: dtype {} is not supported; convolution gradients need a floating dtype", kOp,
             dtype_name(input.dtype()));
  KILN_CHECK(groups > 0, ValueError, "{}: groups must be positive, got {}", kOp, groups);
  const bool batched = input.dim() == spatial + 2;
  const int64_t lead = batched ? 1 : 0;
  const SymInt in_channels = in_sizes[lead], out_channels = w_sizes[0];
  KILN_CHECK(in_channels == w_sizes[1] * groups, ShapeError,
             "{}: input {} has {} channels but weight {} with groups={} expects {}", kOp,
             shape_str(in_sizes), in_channels, shape_str(w_sizes), groups, w_sizes[1] * groups);
  KILN_CHECK(out_channels % groups == 0, ShapeError,
             "{}: weight {} has {} output channels, not divisible by groups={}", kOp,
             shape_str(w_sizes), out_channels, groups);
  KILN_CHECK(go_sizes[lead] == out_channels && (!batched || go_sizes[0] == in_sizes[0]), ShapeError,
             "{}: grad_output {} does not match input {} and weight {} in batch or channels", kOp,
             shape_str(go_sizes), shape_str(in_sizes), shape_str(w_sizes));

  const auto stride = conv_spatial_arg(kOp, "stride", call.ints(3), spatial, 1);
  const auto padding = conv_spatial_arg(kOp, "padding", call.ints(4), spatial, 0);
  const auto dilation = conv_spatial_arg(kOp, "dilation", call.ints(5), spatial, 1);
  std::array<SymInt, 3> in_size{1, 1, 1}, kernel{1, 1, 1}, out_size{1, 1, 1};
  for (int i = 0; i < spatial; ++i) {
    in_size[3 - spatial + i] = in_sizes[lead + 1 + i];
    kernel[3 - spatial + i] = w_sizes[2 + i];
    out_size[3 - spatial + i] = go_sizes[lead + 1 + i];
  }
  for (int i = 0; i < 3; ++i) {
    KILN_CHECK(stride[i] > 0 && dilation[i] > 0 && padding[i] >= 0, ValueError,
               "{}: stride {} and dilation {} must be positive and padding {} non-negative", kOp,
               shape_str(call.ints(3)), shape_str(call.ints(5)), shape_str(call.ints(4)));
    // See Note [Convolution backward padding]. The forward guarded that the kernel fits the
    // symmetrically padded input, so in a trace these comparisons repeat known facts; with
    // grad_output's size computed by the forward (the same expression) the equality is
    // structural and guards nothing new.
    const SymInt span = dilation[i] * (kernel[i] - 1) + 1;
    const SymInt padded = in_size[i] + 2 * padding[i];
    const bool fits = span <= padded;
    const bool fits_one_more = fits || span <= padded + 1;
    const SymInt symmetric =
        fits ? conv_output_size(padded, kernel[i], stride[i], dilation[i]) : SymInt(-1);
    const SymInt one_more = fits_one_more
                                ? conv_output_size(padded + 1, kernel[i], stride[i], dilation[i])
                                : SymInt(-1);
    KILN_CHECK(
        sizes_equal(out_size[i], symmetric) || sizes_equal(out_size[i], one_more), ShapeError,
        "{}: grad_output {} does not fit input {} and weight {} with stride {}, padding "
        "{}, dilation {}: spatial size {} should be {} (or {} with one more trailing zero "
        "of padding)",
        kOp, shape_str(go_sizes), shape_str(in_sizes), shape_str(w_sizes), shape_str(call.ints(3)),
        shape_str(call.ints(4)), shape_str(call.ints(5)), out_size[i], symmetric, one_more);
  }
  if (!want_geometry) return {};
  ConvSizes sizes;
  for (int i = 0; i < 3; ++i) {
    sizes.in[i] = in_size[i].expect_int(), sizes.kernel[i] = kernel[i].expect_int();
    sizes.out[i] = out_size[i].expect_int();
  }
  sizes.stride = stride, sizes.pad = padding, sizes.dilation = dilation;
  return conv_geometry(batched ? in_sizes[0].expect_int() : 1, in_channels.expect_int(),
                       out_channels.expect_int(), groups, sizes);
}

void meta_convolution_backward(OpCall& call) {
  check_backward(call, false);
  const ScalarType dt = call.tensor(1).dtype();
  const SymDimVector empty{0};
  auto shape_if = [&](size_t mask_arg, SymIntArrayRef shape) {
    return call.bool_arg(mask_arg) ? shape : SymIntArrayRef(empty);
  };
  const SymInt out_channels = call.tensor(2).sym_sizes()[0];
  call.set_output(0, dt, shape_if(7, call.tensor(1).sym_sizes()));
  call.set_output(1, dt, shape_if(8, call.tensor(2).sym_sizes()));
  call.set_output(2, dt, shape_if(9, SymIntArrayRef(&out_channels, 1)));
}

void cpu_convolution_backward(OpCall& call) {
  auto wanted = [&](size_t i) { return call.bool_arg(7 + i) ? call.output(i) : Tensor(); };
  cpu::convolution_backward(call.tensor(0), call.tensor(1), call.tensor(2), wanted(0), wanted(1),
                            wanted(2), check_backward(call, true));
}

}  // namespace

void register_conv_backward_ops(OpRegistry& r) {
  r.add({.name = "convolution_backward",
         .schema =
             "convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[] "
             "stride, SymInt[] padding, SymInt[] dilation, SymInt groups, bool input_grad=True, "
             "bool weight_grad=True, bool bias_grad=True) -> (Tensor, Tensor, Tensor)",
         .family = "linalg",
         .meta = meta_convolution_backward,
         .cpu = cpu_convolution_backward,
         .dtypes = dtypes::kFloating});
}

std::tuple<Tensor, Tensor, Tensor> convolution_backward(const Tensor& grad_output,
                                                        const Tensor& input, const Tensor& weight,
                                                        IntArrayRef stride, IntArrayRef padding,
                                                        IntArrayRef dilation, int64_t groups,
                                                        std::array<bool, 3> output_mask) {
  static const OpId id = op_id("convolution_backward");
  Stack out = dispatch::call_boxed(id, grad_output, input, weight, stride, padding, dilation,
                                   groups, output_mask[0], output_mask[1], output_mask[2]);
  return {std::move(out[0].tensor()), std::move(out[1].tensor()), std::move(out[2].tensor())};
}

}  // namespace kiln
