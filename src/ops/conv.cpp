// Convolutions: conv1d, conv2d and conv3d, each with int padding and with a "same"/"valid" padding
// string (the .padding overloads, as PyTorch). All three run one kernel (conv1d as conv2d over a
// height of 1, conv2d as conv3d over a depth of 1). Registered from register_linalg_ops
// (src/ops/linalg.cpp), with the transposed convolutions (conv_transpose.cpp).
#include <array>

#include "kiln/ops/linalg.h"
#include "src/kernels/cpu/conv.h"
#include "src/ops/conv_common.h"
#include "src/ops/registry.h"

namespace kiln {
namespace {

// The shape rules of one convolution, in SymInt so that a trace with symbolic sizes gets
// symbolic output sizes (Note [Symbolic convolution output size] in conv_common.h); index 0 of
// the spatial arrays is D (1 for conv1d and conv2d), 1 is H (1 for conv1d), 2 is W (or L). The
// kernel takes the concrete geometry().
struct ConvSetup {
  bool batched = true;
  int spatial = 2;
  SymInt batch = 1, in_channels = 0, out_channels = 0;
  std::array<SymInt, 3> in_size{1, 1, 1}, kernel{1, 1, 1}, pad_before{0, 0, 0}, out_size{1, 1, 1};
  std::array<int64_t, 3> stride{1, 1, 1}, dilation{1, 1, 1};
  int64_t groups = 1;
  SymDimVector out_shape;

