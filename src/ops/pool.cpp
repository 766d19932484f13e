// Pooling ops: max_pool2d (+ _with_indices, whose indices autograd needs), avg_pool2d,
// adaptive_avg_pool2d. Registered from register_linalg_ops (src/ops/linalg.cpp).
#include "kiln/ops/linalg.h"
#include "src/kernels/cpu/conv.h"
#include "src/ops/pool_common.h"
#include "src/ops/registry.h"

namespace kiln {
namespace {

std::string_view base_name(const OpCall& call) {
  std::string_view n = call.name();
  return n.substr(0, n.find('.'));
}

// A one- or two-element list as (h, w); an empty list gives `fallback`.
std::pair<int64_t, int64_t> pair_arg(std::string_view op, std::string_view what, IntArrayRef v,
                                     std::optional<std::pair<int64_t, int64_t>> fallback = {}) {
  if (v.empty() && fallback) return *fallback;
  KILN_CHECK(v.size() == 1 || v.size() == 2, ValueError,
             "{}: {} must be one int or two ints (h, w), got {}", op, what, shape_str(v));
  return v.size() == 1 ? std::pair{v[0], v[0]} : std::pair{v[0], v[1]};
}

void check_pool_input(std::string_view op, const Tensor& self) {
  KILN_CHECK(self.dim() == 3 || self.dim() == 4, ShapeError,
             "{}: expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape {}", op,
             shape_str(self.sym_sizes()));
  for (int64_t d = self.dim() - 3; d < self.dim(); ++d)
    KILN_CHECK(self.sym_sizes()[d] > 0, ShapeError,
               "{}: input {} has a zero-size channel or spatial dim; only the batch may be empty",
               op, shape_str(self.sym_sizes()));
}

}  // namespace

// PyTorch's pooling output size (the convolution rule, Note [Symbolic convolution output size],
// plus ceil_mode): windows that start in the right padding are dropped in ceil_mode. `/` on
// SymInt is floor division; with a symbolic input size only ceil_mode's adjustment guards.
SymInt pooled_size(SymInt in, int64_t k, int64_t pad, int64_t stride, int64_t dilation,
                   bool ceil_mode) {
  SymInt out = (in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0)) / stride + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) out -= 1;
  return out;
}

SymDimVector pooled_shape(const Tensor& self, SymInt oh, SymInt ow) {
  SymDimVector shape(self.sym_sizes().begin(), self.sym_sizes().end());
  shape[shape.size() - 2] = oh;
  shape[shape.size() - 1] = ow;
  return shape;
}

cpu::PoolGeometry PoolShape::geometry(const Tensor& self) const {
  cpu::PoolGeometry g;
  g.in_h = in_h.expect_int();
  g.in_w = in_w.expect_int();
  g.planes = 1;
  for (int64_t d = 0; d < self.dim() - 2; ++d) g.planes *= self.sizes()[d];
  g.out_h = out_h.expect_int();
  g.out_w = out_w.expect_int();
  g.kernel_h = kernel_h, g.kernel_w = kernel_w, g.stride_h = stride_h, g.stride_w = stride_w;
  g.pad_h = pad_h, g.pad_w = pad_w, g.dilation_h = dilation_h, g.dilation_w = dilation_w;
  return g;
}

PoolShape pool_window_shape(const OpCall& call, size_t self_arg, bool has_dilation,
                            bool ceil_mode) {
  const std::string_view op = base_name(call);
  const Tensor& self = call.tensor(self_arg);
  check_pool_input(op, self);
  const auto [kh, kw] = pair_arg(op, "kernel_size", call.ints(self_arg + 1));
  const auto [sh, sw] = pair_arg(op, "stride", call.ints(self_arg + 2), std::pair{kh, kw});
  const auto [ph, pw] = pair_arg(op, "padding", call.ints(self_arg + 3));
  const auto [dh, dw] = has_dilation ? pair_arg(op, "dilation", call.ints(self_arg + 4))
                                     : std::pair<int64_t, int64_t>{1, 1};
  KILN_CHECK(kh > 0 && kw > 0, ValueError, "{}: kernel_size must be positive, got ({}, {})", op, kh,
             kw);
  KILN_CHECK(sh > 0 && sw > 0, ValueError, "{}: stride must be positive, got ({}, {})", op, sh, sw);
  KILN_CHECK(dh > 0 && dw > 0, ValueError, "{}: dilation must be positive, got ({}, {})", op, dh,
             dw);
  KILN_CHECK(ph >= 0 && pw >= 0 && ph <= kh / 2 && pw <= kw / 2, ValueError,
             "{}: padding ({}, {}) must be non-negative and at most half the kernel size ({}, {})",
             op, ph, pw, kh, kw);
  PoolShape p;
  const SymIntArrayRef sizes = self.sym_sizes();
  p.in_h = sizes[sizes.size() - 2];
  p.in_w = sizes[sizes.size() - 1];
  p.kernel_h = kh, p.kernel_w = kw, p.stride_h = sh, p.stride_w = sw, p.pad_h = ph, p.pad_w = pw;
  p.dilation_h = dh, p.dilation_w = dw;
  p.out_h = pooled_size(p.in_h, kh, ph, sh, dh, ceil_mode);
  p.out_w = pooled_size(p.in_w, kw, pw, sw, dw, ceil_mode);
  // Guards with symbolic sizes: the graph is valid only for inputs at least one window large.
  KILN_CHECK(p.out_h > 0 && p.out_w > 0, ShapeError,
             "{}: input {} is too small for kernel ({}, {}) with padding ({}, {}) and dilation "
             "({}, {}): the output would be {}x{}",
             op, shape_str(sizes), kh, kw, ph, pw, dh, dw, p.out_h, p.out_w);
  return p;
}

