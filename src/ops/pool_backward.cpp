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

void check_grad_output(const OpCall& call, const PoolShape& p) {
  const Tensor& grad_output = call.tensor(0);
  const Tensor& self = call.tensor(1);
  KILN_CHECK(grad_output.dtype() == self.dtype(), DTypeError,
             "{}: grad_output ({}) must have the input's dtype ({})", call.name(),
             dtype_name(grad_output.dtype()), dtype_name(self.dtype()));
  KILN_CHECK(is_floating(self.dtype()), DTypeError,
             "{}: dtype {} is not supported; pooling gradients need a floating dtype", call.name(),
             dtype_name(self.dtype()));
  const SymDimVector expected = pooled_shape(self, p.out_h, p.out_w);
  // In a trace grad_output's sizes are the forward's output expressions, so this equality holds
  // structurally and guards nothing new.
  KILN_CHECK(shapes_equal(grad_output.sym_sizes(), expected), ShapeError,
             "{}: grad_output {} must have the pooled output's shape {} (input {})", call.name(),
             shape_str(grad_output.sym_sizes()), shape_str(expected), shape_str(self.sym_sizes()));
}

// max_pool2d_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode):
// max_pool2d's gradient, which finds each window's argmax in self again (max_pool2d does not
// return indices; rescanning costs about what writing and reading them would).
PoolShape max_rescan_shape(const OpCall& call) {
  const PoolShape p = pool_window_shape(call, 1, true, call.bool_arg(6));
  check_grad_output(call, p);
  return p;
}
void meta_max_rescan_backward(OpCall& call) {
  max_rescan_shape(call);
  call.set_output(0, call.tensor(1).dtype(), call.tensor(1).sym_sizes());
}
void cpu_max_rescan_backward(OpCall& call) {
  cpu::max_pool2d_rescan_backward(call.tensor(0), call.tensor(1), call.output(0),
                                  max_rescan_shape(call).geometry(call.tensor(1)));
}

// max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation,
//                                  ceil_mode, indices)
PoolShape max_shape(const OpCall& call) {
  const PoolShape p = pool_window_shape(call, 1, true, call.bool_arg(6));
  check_grad_output(call, p);
  const Tensor& indices = call.tensor(7);
  KILN_CHECK(indices.dtype() == kInt64, DTypeError, "{}: indices must be int64, got {}",
             call.name(), dtype_name(indices.dtype()));
  KILN_CHECK(shapes_equal(indices.sym_sizes(), call.tensor(0).sym_sizes()), ShapeError,
             "{}: indices {} must have grad_output's shape {}", call.name(),
             shape_str(indices.sym_sizes()), shape_str(call.tensor(0).sym_sizes()));
  return p;
}
void meta_max_backward(OpCall& call) {
  max_shape(call);
  call.set_output(0, call.tensor(1).dtype(), call.tensor(1).sym_sizes());
}
void cpu_max_backward(OpCall& call) {
  cpu::max_pool2d_backward(call.tensor(0), call.tensor(7), call.output(0),
                           max_shape(call).geometry(call.tensor(1)));
}

// avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
//                     count_include_pad, divisor_override)
PoolShape avg_shape(const OpCall& call) {
  const PoolShape p = pool_window_shape(call, 1, false, call.bool_arg(5));
  const std::optional<int64_t> divisor = call.arg(7).optional_int();
  KILN_CHECK(!divisor || *divisor != 0, ValueError, "{}: divisor_override must not be 0",
             call.name());
  check_grad_output(call, p);
  return p;
}
void meta_avg_backward(OpCall& call) {
  avg_shape(call);
  call.set_output(0, call.tensor(1).dtype(), call.tensor(1).sym_sizes());
}
void cpu_avg_backward(OpCall& call) {
  cpu::avg_pool2d_backward(call.tensor(0), call.output(0), avg_shape(call).geometry(call.tensor(1)),
                           call.bool_arg(6), call.arg(7).optional_int());
}

// adaptive_avg_pool2d_backward(grad_output, self): output_size is grad_output's last two dims.
PoolShape adaptive_shape(const OpCall& call) {
  const Tensor& grad_output = call.tensor(0);
  const Tensor& self = call.tensor(1);
  KILN_CHECK(grad_output.dim() == self.dim(), ShapeError,
             "{}: grad_output {} must have the rank of the input {}", call.name(),
             shape_str(grad_output.sym_sizes()), shape_str(self.sym_sizes()));
  KILN_CHECK(self.dim() == 3 || self.dim() == 4, ShapeError,
             "{}: expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape {}", call.name(),
             shape_str(self.sym_sizes()));
  const SymIntArrayRef sizes = self.sym_sizes(), go_sizes = grad_output.sym_sizes();
  for (int64_t d = self.dim() - 3; d < self.dim(); ++d)
    KILN_CHECK(sizes[d] > 0, ShapeError,
               "{}: input {} has a zero-size channel or spatial dim; only the batch may be empty",
               call.name(), shape_str(sizes));
  PoolShape p;
  p.in_h = sizes[sizes.size() - 2];
  p.in_w = sizes[sizes.size() - 1];
  p.out_h = go_sizes[go_sizes.size() - 2];
  p.out_w = go_sizes[go_sizes.size() - 1];
  check_grad_output(call, p);
  return p;
}
void meta_adaptive_backward(OpCall& call) {
  adaptive_shape(call);
  call.set_output(0, call.tensor(1).dtype(), call.tensor(1).sym_sizes());
}
void cpu_adaptive_backward(OpCall& call) {
  cpu::adaptive_avg_pool2d_backward(call.tensor(0), call.output(0),
                                    adaptive_shape(call).geometry(call.tensor(1)));
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
