// Derivatives of the binary pointwise ops. Broadcasting needs no code here: the engine sums a
// gradient back to its input's shape (Note [Derivative formulas]).
#include "src/autograd/formulas/grad_utils.h"

namespace kiln::autograd {
namespace {

void add_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  if (ctx.needs_grad(0)) ctx.set_grad(0, g);
  if (ctx.needs_grad(1)) ctx.set_grad(1, g * ctx.scalar(2));
}
void add_scalar_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad()); }
void sub_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  if (ctx.needs_grad(0)) ctx.set_grad(0, g);
  if (ctx.needs_grad(1)) ctx.set_grad(1, g * (-ctx.scalar(2).to_double()));
}
void mul_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  if (ctx.needs_grad(0)) ctx.set_grad(0, g * ctx.input(1));
  if (ctx.needs_grad(1)) ctx.set_grad(1, g * ctx.input(0));
}
void mul_scalar_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad() * ctx.scalar(1)); }
void div_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  const Tensor other = ctx.input(1);
  if (ctx.needs_grad(0)) ctx.set_grad(0, g / other);
  if (ctx.needs_grad(1)) ctx.set_grad(1, -g * ctx.input(0) / (other * other));
}

}  // namespace

void register_binary_derivatives(OpRegistry& ops) {
  add_derivatives(ops, {
                           {.op = "add", .backward = add_backward},
                           {.op = "add.Scalar", .backward = add_scalar_backward},
                           {.op = "add_", .backward = add_backward},
                           {.op = "add_.Scalar", .backward = add_scalar_backward},
                           {.op = "sub", .backward = sub_backward},
                           {.op = "sub.Scalar", .backward = add_scalar_backward},
                           {.op = "sub_", .backward = sub_backward},
                           {.op = "sub_.Scalar", .backward = add_scalar_backward},
                           {.op = "mul", .backward = mul_backward, .save_args = bits({0, 1})},
                           {.op = "mul.Scalar", .backward = mul_scalar_backward},
                           {.op = "mul_", .backward = mul_backward, .save_args = bits({0, 1})},
                           {.op = "mul_.Scalar", .backward = mul_scalar_backward},
                           {.op = "div", .backward = div_backward, .save_args = bits({0, 1})},
                       });
}

}  // namespace kiln::autograd
