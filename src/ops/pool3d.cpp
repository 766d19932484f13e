// The 3-d pools: avg_pool3d and adaptive_avg_pool3d are composites of two 2-d passes (Note
// [Separable 3-d pooling]); max_pool3d_with_indices has its own kernel
// (src/kernels/cpu/pool3d.cpp), since an index names one element of the whole box, and max_pool3d
// returns its values. Registered from register_linalg_ops (src/ops/linalg.cpp).
//
// Note [Separable 3-d pooling]
// A 3-d window is a product of per-dim windows Z x Y x X, so
//   sum over the box = sum over z in Z of (sum over (y, x) in Y x X),
// and avg_pool3d is a 2-d pass over (H, W) of each depth slice ([B, D, H, W], the depth as the
// channels), then a 2-d pass over (D, 1) of its result seen as [B, 1, D, oH * oW], a window
// (kD, 1) with stride (sD, 1) and padding (pD, 0). Each pass computes the output size of its dims
// by the same per-dim rule as the 3-d op (ceil_mode included; a dim of window 1 keeps its size),
// so the shapes agree. The divisor is a product of per-dim factors: with count_include_pad each
// factor is the window clipped to the padded input, without it the taps inside the input, in
// both cases per dim (the box's count is the product of the dims' counts), so dividing in each
// pass by its own factor divides by the 3-d divisor. divisor_override d is not a product: the
// first pass sums (divisor 1), the second divides by d. Adaptive windows are per-dim products as
// well (their divisor the product of the lengths), so adaptive_avg_pool3d is an adaptive pass over
// (H, W) and one over the depth. float16 and bfloat16 run both passes in float32 and round once,
// as the 2-d kernels, which accumulate in float, do: rounding between the passes would lose the
// digits of a small average of large values. The OpInfos (tests/ops/pool3d_opinfo.cpp) check
// both against float64 loops over the whole box.
//
// Max is separable too (the max of slice maxima), but max_pool3d does not use it: under
// kiln::compile the two max_pool2d passes fuse into one loop whose taps index through the
// [B, 1, D, oH * oW] reshape, generated code ten times the size of the extern kernel's call for
// no gain on the CPU, and the indices need the whole box anyway.
#include "src/kernels/cpu/pool3d.h"
#include "kiln/ops/pooling.h"
#include "src/ops/pool_nd.h"
#include "src/ops/registry.h"