PoolShape adaptive_pool_shape(const OpCall& call, size_t self_arg) {
  const Tensor& self = call.tensor(self_arg);
  const std::string_view op = base_name(call);
  check_pool_input(op, self);
  const auto [oh, ow] = pair_arg(op, "output_size", call.ints(self_arg + 1));
  KILN_CHECK(oh >= 0 && ow >= 0, ValueError, "{}: output_size must be non-negative, got ({}, {})",
             op, oh, ow);
  PoolShape p;
  const SymIntArrayRef sizes = self.sym_sizes();
  p.in_h = sizes[sizes.size() - 2];
  p.in_w = sizes[sizes.size() - 1];
  p.out_h = oh;
  p.out_w = ow;
  return p;
}

namespace {

PoolShape window_shape(const OpCall& call, bool has_dilation, bool ceil_mode) {
  return pool_window_shape(call, 0, has_dilation, ceil_mode);
}

void meta_max_pool2d(OpCall& call) {
  const PoolShape p = window_shape(call, true, call.bool_arg(5));
  const Tensor& self = call.tensor(0);
  const SymDimVector shape = pooled_shape(self, p.out_h, p.out_w);
  call.set_output(0, self.dtype(), shape);
  if (call.name() == "max_pool2d_with_indices") call.set_output(1, kInt64, shape);
}
void cpu_max_pool2d(OpCall& call) {
  const cpu::PoolGeometry g = window_shape(call, true, call.bool_arg(5)).geometry(call.tensor(0));
  cpu::max_pool2d(call.tensor(0), call.output(0),
                  call.num_outputs() > 1 ? call.output(1) : Tensor(), g);
}

void meta_avg_pool2d(OpCall& call) {
  const PoolShape p = window_shape(call, false, call.bool_arg(4));
  const std::optional<int64_t> divisor = call.arg(6).optional_int();
  KILN_CHECK(!divisor || *divisor != 0, ValueError, "avg_pool2d: divisor_override must not be 0");
  call.set_output(0, call.tensor(0).dtype(), pooled_shape(call.tensor(0), p.out_h, p.out_w));
}
void cpu_avg_pool2d(OpCall& call) {
  const cpu::PoolGeometry g = window_shape(call, false, call.bool_arg(4)).geometry(call.tensor(0));
  cpu::avg_pool2d(call.tensor(0), call.output(0), g, call.bool_arg(5), call.arg(6).optional_int());
}

void meta_adaptive_avg_pool2d(OpCall& call) {
  const PoolShape p = adaptive_pool_shape(call, 0);
  call.set_output(0, call.tensor(0).dtype(), pooled_shape(call.tensor(0), p.out_h, p.out_w));
}
void cpu_adaptive_avg_pool2d(OpCall& call) {
  cpu::adaptive_avg_pool2d(call.tensor(0), call.output(0),
                           adaptive_pool_shape(call, 0).geometry(call.tensor(0)));
}

}  // namespace

void register_pool_ops(OpRegistry& r) {
  r.add({.name = "max_pool2d",
         .schema =
             "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
             "int[2] dilation=1, bool ceil_mode=False) -> Tensor",
         .family = "linalg",
         .meta = meta_max_pool2d,
         .cpu = cpu_max_pool2d,
         .dtypes = dtypes::kNumeric});
  r.add({.name = "max_pool2d_with_indices",
         .schema = "max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], "
                   "int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
         .family = "linalg",
         .meta = meta_max_pool2d,
         .cpu = cpu_max_pool2d,
         .dtypes = dtypes::kNumeric});
  r.add({.name = "avg_pool2d",
         .schema =
             "avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
             "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) "
             "-> Tensor",
         .family = "linalg",
         .meta = meta_avg_pool2d,
         .cpu = cpu_avg_pool2d,
         .dtypes = dtypes::kFloating});
  r.add({.name = "adaptive_avg_pool2d",
         .schema = "adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor",
         .family = "linalg",
         .meta = meta_adaptive_avg_pool2d,
         .cpu = cpu_adaptive_avg_pool2d,
         .dtypes = dtypes::kFloating});
}

Tensor max_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  static const OpId id = op_id("max_pool2d");
  return dispatch::call_tensor(id, self, kernel_size, stride, padding, dilation, ceil_mode);
}
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size,
                                                  IntArrayRef stride, IntArrayRef padding,
                                                  IntArrayRef dilation, bool ceil_mode) {
  static const OpId id = op_id("max_pool2d_with_indices");
  Stack out = dispatch::call_boxed(id, self, kernel_size, stride, padding, dilation, ceil_mode);
  return {std::move(out[0].tensor()), std::move(out[1].tensor())};
}
Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  static const OpId id = op_id("avg_pool2d");
  return dispatch::call_tensor(id, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                               divisor_override);
}
Tensor adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size) {
  static const OpId id = op_id("adaptive_avg_pool2d");
  return dispatch::call_tensor(id, self, output_size);
}

}  // namespace kiln
