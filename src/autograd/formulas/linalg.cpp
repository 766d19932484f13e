// Derivatives of matrix products, convolutions and pooling.
#include "src/autograd/formulas/grad_utils.h"

namespace kiln::autograd {
namespace {

void mm_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  if (ctx.needs_grad(0)) ctx.set_grad(0, g.mm(ctx.input(1).t()));
  if (ctx.needs_grad(1)) ctx.set_grad(1, ctx.input(0).t().mm(g));
}

}  // namespace

void register_linalg_derivatives(OpRegistry& ops) {
  add_derivatives(ops, {
                           {.op = "mm", .backward = mm_backward, .save_args = bits({0, 1})},
                       });
}

}  // namespace kiln::autograd
