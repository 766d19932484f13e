// Derivatives of the binary pointwise ops, as PyTorch's derivatives.yaml defines them.
// Broadcasting needs no code here: the engine sums a gradient back to its input's shape, and
// casts it to the input's dtype (Note [Derivative formulas]). The in-place forms share the
// out-of-place formulas; an in-place op's saved input 0 is its value before the op.
#include "src/autograd/formulas/grad_utils.h"

namespace kiln::autograd {
namespace {

bool is_one(const Scalar& s) { return s.to_double() == 1.0; }

// g * s, skipping the multiplication for s == 1 (add/sub with the default alpha: the hot case).
Tensor scaled(const Tensor& g, const Scalar& s) { return is_one(s) ? g : g * s; }

// add(self, other, alpha), add_(...): self + alpha * other
void add_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  if (ctx.needs_grad(0)) ctx.set_grad(0, g);
  if (ctx.needs_grad(1)) ctx.set_grad(1, scaled(g, ctx.scalar(2)));
}
// sub(self, other, alpha), sub_(...): self - alpha * other
void sub_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  if (ctx.needs_grad(0)) ctx.set_grad(0, g);
  if (ctx.needs_grad(1))
    ctx.set_grad(1, is_one(ctx.scalar(2)) ? -g : g * -ctx.scalar(2).to_double());
}
// add.Scalar, sub.Scalar, remainder.Scalar, fmod.Scalar: slope 1 in self (the remainder's jumps
// are measure zero, as in PyTorch).
void pass_self_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad()); }

void mul_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  if (ctx.needs_grad(0)) ctx.set_grad(0, g * ctx.input(1));
  if (ctx.needs_grad(1)) ctx.set_grad(1, g * ctx.input(0));
}
void mul_scalar_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad() * ctx.scalar(1)); }

// div(self, other, rounding_mode). True division: d/dself = 1/other, d/dother = -self/other^2 =
// -result/other (the result is saved rather than self, so div_ needs no copy of self). With a
// rounding mode ("floor", "trunc") the result is piecewise constant: zero gradients, as PyTorch.
void div_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  if (!ctx.string_arg(2).empty()) {
    if (ctx.needs_grad(0)) ctx.set_grad(0, zeros_like(g));
    if (ctx.needs_grad(1)) ctx.set_grad(1, zeros_like(g));
    return;
  }
  const Tensor other = ctx.input(1);
  if (ctx.needs_grad(0)) ctx.set_grad(0, g / other);
  if (ctx.needs_grad(1)) ctx.set_grad(1, -g * ctx.output() / other);
}
void div_scalar_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  ctx.set_grad(0, ctx.string_arg(2).empty() ? g / ctx.scalar(1) : zeros_like(g));
}

// remainder(a, b) = a - b * floor(a / b); fmod(a, b) = a - b * trunc(a / b).
void remainder_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  if (ctx.needs_grad(0)) ctx.set_grad(0, g);
  if (ctx.needs_grad(1)) ctx.set_grad(1, -g * ctx.input(0).div(ctx.input(1), "floor"));
}
void fmod_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  if (ctx.needs_grad(0)) ctx.set_grad(0, g);
  if (ctx.needs_grad(1)) ctx.set_grad(1, -g * ctx.input(0).div(ctx.input(1), "trunc"));
}

void atan2_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  const Tensor y = ctx.input(0), x = ctx.input(1);
  const Tensor scale = g / (y * y + x * x);
  if (ctx.needs_grad(0)) ctx.set_grad(0, scale * x);
  if (ctx.needs_grad(1)) ctx.set_grad(1, -scale * y);
}
void hypot_backward(GradContext& ctx) {
  const Tensor scale = ctx.grad() / ctx.output();
  if (ctx.needs_grad(0)) ctx.set_grad(0, scale * ctx.input(0));
  if (ctx.needs_grad(1)) ctx.set_grad(1, scale * ctx.input(1));
}

