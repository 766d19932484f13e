// The pooling gradients: max_pool2d_backward, max_pool2d_with_indices_backward,
// avg_pool2d_backward, adaptive_avg_pool2d_backward (kernels in src/kernels/cpu/pool_backward.cpp).
// Each takes grad_output first, then the forward's arguments, so the geometry checks are the
// forward's (src/ops/pool_common.h); grad_output must have the forward output's shape. Registered
// from register_linalg_ops (src/ops/linalg.cpp).
#include "src/kernels/cpu/conv.h"
#include "src/ops/linalg_backward.h"
#include "src/ops/pool_common.h"
#include "src/ops/registry.h"

namespace kiln {
namespace {

void check_grad_output(const OpCall& call, const cpu::PoolGeometry& g) {
  const Tensor& grad_output = call.tensor(0);
  const Tensor& self = call.tensor(1);
  KILN_CHECK(grad_output.dtype() == self.dtype(), DTypeError,
             "{}: grad_output ({}) must have the input's dtype ({})", call.name(),
             dtype_name(grad_output.dtype()), dtype_name(self.dtype()));
  KILN_CHECK(is_floating(self.dtype()), DTypeError,
             "{}: dtype {} is not supported; pooling gradients need a floating dtype", call.name(),
             dtype_name(self.dtype()));
  const DimVector expected = pooled_shape(self, g.out_h, g.out_w);
  KILN_CHECK(grad_output.sizes() == IntArrayRef(expected), ShapeError,
             "{}: grad_output {} must have the pooled output's shape {} (input {})", call.name(),
             shape_str(grad_output.sizes()), shape_str(expected), shape_str(self.sizes()));
}

// max_pool2d_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode):
// max_pool2d's gradient, which finds each window's argmax in self again (max_pool2d does not
// return indices; rescanning costs about what writing and reading them would).
cpu::PoolGeometry max_rescan_geometry(const OpCall& call) {
  const cpu::PoolGeometry g = pool_window_geometry(call, 1, true, call.bool_arg(6));
  check_grad_output(call, g);
  return g;
}
void meta_max_rescan_backward(OpCall& call) {
  max_rescan_geometry(call);
  call.set_output(0, call.tensor(1).dtype(), call.tensor(1).sizes());
}
void cpu_max_rescan_backward(OpCall& call) {
  cpu::max_pool2d_rescan_backward(call.tensor(0), call.tensor(1), call.output(0),
                                  max_rescan_geometry(call));
}

// max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation,
//                                  ceil_mode, indices)
cpu::PoolGeometry max_geometry(const OpCall& call) {
  const cpu::PoolGeometry g = pool_window_geometry(call, 1, true, call.bool_arg(6));
  check_grad_output(call, g);
  const Tensor& indices = call.tensor(7);
  KILN_CHECK(indices.dtype() == kInt64, DTypeError, "{}: indices must be int64, got {}",
             call.name(), dtype_name(indices.dtype()));
  KILN_CHECK(indices.sizes() == call.tensor(0).sizes(), ShapeError,
             "{}: indices {} must have grad_output's shape {}", call.name(),
             shape_str(indices.sizes()), shape_str(call.tensor(0).sizes()));
  return g;
}
void meta_max_backward(OpCall& call) {
  max_geometry(call);
  call.set_output(0, call.tensor(1).dtype(), call.tensor(1).sizes());
}
void cpu_max_backward(OpCall& call) {
  cpu::max_pool2d_backward(call.tensor(0), call.tensor(7), call.output(0), max_geometry(call));
}

// avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
//                     count_include_pad, divisor_override)
cpu::PoolGeometry avg_geometry(const OpCall& call) {
  const cpu::PoolGeometry g = pool_window_geometry(call, 1, false, call.bool_arg(5));
  const std::optional<int64_t> divisor = call.arg(7).optional_int();
  KILN_CHECK(!divisor || *divisor != 0, ValueError, "{}: divisor_override must not be 0",
             call.name());
  check_grad_output(call, g);
  return g;
}
void meta_avg_backward(OpCall& call) {
  avg_geometry(call);
  call.set_output(0, call.tensor(1).dtype(), call.tensor(1).sizes());
}
void cpu_avg_backward(OpCall& call) {
  cpu::avg_pool2d_backward(call.tensor(0), call.output(0), avg_geometry(call), call.bool_arg(6),
                           call.arg(7).optional_int());
}

// adaptive_avg_pool2d_backward(grad_output, self): output_size is grad_output's last two dims.
cpu::PoolGeometry adaptive_geometry(const OpCall& call) {
  const Tensor& grad_output = call.tensor(0);
  const Tensor& self = call.tensor(1);
  KILN_CHECK(grad_output.dim() == self.dim(), ShapeError,
             "{}: grad_output {} must have the rank of the input {}", call.name(),
             shape_str(grad_output.sizes()), shape_str(self.sizes()));
  KILN_CHECK(self.dim() == 3 || self.dim() == 4, ShapeError,
             "{}: expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape {}", call.name(),
             shape_str(self.sizes()));
  for (int64_t d = self.dim() - 3; d < self.dim(); ++d)
    KILN_CHECK(self.size(d) > 0, ShapeError,
               "{}: input {} has a zero-size channel or spatial dim; only the batch may be empty",
               call.name(), shape_str(self.sizes()));
  cpu::PoolGeometry g;
  g.in_h = self.size(-2);
  g.in_w = self.size(-1);
  g.planes = self.numel() / (g.in_h * g.in_w);
  g.out_h = grad_output.size(-2);
  g.out_w = grad_output.size(-1);
  check_grad_output(call, g);
  return g;
}
void meta_adaptive_backward(OpCall& call) {
  adaptive_geometry(call);
  call.set_output(0, call.tensor(1).dtype(), call.tensor(1).sizes());
}
void cpu_adaptive_backward(OpCall& call) {
  cpu::adaptive_avg_pool2d_backward(call.tensor(0), call.output(0), adaptive_geometry(call));
}

}  // namespace

void register_pool_backward_ops(OpRegistry& r) {
  r.add({.name = "max_pool2d_backward",
         .schema =
             "max_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] "
             "stride, int[2] padding, int[2] dilation, bool ceil_mode) -> Tensor",
         .family = "linalg",
         .meta = meta_max_rescan_backward,
         .cpu = cpu_max_rescan_backward,
         .dtypes = dtypes::kFloating});
  r.add({.name = "max_pool2d_with_indices_backward",
         .schema = "max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] "
                   "kernel_size, int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, "
                   "Tensor indices) -> Tensor",
         .family = "linalg",
         .meta = meta_max_backward,
         .cpu = cpu_max_backward,
         .dtypes = dtypes::kFloating});
  r.add({.name = "avg_pool2d_backward",
         .schema =
             "avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] "
             "stride, int[2] padding, bool ceil_mode, bool count_include_pad, int? "
             "divisor_override) -> Tensor",
         .family = "linalg",
         .meta = meta_avg_backward,
         .cpu = cpu_avg_backward,
         .dtypes = dtypes::kFloating});
  r.add({.name = "adaptive_avg_pool2d_backward",
         .schema = "adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor",
         .family = "linalg",
         .meta = meta_adaptive_backward,
         .cpu = cpu_adaptive_backward,
         .dtypes = dtypes::kFloating});
}

Tensor max_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                           bool ceil_mode) {
  static const OpId id = op_id("max_pool2d_backward");
  return dispatch::call_tensor(id, grad_output, self, kernel_size, stride, padding, dilation,
                               ceil_mode);
}
Tensor max_pool2d_with_indices_backward(const Tensor& grad_output, const Tensor& self,
                                        IntArrayRef kernel_size, IntArrayRef stride,
                                        IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                        const Tensor& indices) {
  static const OpId id = op_id("max_pool2d_with_indices_backward");
  return dispatch::call_tensor(id, grad_output, self, kernel_size, stride, padding, dilation,
                               ceil_mode, indices);
}
Tensor avg_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                           bool count_include_pad, std::optional<int64_t> divisor_override) {
  static const OpId id = op_id("avg_pool2d_backward");
  return dispatch::call_tensor(id, grad_output, self, kernel_size, stride, padding, ceil_mode,
                               count_include_pad, divisor_override);
}
Tensor adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& self) {
  static const OpId id = op_id("adaptive_avg_pool2d_backward");
  return dispatch::call_tensor(id, grad_output, self);
}

}  // namespace kiln
