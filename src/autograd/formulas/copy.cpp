// Derivatives of the copy ops. Dtype conversions need no code: the engine casts a gradient to its
// input's dtype (Note [Derivative formulas]), which is _to_copy's "cast back".
#include "src/autograd/formulas/grad_utils.h"

namespace kiln::autograd {
namespace {

// clone(self), _to_copy(self, dtype)
void identity_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad()); }

// copy_(self, src): self's old values are overwritten (zero gradient); src's values are the
// result (a broadcast src gets the gradient summed by the engine, a src of another floating dtype
// gets it cast).
void copy_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  if (ctx.needs_grad(0)) ctx.set_grad(0, zeros_like(g));
  if (ctx.needs_grad(1)) ctx.set_grad(1, g);
}

// fill_(self, value): the result does not depend on self.
void fill_backward(GradContext& ctx) { ctx.set_grad(0, zeros_like(ctx.grad())); }

}  // namespace

void register_copy_derivatives(OpRegistry& ops) {
  add_derivatives(ops, {
                           {.op = "clone", .backward = identity_backward},
                           {.op = "_to_copy", .backward = identity_backward},
                           {.op = "copy_", .backward = copy_backward},
                           {.op = "fill_", .backward = fill_backward},
                       });
}

}  // namespace kiln::autograd