// Note [maximum/minimum ties]
// Where self == other both inputs get half the gradient (PyTorch's rule: the subgradient that
// keeps max(x, x) = x with slope 1 in x). Where a comparison is false both ways (a NaN) the
// gradient flows to both, also as PyTorch.
void extremum_backward(GradContext& ctx, bool is_max) {
  const Tensor a = ctx.input(0), b = ctx.input(1);
  const Tensor g = ctx.grad();
  const Tensor split = where(a == b, g * 0.5, g);
  if (ctx.needs_grad(0)) ctx.set_grad(0, masked_fill(split, is_max ? a < b : a > b, 0));
  if (ctx.needs_grad(1)) ctx.set_grad(1, masked_fill(split, is_max ? a > b : a < b, 0));
}
void maximum_backward(GradContext& ctx) { extremum_backward(ctx, true); }
void minimum_backward(GradContext& ctx) { extremum_backward(ctx, false); }

// pow(self, exponent), as PyTorch's pow_backward_self / pow_backward_exponent:
//   d/dself = exponent * self^(exponent - 1), and 0 where exponent == 0 (so 0^0 has slope 0, not
//   0 * 0^-1 = NaN);
//   d/dexponent = result * log(self), and 0 where self == 0 and exponent >= 0 (the limit of
//   0^e); a negative base gives NaN (log of a negative number), as in PyTorch.
void pow_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  const Tensor self = ctx.input(0), exponent = ctx.input(1);
  if (ctx.needs_grad(0))
    ctx.set_grad(0, where(exponent == 0, 0, g * exponent * self.pow(exponent - 1)));
  if (ctx.needs_grad(1)) {
    const Tensor zero_base = (self == 0) & (exponent >= 0);
    ctx.set_grad(1, g * where(zero_base, 0, ctx.output() * self.log()));
  }
}
void pow_scalar_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  const Scalar e = ctx.scalar(1);
  if (e.to_double() == 0.0) {
    ctx.set_grad(0, zeros_like(g));
    return;
  }
  const Tensor self = ctx.input(0);
  const Scalar e_minus_1 = e.is_floating() ? Scalar(e.to_double() - 1) : Scalar(e.to_int64() - 1);
  ctx.set_grad(0, is_one(e) ? g : g * self.pow(e_minus_1) * e);
}

}  // namespace

void register_binary_derivatives(OpRegistry& ops) {
  const uint32_t both = bits({0, 1});
  add_derivatives(
      ops,
      {
          {.op = "add", .backward = add_backward},
          {.op = "add_", .backward = add_backward},
          {.op = "add.Scalar", .backward = pass_self_backward},
          {.op = "add_.Scalar", .backward = pass_self_backward},
          {.op = "sub", .backward = sub_backward},
          {.op = "sub_", .backward = sub_backward},
          {.op = "sub.Scalar", .backward = pass_self_backward},
          {.op = "sub_.Scalar", .backward = pass_self_backward},
          {.op = "mul", .backward = mul_backward, .save_args = both},
          {.op = "mul_", .backward = mul_backward, .save_args = both},
          {.op = "mul.Scalar", .backward = mul_scalar_backward},
          {.op = "mul_.Scalar", .backward = mul_scalar_backward},
          {.op = "div",
           .backward = div_backward,
           .save_args = bits({1}),
           .save_outputs = bits({0})},
          {.op = "div_",
           .backward = div_backward,
           .save_args = bits({1}),
           .save_outputs = bits({0})},
          {.op = "div.Scalar", .backward = div_scalar_backward},
          {.op = "div_.Scalar", .backward = div_scalar_backward},
          {.op = "remainder", .backward = remainder_backward, .save_args = both},
          {.op = "remainder.Scalar", .backward = pass_self_backward},
          {.op = "fmod", .backward = fmod_backward, .save_args = both},
          {.op = "fmod.Scalar", .backward = pass_self_backward},
          {.op = "atan2", .backward = atan2_backward, .save_args = both},
          {.op = "hypot", .backward = hypot_backward, .save_args = both, .save_outputs = bits({0})},
          {.op = "maximum", .backward = maximum_backward, .save_args = both},
          {.op = "minimum", .backward = minimum_backward, .save_args = both},
          {.op = "pow", .backward = pow_backward, .save_args = both, .save_outputs = bits({0})},
          {.op = "pow.Tensor_Scalar", .backward = pow_scalar_backward, .save_args = bits({0})},
      });
}

}  // namespace kiln::autograd
