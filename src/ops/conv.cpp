// Convolutions: conv1d and conv2d, each with int padding and with a "same"/"valid" padding string
// (the .padding overloads, as PyTorch). conv1d runs as conv2d over a height of 1. Registered from
// register_linalg_ops (src/ops/linalg.cpp).
#include <array>

#include "kiln/ops/linalg.h"
#include "src/kernels/cpu/conv.h"
#include "src/ops/conv_common.h"
#include "src/ops/registry.h"

namespace kiln {
namespace {

// The shape rules of one convolution, in SymInt so that a trace with symbolic sizes gets
// symbolic output sizes (Note [Symbolic convolution output size] in conv_common.h); index 0 of
// the spatial arrays is H (1 for conv1d), 1 is W (or L). The kernel takes the concrete geometry().
struct ConvSetup {
  bool batched = true;
  int spatial = 2;
  SymInt batch = 1, in_channels = 0, out_channels = 0;
  std::array<SymInt, 2> in_size{1, 1}, kernel{1, 1}, pad_before{0, 0}, out_size{1, 1};
  std::array<int64_t, 2> stride{1, 1}, dilation{1, 1};
  int64_t groups = 1;
  SymDimVector out_shape;

  // Kernels only: they never see symbolic sizes (expect_int throws if one slipped through).
  cpu::ConvGeometry geometry() const {
    cpu::ConvGeometry g;
    g.batch = batch.expect_int();
    g.in_channels = in_channels.expect_int();
    g.in_h = in_size[0].expect_int(), g.in_w = in_size[1].expect_int();
    g.out_channels = out_channels.expect_int();
    g.kernel_h = kernel[0].expect_int(), g.kernel_w = kernel[1].expect_int();
    g.out_h = out_size[0].expect_int(), g.out_w = out_size[1].expect_int();
    g.stride_h = stride[0], g.stride_w = stride[1];
    g.pad_h = pad_before[0].expect_int(), g.pad_w = pad_before[1].expect_int();
    g.dilation_h = dilation[0], g.dilation_w = dilation[1];
    g.groups = groups;
    return g;
  }
};

std::string_view base_name(const OpCall& call) {
  std::string_view n = call.name();
  return n.substr(0, n.find('.'));
}

ConvSetup conv_setup(const OpCall& call, int spatial) {
  const std::string_view op = base_name(call);
  const Tensor& input = call.tensor(0);
  const Tensor& weight = call.tensor(1);
  const Tensor bias = call.optional_tensor(2);
  const int64_t groups = call.int_arg(6);
  ConvSetup s;
  s.spatial = spatial;
  s.groups = groups;
  KILN_CHECK(input.dim() == spatial + 1 || input.dim() == spatial + 2, ShapeError,
             "{}: expected a {}-D (batched) or {}-D (unbatched) input, got shape {}", op,
             spatial + 2, spatial + 1, shape_str(input.sym_sizes()));
  KILN_CHECK(
      weight.dim() == spatial + 2, ShapeError,
      "{}: weight must be {}-D [out_channels, in_channels / groups, kernel...], got shape {}", op,
      spatial + 2, shape_str(weight.sym_sizes()));
  KILN_CHECK(input.dtype() == weight.dtype(), DTypeError,
             "{}: input ({}) and weight ({}) must have the same dtype", op,
             dtype_name(input.dtype()), dtype_name(weight.dtype()));
  KILN_CHECK(!bias.defined() || bias.dtype() == input.dtype(), DTypeError,
             "{}: bias ({}) must have the input's dtype ({})", op, dtype_name(bias.dtype()),
             dtype_name(input.dtype()));
  KILN_CHECK(groups > 0, ValueError, "{}: groups must be positive, got {}", op, groups);
  s.batched = input.dim() == spatial + 2;
  const int64_t lead = s.batched ? 1 : 0;
  const SymIntArrayRef in_sizes = input.sym_sizes(), w_sizes = weight.sym_sizes();
  s.in_channels = in_sizes[lead];
  s.out_channels = w_sizes[0];
  // Channel counts come from parameters and are concrete in practice; a symbolic one guards.
  KILN_CHECK(s.in_channels == w_sizes[1] * groups, ShapeError,
             "{}: input {} has {} channels but weight {} with groups={} expects {} ({} x {})", op,
             shape_str(in_sizes), s.in_channels, shape_str(w_sizes), groups, w_sizes[1] * groups,
             w_sizes[1], groups);
  KILN_CHECK(s.out_channels % groups == 0, ShapeError,
             "{}: weight {} has {} output channels, not divisible by groups={}", op,
             shape_str(w_sizes), s.out_channels, groups);
  if (bias.defined())
    KILN_CHECK(bias.dim() == 1 && bias.sym_sizes()[0] == s.out_channels, ShapeError,
               "{}: bias must be 1-D of size out_channels={}, got shape {}", op, s.out_channels,
               shape_str(bias.sym_sizes()));

  s.stride = conv_spatial_arg(op, "stride", call.ints(3), spatial, 1);
  s.dilation = conv_spatial_arg(op, "dilation", call.ints(5), spatial, 1);
  for (int i = 0; i < 2; ++i) {
    KILN_CHECK(s.stride[i] > 0, ValueError, "{}: stride must be positive, got {}", op,
               shape_str(call.ints(3)));
    KILN_CHECK(s.dilation[i] > 0, ValueError, "{}: dilation must be positive, got {}", op,
               shape_str(call.ints(5)));
  }
  std::array<SymInt, 2> pad_after{0, 0};
  for (int i = 0; i < spatial; ++i) {
    s.in_size[2 - spatial + i] = in_sizes[lead + 1 + i];
    s.kernel[2 - spatial + i] = w_sizes[2 + i];
  }
  if (call.arg(4).is_string()) {
    const std::string& mode = call.arg(4).string();
    KILN_CHECK(mode == "same" || mode == "valid", ValueError,
               "{}: padding must be \"same\" or \"valid\", got \"{}\"", op, mode);
    if (mode == "same") {
      KILN_CHECK(s.stride[0] == 1 && s.stride[1] == 1, ValueError,
                 "{}: padding=\"same\" needs stride 1, got {}", op, shape_str(call.ints(3)));
      // Total padding dilation * (k - 1); an odd total puts the extra zero at the end.
      for (int i = 0; i < 2; ++i) {
        const SymInt total = s.dilation[i] * (s.kernel[i] - 1);
        s.pad_before[i] = total / 2;
        pad_after[i] = total - s.pad_before[i];
      }
    }
  } else {
    const auto padding = conv_spatial_arg(op, "padding", call.ints(4), spatial, 0);
    for (int i = 0; i < 2; ++i) {
      KILN_CHECK(padding[i] >= 0, ValueError, "{}: padding must be non-negative, got {}", op,
                 shape_str(call.ints(4)));
      s.pad_before[i] = pad_after[i] = padding[i];
    }
  }
  for (int i = 0; i < 2; ++i) {
    const SymInt padded = s.in_size[i] + s.pad_before[i] + pad_after[i];
    const SymInt span = s.dilation[i] * (s.kernel[i] - 1) + 1;
    // A symbolic input size guards here: the graph is valid only for inputs the kernel fits.
    KILN_CHECK(span <= padded, ShapeError,
               "{}: the (dilated) kernel size {} is larger than the padded input size {} "
               "(input {}, weight {}); pad the input or use a smaller kernel",
               op, span, padded, shape_str(in_sizes), shape_str(w_sizes));
    s.out_size[i] = conv_output_size(padded, s.kernel[i], s.stride[i], s.dilation[i]);
  }
  s.batch = s.batched ? in_sizes[0] : SymInt(1);
  if (s.batched) s.out_shape.push_back(s.batch);
  s.out_shape.push_back(s.out_channels);
  if (spatial == 2) s.out_shape.push_back(s.out_size[0]);
  s.out_shape.push_back(s.out_size[1]);
  return s;
}

void meta_conv1d(OpCall& call) {
  call.set_output(0, call.tensor(0).dtype(), conv_setup(call, 1).out_shape);
}
void meta_conv2d(OpCall& call) {
  call.set_output(0, call.tensor(0).dtype(), conv_setup(call, 2).out_shape);
}
void cpu_conv1d(OpCall& call) {
  cpu::conv2d(call.tensor(0), call.tensor(1), call.optional_tensor(2), call.output(0),
              conv_setup(call, 1).geometry());
}
void cpu_conv2d(OpCall& call) {
  cpu::conv2d(call.tensor(0), call.tensor(1), call.optional_tensor(2), call.output(0),
              conv_setup(call, 2).geometry());
}

IValue bias_arg(const Tensor& bias) { return bias.defined() ? IValue(bias) : IValue(); }
const char* padding_name(ConvPadding p) { return p == ConvPadding::Same ? "same" : "valid"; }

}  // namespace

std::array<int64_t, 2> conv_spatial_arg(std::string_view op, std::string_view what, IntArrayRef v,
                                        int spatial, int64_t fill) {
  KILN_CHECK(v.size() == 1 || static_cast<int>(v.size()) == spatial, ValueError,
             "{}: {} must have 1 or {} elements, got {}", op, what, spatial, shape_str(v));
  std::array<int64_t, 2> out{fill, fill};
  for (int i = 0; i < spatial; ++i) out[2 - spatial + i] = v.size() == 1 ? v[0] : v[i];
  return out;
}

void register_conv_ops(OpRegistry& r) {
  const DTypeSet floating = dtypes::kFloating;
  r.add({.name = "conv1d",
         .schema = "conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, "
                   "SymInt[1] padding=0, SymInt[1] dilation=1, SymInt groups=1) -> Tensor",
         .family = "linalg",
         .meta = meta_conv1d,
         .cpu = cpu_conv1d,
         .dtypes = floating});
  r.add({.name = "conv1d.padding",
         .schema =
             "conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] "
             "stride=1, str padding=\"valid\", SymInt[1] dilation=1, SymInt groups=1) -> Tensor",
         .family = "linalg",
         .meta = meta_conv1d,
         .cpu = cpu_conv1d,
         .dtypes = floating});
  r.add({.name = "conv2d",
         .schema = "conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, "
                   "SymInt[2] padding=0, SymInt[2] dilation=1, SymInt groups=1) -> Tensor",
         .family = "linalg",
         .meta = meta_conv2d,
         .cpu = cpu_conv2d,
         .dtypes = floating});
  r.add({.name = "conv2d.padding",
         .schema =
             "conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] "
             "stride=1, str padding=\"valid\", SymInt[2] dilation=1, SymInt groups=1) -> Tensor",
         .family = "linalg",
         .meta = meta_conv2d,
         .cpu = cpu_conv2d,
         .dtypes = floating});
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  static const OpId id = op_id("conv1d");
  return dispatch::call_tensor(id, input, weight, bias_arg(bias), stride, padding, dilation,
                               groups);
}
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              ConvPadding padding, IntArrayRef dilation, int64_t groups) {
  static const OpId id = op_id("conv1d.padding");
  return dispatch::call_tensor(id, input, weight, bias_arg(bias), stride, padding_name(padding),
                               dilation, groups);
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  static const OpId id = op_id("conv2d");
  return dispatch::call_tensor(id, input, weight, bias_arg(bias), stride, padding, dilation,
                               groups);
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              ConvPadding padding, IntArrayRef dilation, int64_t groups) {
  static const OpId id = op_id("conv2d.padding");
  return dispatch::call_tensor(id, input, weight, bias_arg(bias), stride, padding_name(padding),
                               dilation, groups);
}

}  // namespace kiln
