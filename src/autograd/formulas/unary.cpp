// Derivatives of the unary pointwise ops.
#include "src/autograd/formulas/grad_utils.h"

namespace kiln::autograd {
namespace {

void neg_backward(GradContext& ctx) { ctx.set_grad(0, -ctx.grad()); }
void exp_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad() * ctx.output()); }
void relu_backward(GradContext& ctx) {
  ctx.set_grad(0, ctx.grad() * (ctx.output() > 0).to(ctx.dtype(0)));
}
void log_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad() / ctx.input(0)); }

}  // namespace

void register_unary_derivatives(OpRegistry& ops) {
  add_derivatives(ops, {
                           {.op = "neg", .backward = neg_backward},
                           {.op = "exp", .backward = exp_backward, .save_outputs = bits({0})},
                           {.op = "relu", .backward = relu_backward, .save_outputs = bits({0})},
                           {.op = "log", .backward = log_backward, .save_args = bits({0})},
                       });
}

}  // namespace kiln::autograd
