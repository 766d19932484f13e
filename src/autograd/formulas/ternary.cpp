// Derivatives of the ternary ops (where, clamp, lerp, addcmul, addcdiv, masked_fill), as
// PyTorch's derivatives.yaml defines them. Broadcast operands get gradients of the broadcast
// shape; the engine sums them back (Note [Derivative formulas]).
#include "src/autograd/formulas/grad_utils.h"

namespace kiln::autograd {
namespace {

// where(condition, self, other) and its Scalar forms: the condition is bool, never differentiable.
void where_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  const Tensor condition = ctx.input(0);
  if (ctx.needs_grad(1)) ctx.set_grad(1, where(condition, g, 0));
  if (ctx.needs_grad(2)) ctx.set_grad(2, where(condition, 0, g));
}

// masked_fill(self, mask, value), masked_fill_: the filled elements are constants.
void masked_fill_backward(GradContext& ctx) {
  ctx.set_grad(0, masked_fill(ctx.grad(), ctx.input(1), 0));
}

// clamp(self, min?, max?) with Scalar bounds: the gradient passes where min <= self <= max (at a
// bound too, as PyTorch's clamp_backward). With min > max every element is max: no gradient.
void clamp_backward(GradContext& ctx) {
  const Tensor self = ctx.input(0);
  const std::optional<Scalar> lo = ctx.arg(1).optional_scalar();
  const std::optional<Scalar> hi = ctx.arg(2).optional_scalar();
  Tensor inside;
  if (lo && hi) {
    inside = (self >= *lo) & (self <= *hi);
  } else {
    inside = lo ? self >= *lo : self <= *hi;
  }
  ctx.set_grad(0, where(inside, ctx.grad(), 0));
}

// A saved `Tensor?` argument; undefined when the op got None.
Tensor optional_input(const GradContext& ctx, size_t i) {
  const std::vector<ArgMeta>& m = ctx.list_meta(i);
  return m.empty() || !m[0].defined ? Tensor() : ctx.input(i);
}

// clamp.Tensor(self, min?, max?): as PyTorch's clamp_backward_min_max. Each element's value comes
// from exactly one of self, min and max; max wins where min > max.
void clamp_tensor_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  const Tensor self = ctx.input(0);
  const Tensor lo = optional_input(ctx, 1);
  const Tensor hi = optional_input(ctx, 2);
  if (lo.defined() && hi.defined()) {
    if (ctx.needs_grad(0)) ctx.set_grad(0, where((self >= lo) & (self <= hi), g, 0));
    if (ctx.needs_grad(1)) ctx.set_grad(1, where((self < lo) & (lo < hi), g, 0));
    if (ctx.needs_grad(2)) ctx.set_grad(2, where((self > hi) | (hi < lo), g, 0));
  } else if (lo.defined()) {
    const Tensor below = self < lo;
    if (ctx.needs_grad(0)) ctx.set_grad(0, where(below, 0, g));
    if (ctx.needs_grad(1)) ctx.set_grad(1, where(below, g, 0));
  } else {
    const Tensor above = self > hi;
    if (ctx.needs_grad(0)) ctx.set_grad(0, where(above, 0, g));
    if (ctx.needs_grad(2)) ctx.set_grad(2, where(above, g, 0));
  }
}

// lerp(self, end, weight) = self + weight * (end - self)
void lerp_scalar_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  const double w = ctx.scalar(2).to_double();
  if (ctx.needs_grad(0)) ctx.set_grad(0, g * (1 - w));
  if (ctx.needs_grad(1)) ctx.set_grad(1, g * w);
}
void lerp_tensor_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  const Tensor w = ctx.input(2);
  if (ctx.needs_grad(0)) ctx.set_grad(0, g * (1 - w));
  if (ctx.needs_grad(1)) ctx.set_grad(1, g * w);
  if (ctx.needs_grad(2)) ctx.set_grad(2, g * (ctx.input(1) - ctx.input(0)));
}

// addcmul(self, t1, t2, value) = self + value * t1 * t2
void addcmul_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  const Scalar v = ctx.scalar(3);
  const Tensor gv = v.to_double() == 1.0 ? g : g * v;
  if (ctx.needs_grad(0)) ctx.set_grad(0, g);
  if (ctx.needs_grad(1)) ctx.set_grad(1, gv * ctx.input(2));
  if (ctx.needs_grad(2)) ctx.set_grad(2, gv * ctx.input(1));
}
// addcdiv(self, t1, t2, value) = self + value * t1 / t2
void addcdiv_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  const Scalar v = ctx.scalar(3);
  const Tensor t2 = ctx.input(2);
  const Tensor gv_t2 = (v.to_double() == 1.0 ? g : g * v) / t2;
  if (ctx.needs_grad(0)) ctx.set_grad(0, g);
  if (ctx.needs_grad(1)) ctx.set_grad(1, gv_t2);
  if (ctx.needs_grad(2)) ctx.set_grad(2, -gv_t2 * ctx.input(1) / t2);
}

}  // namespace

void register_ternary_derivatives(OpRegistry& ops) {
  const uint32_t condition = bits({0});
  add_derivatives(
      ops,
      {
          {.op = "where",
           .backward = where_backward,
           .save_args = condition,
           .nondifferentiable_args = condition},
          {.op = "where.ScalarSelf",
           .backward = where_backward,
           .save_args = condition,
           .nondifferentiable_args = condition},
          {.op = "where.ScalarOther",
           .backward = where_backward,
           .save_args = condition,
           .nondifferentiable_args = condition},
          {.op = "masked_fill",
           .backward = masked_fill_backward,
           .save_args = bits({1}),
           .nondifferentiable_args = bits({1})},
          {.op = "masked_fill_",
           .backward = masked_fill_backward,
           .save_args = bits({1}),
           .nondifferentiable_args = bits({1})},
          {.op = "clamp", .backward = clamp_backward, .save_args = bits({0})},
          {.op = "clamp_", .backward = clamp_backward, .save_args = bits({0})},
          {.op = "clamp.Tensor", .backward = clamp_tensor_backward, .save_args = bits({0, 1, 2})},
          {.op = "lerp", .backward = lerp_scalar_backward},
          {.op = "lerp_", .backward = lerp_scalar_backward},
          {.op = "lerp.Tensor", .backward = lerp_tensor_backward, .save_args = bits({0, 1, 2})},
          {.op = "addcmul", .backward = addcmul_backward, .save_args = bits({1, 2})},
          {.op = "addcmul_", .backward = addcmul_backward, .save_args = bits({1, 2})},
          {.op = "addcdiv", .backward = addcdiv_backward, .save_args = bits({1, 2})},
          {.op = "addcdiv_", .backward = addcdiv_backward, .save_args = bits({1, 2})},
      });
}

}  // namespace kiln::autograd