namespace kiln {
namespace {

// The leading (batch, channel) dims of a [.., D, H, W] input, and their product.
SymDimVector leading(const Tensor& self) {
  const SymIntArrayRef s = self.sym_sizes();
  return SymDimVector(s.begin(), s.end() - 3);
}
SymInt product(const SymDimVector& v) {
  SymInt p = 1;
  for (const SymInt& s : v) p *= s;
  return p;
}

// The first pass's input: [B, D, H, W], B the leading dims' product (the batch may be empty).
Tensor depth_as_channels(const Tensor& self) {
  const SymIntArrayRef s = self.sym_sizes();
  const size_t n = s.size();
  return self.reshape({product(leading(self)), s[n - 3], s[n - 2], s[n - 1]});
}

// The second pass's input: y [B, D, oH, oW] as [B, 1, D, oH * oW].
Tensor depth_as_height(const Tensor& y) {
  const SymIntArrayRef s = y.sym_sizes();
  return y.reshape({s[0], 1, s[1], s[2] * s[3]});
}

// The result z [B, 1, oD, oH * oW] as [.., oD, oH, oW] (oH, oW from the first pass's y).
Tensor unflatten_boxes(const Tensor& self, const Tensor& y, const Tensor& z) {
  SymDimVector shape = leading(self);
  shape.push_back(z.sym_sizes()[2]);
  shape.push_back(y.sym_sizes()[2]);
  shape.push_back(y.sym_sizes()[3]);
  return z.reshape(shape);
}

// Reduced-precision floats average in float32 (Note [Separable 3-d pooling]); `back` undoes it.
Tensor in_opmath(const Tensor& self) {
  const ScalarType t = self.dtype();
  return t == kFloat16 || t == kBFloat16 ? self.to(kFloat32) : self;
}
Tensor back(const Tensor& result, const Tensor& self) {
  return result.dtype() == self.dtype() ? result : result.to(self.dtype());
}

DimVector hw(const std::array<int64_t, 3>& v) { return {v[1], v[2]}; }
DimVector depth(const std::array<int64_t, 3>& v, int64_t other) { return {v[0], other}; }

// avg_pool3d(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
void composite_avg_pool3d(OpCall& call) {
  const Tensor& self = call.tensor(0);
  check_pool_nd_dtype(call, self);
  const bool ceil = call.bool_arg(4), include_pad = call.bool_arg(5);
  const std::optional<int64_t> divisor = call.arg(6).optional_int();
  const PoolNdShape p = pool_nd_window_shape(call.name(), self, 3, call.ints(1), call.ints(2),
                                             call.ints(3), {}, ceil);
  check_divisor(call.name(), divisor);
  // With divisor_override the first pass sums and the second divides once.
  const std::optional<int64_t> first_divisor = divisor ? std::optional<int64_t>(1) : std::nullopt;
  const Tensor y = avg_pool2d(depth_as_channels(in_opmath(self)), hw(p.kernel), hw(p.stride),
                              hw(p.padding), ceil, include_pad, first_divisor);
  const Tensor z = avg_pool2d(depth_as_height(y), depth(p.kernel, 1), depth(p.stride, 1),
                              depth(p.padding, 0), ceil, include_pad, divisor);
  call.set_output(0, back(unflatten_boxes(self, y, z), self));
}

// adaptive_avg_pool3d(self, output_size). The depth pass needs oH * oW > 0 (a 2-d pool refuses
// an empty spatial dim); an empty output needs no pass: it is a reshape of the empty y.
void composite_adaptive_avg_pool3d(OpCall& call) {
  const Tensor& self = call.tensor(0);
  check_pool_nd_dtype(call, self);
  const std::array<int64_t, 3> out = adaptive_nd_output_size(call.name(), self, 3, call.ints(1));
  const Tensor y = adaptive_avg_pool2d(depth_as_channels(in_opmath(self)), hw(out));
  SymDimVector shape = leading(self);
  for (const int64_t o : out) shape.push_back(o);
  if (out[1] * out[2] == 0) {
    call.set_output(0, back(y.reshape(shape), self));
    return;
  }
  // Along oH * oW the adaptive windows of a size pooled to itself are single elements.
  const Tensor z = adaptive_avg_pool2d(depth_as_height(y), {out[0], out[1] * out[2]});
  call.set_output(0, back(z.reshape(shape), self));
}

// ---- max_pool3d_with_indices: its own kernel ----

PoolNdShape max_shape(const OpCall& call) {
  return pool_nd_window_shape(call.name(), call.tensor(0), 3, call.ints(1), call.ints(2),
                              call.ints(3), call.ints(4), call.bool_arg(5));
}

void meta_max_pool3d_with_indices(OpCall& call) {
  const PoolNdShape p = max_shape(call);
  const Tensor& self = call.tensor(0);
  const SymDimVector shape = pooled_nd_shape(self, p.out);
  call.set_output(0, self.dtype(), shape);
  call.set_output(1, kInt64, shape);
}

void cpu_max_pool3d_with_indices(OpCall& call) {
  const PoolNdShape p = max_shape(call);
  const Tensor& self = call.tensor(0);
  cpu::Pool3dGeometry g;
  g.planes = 1;
  for (int64_t d = 0; d < self.dim() - 3; ++d) g.planes *= self.sizes()[d];
  for (size_t i = 0; i < 3; ++i) {
    g.in[i] = p.in[i].expect_int();
    g.out[i] = p.out[i].expect_int();
  }
  g.kernel = p.kernel, g.stride = p.stride, g.pad = p.padding, g.dilation = p.dilation;
  cpu::max_pool3d_with_indices(self, call.output(0), call.output(1), g);
}

// max_pool3d(self, kernel_size, stride, padding, dilation, ceil_mode): the values of
// max_pool3d_with_indices (its checks name max_pool3d first).
void composite_max_pool3d(OpCall& call) {
  const Tensor& self = call.tensor(0);
  check_pool_nd_dtype(call, self);
  pool_nd_window_shape(call.name(), self, 3, call.ints(1), call.ints(2), call.ints(3), call.ints(4),
                       call.bool_arg(5));
  call.set_output(0, max_pool3d_with_indices(self, call.ints(1), call.ints(2), call.ints(3),
                                             call.ints(4), call.bool_arg(5))
                         .first);
}

}  // namespace

void register_pool3d_ops(OpRegistry& r) {
  r.add({.name = "max_pool3d",
         .schema =
             "max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
             "int[3] dilation=1, bool ceil_mode=False) -> Tensor",
         .family = "linalg",
         .composite = composite_max_pool3d,
         .dtypes = dtypes::kNumeric});
  r.add({.name = "max_pool3d_with_indices",
         .schema = "max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], "
                   "int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
         .family = "linalg",
         .meta = meta_max_pool3d_with_indices,
         .cpu = cpu_max_pool3d_with_indices,
         .dtypes = dtypes::kNumeric});
  r.add({.name = "avg_pool3d",
         .schema =
             "avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
             "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) "
             "-> Tensor",
         .family = "linalg",
         .composite = composite_avg_pool3d,
         .dtypes = dtypes::kFloating});
  r.add({.name = "adaptive_avg_pool3d",
         .schema = "adaptive_avg_pool3d(Tensor self, int[3] output_size) -> Tensor",
         .family = "linalg",
         .composite = composite_adaptive_avg_pool3d,
         .dtypes = dtypes::kFloating});
}

Tensor max_pool3d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  static const OpId id = op_id("max_pool3d");
  return dispatch::call_tensor(id, self, kernel_size, stride, padding, dilation, ceil_mode);
}
std::pair<Tensor, Tensor> max_pool3d_with_indices(const Tensor& self, IntArrayRef kernel_size,
                                                  IntArrayRef stride, IntArrayRef padding,
                                                  IntArrayRef dilation, bool ceil_mode) {
  static const OpId id = op_id("max_pool3d_with_indices");
  Stack out = dispatch::call_boxed(id, self, kernel_size, stride, padding, dilation, ceil_mode);
  return {std::move(out[0].tensor()), std::move(out[1].tensor())};
}
Tensor avg_pool3d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  static const OpId id = op_id("avg_pool3d");
  return dispatch::call_tensor(id, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                               divisor_override);
}
Tensor adaptive_avg_pool3d(const Tensor& self, IntArrayRef output_size) {
  static const OpId id = op_id("adaptive_avg_pool3d");
  return dispatch::call_tensor(id, self, output_size);
}

}  // namespace kiln
