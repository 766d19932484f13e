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

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// PyTorch's pooling output size: windows that start in the right padding are dropped in
// ceil_mode.
int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation,
                    bool ceil_mode) {
  int64_t out =
      floor_div(in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

void check_pool_input(std::string_view op, const Tensor& self) {
  KILN_CHECK(self.dim() == 3 || self.dim() == 4, ShapeError,
             "{}: expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape {}", op,
             shape_str(self.sizes()));
  for (int64_t d = self.dim() - 3; d < self.dim(); ++d)
    KILN_CHECK(self.size(d) > 0, ShapeError,
               "{}: input {} has a zero-size channel or spatial dim; only the batch may be empty",
               op, shape_str(self.sizes()));
}

}  // namespace

DimVector pooled_shape(const Tensor& self, int64_t oh, int64_t ow) {
  DimVector shape(self.sizes().begin(), self.sizes().end());
  shape[shape.size() - 2] = oh;
  shape[shape.size() - 1] = ow;
  return shape;
}

cpu::PoolGeometry pool_window_geometry(const OpCall& call, size_t self_arg, bool has_dilation,
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
  cpu::PoolGeometry g;
  g.in_h = self.size(-2);
  g.in_w = self.size(-1);
  g.planes = self.numel() / (g.in_h * g.in_w);
  g.kernel_h = kh, g.kernel_w = kw, g.stride_h = sh, g.stride_w = sw, g.pad_h = ph, g.pad_w = pw;
  g.dilation_h = dh, g.dilation_w = dw;
  g.out_h = pooled_size(g.in_h, kh, ph, sh, dh, ceil_mode);
  g.out_w = pooled_size(g.in_w, kw, pw, sw, dw, ceil_mode);
  KILN_CHECK(g.out_h > 0 && g.out_w > 0, ShapeError,
             "{}: input {} is too small for kernel ({}, {}) with padding ({}, {}) and dilation "
             "({}, {}): the output would be {}x{}",
             op, shape_str(self.sizes()), kh, kw, ph, pw, dh, dw, g.out_h, g.out_w);
  return g;
}

cpu::PoolGeometry adaptive_pool_geometry(const OpCall& call, size_t self_arg) {
  const Tensor& self = call.tensor(self_arg);
  const std::string_view op = base_name(call);
  check_pool_input(op, self);
  const auto [oh, ow] = pair_arg(op, "output_size", call.ints(self_arg + 1));
  KILN_CHECK(oh >= 0 && ow >= 0, ValueError, "{}: output_size must be non-negative, got ({}, {})",
             op, oh, ow);
  cpu::PoolGeometry g;
  g.in_h = self.size(-2);
  g.in_w = self.size(-1);
  g.planes = self.numel() / (g.in_h * g.in_w);
  g.out_h = oh;
  g.out_w = ow;
  return g;
}

namespace {

cpu::PoolGeometry window_geometry(const OpCall& call, bool has_dilation, bool ceil_mode) {
  return pool_window_geometry(call, 0, has_dilation, ceil_mode);
}

void meta_max_pool2d(OpCall& call) {
  const cpu::PoolGeometry g = window_geometry(call, true, call.bool_arg(5));
  const Tensor& self = call.tensor(0);
  const DimVector shape = pooled_shape(self, g.out_h, g.out_w);
  call.set_output(0, self.dtype(), shape);
  if (call.name() == "max_pool2d_with_indices") call.set_output(1, kInt64, shape);
}
void cpu_max_pool2d(OpCall& call) {
  const cpu::PoolGeometry g = window_geometry(call, true, call.bool_arg(5));
  cpu::max_pool2d(call.tensor(0), call.output(0),
                  call.num_outputs() > 1 ? call.output(1) : Tensor(), g);
}

void meta_avg_pool2d(OpCall& call) {
  const cpu::PoolGeometry g = window_geometry(call, false, call.bool_arg(4));
  const std::optional<int64_t> divisor = call.arg(6).optional_int();
  KILN_CHECK(!divisor || *divisor != 0, ValueError, "avg_pool2d: divisor_override must not be 0");
  call.set_output(0, call.tensor(0).dtype(), pooled_shape(call.tensor(0), g.out_h, g.out_w));
}
void cpu_avg_pool2d(OpCall& call) {
  const cpu::PoolGeometry g = window_geometry(call, false, call.bool_arg(4));
  cpu::avg_pool2d(call.tensor(0), call.output(0), g, call.bool_arg(5), call.arg(6).optional_int());
}

cpu::PoolGeometry adaptive_geometry(const OpCall& call) { return adaptive_pool_geometry(call, 0); }
void meta_adaptive_avg_pool2d(OpCall& call) {
  const cpu::PoolGeometry g = adaptive_geometry(call);
  call.set_output(0, call.tensor(0).dtype(), pooled_shape(call.tensor(0), g.out_h, g.out_w));
}
void cpu_adaptive_avg_pool2d(OpCall& call) {
  cpu::adaptive_avg_pool2d(call.tensor(0), call.output(0), adaptive_geometry(call));
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
