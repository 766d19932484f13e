// Derivatives of the view ops: the gradient of a view is the input's gradient viewed back.
#include "src/autograd/formulas/grad_utils.h"

namespace kiln::autograd {
namespace {

void view_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad().reshape(ctx.sizes(0))); }
void expand_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad()); }  // engine sums to shape
void transpose_backward(GradContext& ctx) {
  ctx.set_grad(0, ctx.grad().transpose(ctx.int_arg(1), ctx.int_arg(2)));
}

}  // namespace

void register_view_derivatives(OpRegistry& ops) {
  add_derivatives(ops, {
                           {.op = "view", .backward = view_backward},
                           {.op = "expand", .backward = expand_backward},
                           {.op = "transpose", .backward = transpose_backward},
                       });
}

}  // namespace kiln::autograd
