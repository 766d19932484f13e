// Derivatives of the pooling ops with their own index-returning kernels: max_pool3d_with_indices,
// adaptive_max_pool2d and adaptive_max_pool3d, and of their backward op (the other 1-d and 3-d
// pools are composites, differentiated through the 2-d ops they call; Note [Separable 3-d
// pooling]). Registered from register_linalg_derivatives (linalg.cpp).
//
// Each output element is one input element, the one its index names (a flat position within its
// plane or box), so the gradient adds grad_output at the indices (max_pool_with_indices_backward,
// which takes the detached input for its shape); the adjoint of that gathers at the same indices.
#include "src/ops/pool_nd.h"
#include "src/autograd/formulas/grad_utils.h"

namespace kiln::autograd {
namespace {

template <int64_t kSpatial>
void max_by_indices_backward(GradContext& ctx) {
  ctx.set_grad(0, max_pool_with_indices_backward(ctx.grad(0), ctx.input(0).detach(), ctx.output(1),
                                                 kSpatial));
}

// max_pool_with_indices_backward(grad_output, self, indices, spatial_dims): linear in
// grad_output; nothing depends on self's values.
void max_pool_with_indices_backward_backward(GradContext& ctx) {
  if (!ctx.needs_grad(0)) return;
  const int64_t spatial = ctx.int_arg(3);
  const Tensor indices = ctx.input(2);
  ctx.set_grad(0, ctx.grad()
                      .flatten(-spatial)
                      .gather(-1, indices.flatten(-spatial))
                      .reshape(indices.sym_sizes()));
}

}  // namespace

void register_pool_nd_derivatives(OpRegistry& ops) {
  const uint32_t input = bits({0}), indices = bits({1});
  add_derivatives(ops, {
                           {.op = "max_pool3d_with_indices",
                            .backward = max_by_indices_backward<3>,
                            .save_args = input,
                            .save_outputs = indices},
                           {.op = "adaptive_max_pool2d",
                            .backward = max_by_indices_backward<2>,
                            .save_args = input,
                            .save_outputs = indices},
                           {.op = "adaptive_max_pool3d",
                            .backward = max_by_indices_backward<3>,
                            .save_args = input,
                            .save_outputs = indices},
                           {.op = "max_pool_with_indices_backward",
                            .backward = max_pool_with_indices_backward_backward,
                            .save_args = bits({2}),
                            .nondifferentiable_args = bits({2})},
                       });
}

}  // namespace kiln::autograd