  // Kernels only: they never see symbolic sizes (expect_int throws if one slipped through).
  cpu::ConvGeometry geometry() const {
    ConvSizes s;
    for (int i = 0; i < 3; ++i) {
      s.in[i] = in_size[i].expect_int(), s.kernel[i] = kernel[i].expect_int();
      s.out[i] = out_size[i].expect_int(), s.pad[i] = pad_before[i].expect_int();
    }
    s.stride = stride, s.dilation = dilation;
    return conv_geometry(batch.expect_int(), in_channels.expect_int(), out_channels.expect_int(),
                         groups, s);
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
  for (int i = 0; i < 3; ++i) {
    KILN_CHECK(s.stride[i] > 0, ValueError, "{}: stride must be positive, got {}", op,
               shape_str(call.ints(3)));
    KILN_CHECK(s.dilation[i] > 0, ValueError, "{}: dilation must be positive, got {}", op,
               shape_str(call.ints(5)));
  }
  std::array<SymInt, 3> pad_after{0, 0, 0};
  for (int i = 0; i < spatial; ++i) {
    s.in_size[3 - spatial + i] = in_sizes[lead + 1 + i];
    s.kernel[3 - spatial + i] = w_sizes[2 + i];
  }
  if (call.arg(4).is_string()) {
    const std::string& mode = call.arg(4).string();
    KILN_CHECK(mode == "same" || mode == "valid", ValueError,
               "{}: padding must be \"same\" or \"valid\", got \"{}\"", op, mode);
    if (mode == "same") {
      KILN_CHECK(s.stride[0] == 1 && s.stride[1] == 1 && s.stride[2] == 1, ValueError,
                 "{}: padding=\"same\" needs stride 1, got {}", op, shape_str(call.ints(3)));
      // Total padding dilation * (k - 1); an odd total puts the extra zero at the end.
      for (int i = 0; i < 3; ++i) {
        const SymInt total = s.dilation[i] * (s.kernel[i] - 1);
        s.pad_before[i] = total / 2;
        pad_after[i] = total - s.pad_before[i];
      }
    }
  } else {
    const auto padding = conv_spatial_arg(op, "padding", call.ints(4), spatial, 0);
    for (int i = 0; i < 3; ++i) {
      KILN_CHECK(padding[i] >= 0, ValueError, "{}: padding must be non-negative, got {}", op,
                 shape_str(call.ints(4)));
      s.pad_before[i] = pad_after[i] = padding[i];
    }
  }
  for (int i = 0; i < 3; ++i) {
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
  for (int i = 3 - spatial; i < 3; ++i) s.out_shape.push_back(s.out_size[i]);
  return s;
}

template <int Spatial>
void meta_conv(OpCall& call) {
  call.set_output(0, call.tensor(0).dtype(), conv_setup(call, Spatial).out_shape);
}
template <int Spatial>
void cpu_conv(OpCall& call) {
  cpu::convolution(call.tensor(0), call.tensor(1), call.optional_tensor(2), call.output(0),
                   conv_setup(call, Spatial).geometry());
}

IValue bias_arg(const Tensor& bias) { return bias.defined() ? IValue(bias) : IValue(); }
const char* padding_name(ConvPadding p) { return p == ConvPadding::Same ? "same" : "valid"; }

}  // namespace

std::array<int64_t, 3> conv_spatial_arg(std::string_view op, std::string_view what, IntArrayRef v,
                                        int spatial, int64_t fill) {
  KILN_CHECK(v.size() == 1 || static_cast<int>(v.size()) == spatial, ValueError,
             "{}: {} must have 1 or {} elements, got {}", op, what, spatial, shape_str(v));
  std::array<int64_t, 3> out{fill, fill, fill};
  for (int i = 0; i < spatial; ++i) out[3 - spatial + i] = v.size() == 1 ? v[0] : v[i];
  return out;
}

cpu::ConvGeometry conv_geometry(int64_t batch, int64_t in_channels, int64_t out_channels,
                                int64_t groups, const ConvSizes& s) {
  cpu::ConvGeometry g;
  g.batch = batch, g.in_channels = in_channels, g.out_channels = out_channels, g.groups = groups;
  g.in_d = s.in[0], g.in_h = s.in[1], g.in_w = s.in[2];
  g.kernel_d = s.kernel[0], g.kernel_h = s.kernel[1], g.kernel_w = s.kernel[2];
  g.out_d = s.out[0], g.out_h = s.out[1], g.out_w = s.out[2];
  g.stride_d = s.stride[0], g.stride_h = s.stride[1], g.stride_w = s.stride[2];
  g.pad_d = s.pad[0], g.pad_h = s.pad[1], g.pad_w = s.pad[2];
  g.dilation_d = s.dilation[0], g.dilation_h = s.dilation[1], g.dilation_w = s.dilation[2];
  return g;
}

void register_conv_ops(OpRegistry& r) {
  const DTypeSet floating = dtypes::kFloating;
  r.add({.name = "conv1d",
         .schema = "conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, "
                   "SymInt[1] padding=0, SymInt[1] dilation=1, SymInt groups=1) -> Tensor",
         .family = "linalg",
         .meta = meta_conv<1>,
         .cpu = cpu_conv<1>,
         .dtypes = floating});
  r.add({.name = "conv1d.padding",
         .schema =
             "conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] "
             "stride=1, str padding=\"valid\", SymInt[1] dilation=1, SymInt groups=1) -> Tensor",
         .family = "linalg",
         .meta = meta_conv<1>,
         .cpu = cpu_conv<1>,
         .dtypes = floating});
  r.add({.name = "conv2d",
         .schema = "conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, "
                   "SymInt[2] padding=0, SymInt[2] dilation=1, SymInt groups=1) -> Tensor",
         .family = "linalg",
         .meta = meta_conv<2>,
         .cpu = cpu_conv<2>,
         .dtypes = floating});
  r.add({.name = "conv2d.padding",
         .schema =
             "conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] "
             "stride=1, str padding=\"valid\", SymInt[2] dilation=1, SymInt groups=1) -> Tensor",
         .family = "linalg",
         .meta = meta_conv<2>,
         .cpu = cpu_conv<2>,
         .dtypes = floating});
  r.add({.name = "conv3d",
         .schema = "conv3d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=1, "
                   "SymInt[3] padding=0, SymInt[3] dilation=1, SymInt groups=1) -> Tensor",
         .family = "linalg",
         .meta = meta_conv<3>,
         .cpu = cpu_conv<3>,
         .dtypes = floating});
  r.add({.name = "conv3d.padding",
         .schema =
             "conv3d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] "
             "stride=1, str padding=\"valid\", SymInt[3] dilation=1, SymInt groups=1) -> Tensor",
         .family = "linalg",
         .meta = meta_conv<3>,
         .cpu = cpu_conv<3>,
         .dtypes = floating});
  register_conv_transpose_ops(r);
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

Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  static const OpId id = op_id("conv3d");
  return dispatch::call_tensor(id, input, weight, bias_arg(bias), stride, padding, dilation,
                               groups);
}
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              ConvPadding padding, IntArrayRef dilation, int64_t groups) {
  static const OpId id = op_id("conv3d.padding");
  return dispatch::call_tensor(id, input, weight, bias_arg(bias), stride, padding_name(padding),
                               dilation, groups);
}

}  // namespace kiln
