// max_pool_with_indices_backward(grad_output, self, indices, spatial_dims): the input gradient of
// the max pools with their own index-returning kernels (max_pool3d_with_indices,
// adaptive_max_pool2d, adaptive_max_pool3d; kernel in src/kernels/cpu/pool3d.cpp): each
// grad_output element added at its index, a flat position within the last `spatial_dims` dims of
// self. self (the forward's input) gives only the shape; it is an argument, not a size list, so
// that a compiled backward with symbolic sizes gets the input's symbols from a tensor it receives
// (Note [AOT autograd with symbolic sizes]). Registered from register_linalg_ops
// (src/ops/linalg.cpp).
#include "src/kernels/cpu/pool3d.h"
#include "src/ops/pool_nd.h"
#include "src/ops/registry.h"

namespace kiln {
namespace {

// Checks the call; returns spatial_dims.
int64_t check_backward(const OpCall& call) {
  const std::string_view op = call.name();
  const Tensor& grad_output = call.tensor(0);
  const Tensor& self = call.tensor(1);
  const Tensor& indices = call.tensor(2);
  const int64_t spatial = call.int_arg(3);
  KILN_CHECK(spatial >= 1 && spatial <= 3, ValueError, "{}: spatial_dims must be 1, 2 or 3, got {}",
             op, spatial);
  check_pool_nd_input(op, self, spatial);
  KILN_CHECK(grad_output.dtype() == self.dtype(), DTypeError,
             "{}: grad_output ({}) must have the input's dtype ({})", op,
             dtype_name(grad_output.dtype()), dtype_name(self.dtype()));
  KILN_CHECK(indices.dtype() == kInt64, DTypeError, "{}: indices must be int64, got {}", op,
             dtype_name(indices.dtype()));
  const SymIntArrayRef in = self.sym_sizes(), out = grad_output.sym_sizes();
  const size_t lead = in.size() - static_cast<size_t>(spatial);
  // In a trace these are the forward's own sizes, so the checks hold structurally.
  KILN_CHECK(out.size() == in.size() && shapes_equal(out.slice(0, lead), in.slice(0, lead)),
             ShapeError,
             "{}: grad_output {} must have the input's rank and leading dims (input {}, {} "
             "spatial dims)",
             op, shape_str(out), shape_str(in), spatial);
  KILN_CHECK(shapes_equal(indices.sym_sizes(), out), ShapeError,
             "{}: indices {} must have grad_output's shape {}", op, shape_str(indices.sym_sizes()),
             shape_str(out));
  return spatial;
}

void meta_max_pool_with_indices_backward(OpCall& call) {
  check_backward(call);
  call.set_output(0, call.tensor(1).dtype(), call.tensor(1).sym_sizes());
}

void cpu_max_pool_with_indices_backward(OpCall& call) {
  const int64_t spatial = check_backward(call);
  const Tensor& self = call.tensor(1);
  const Tensor& grad_output = call.tensor(0);
  int64_t planes = 1, in_box = 1, out_box = 1;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d < self.dim() - spatial) {
      planes *= self.size(d);
    } else {
      in_box *= self.size(d);
      out_box *= grad_output.size(d);
    }
  }
  cpu::max_pool_indices_backward(call.name(), grad_output, call.tensor(2), call.output(0), planes,
                                 in_box, out_box);
}

}  // namespace

void register_pool_indices_backward_ops(OpRegistry& r) {
  r.add({.name = "max_pool_with_indices_backward",
         .schema = "max_pool_with_indices_backward(Tensor grad_output, Tensor self, Tensor "
                   "indices, int spatial_dims) -> Tensor",
         .family = "linalg",
         .meta = meta_max_pool_with_indices_backward,
         .cpu = cpu_max_pool_with_indices_backward,
         .dtypes = dtypes::kFloating});
}

Tensor max_pool_with_indices_backward(const Tensor& grad_output, const Tensor& self,
                                      const Tensor& indices, int64_t spatial_dims) {
  static const OpId id = op_id("max_pool_with_indices_backward");
  return dispatch::call_tensor(id, grad_output, self, indices, spatial_dims);
}

}  // namespace kiln
