// Derivatives of the unary pointwise ops, as PyTorch's derivatives.yaml defines them. Where the
// derivative is a function of the result (exp, sigmoid, tanh, sqrt, ...) the formula saves the
// output instead of the input, as PyTorch does: the output is alive anyway in most graphs, and the
// in-place forms (exp_, sigmoid_, ...) then need no copy of the overwritten input.
#include <cmath>
#include <numbers>

#include "src/autograd/formulas/grad_utils.h"

namespace kiln::autograd {
namespace {

// ---- functions of the input ----

void abs_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad() * ctx.input(0).sign()); }
void acos_backward(GradContext& ctx) {
  const Tensor x = ctx.input(0);
  ctx.set_grad(0, -ctx.grad() * (1 - x * x).rsqrt());
}
void asin_backward(GradContext& ctx) {
  const Tensor x = ctx.input(0);
  ctx.set_grad(0, ctx.grad() * (1 - x * x).rsqrt());
}
void atan_backward(GradContext& ctx) {
  const Tensor x = ctx.input(0);
  ctx.set_grad(0, ctx.grad() / (x * x + 1));
}
void cos_backward(GradContext& ctx) { ctx.set_grad(0, -ctx.grad() * ctx.input(0).sin()); }
void cosh_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad() * ctx.input(0).sinh()); }
void sin_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad() * ctx.input(0).cos()); }
void sinh_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad() * ctx.input(0).cosh()); }
void erf_backward(GradContext& ctx) {
  const Tensor x = ctx.input(0);
  ctx.set_grad(0, ctx.grad() * (x * x * -1.0).exp() * (2 / std::sqrt(std::numbers::pi)));
}
void log_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad() / ctx.input(0)); }
void log2_backward(GradContext& ctx) {
  ctx.set_grad(0, ctx.grad() / (ctx.input(0) * std::numbers::ln2));
}
void log10_backward(GradContext& ctx) {
  ctx.set_grad(0, ctx.grad() / (ctx.input(0) * std::numbers::ln10));
}
void log1p_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad() / (ctx.input(0) + 1)); }
// nan_to_num passes the gradient where the input was finite; replaced values are constants.
void nan_to_num_backward(GradContext& ctx) {
  ctx.set_grad(0, where(ctx.input(0).isfinite(), ctx.grad(), 0));
}
void neg_backward(GradContext& ctx) { ctx.set_grad(0, -ctx.grad()); }
// Piecewise-constant functions (ceil, floor, round, trunc, sign): zero almost everywhere. The
// gradient is a zero tensor, not "no gradient", so x.grad() is defined as in PyTorch.
void zero_backward(GradContext& ctx) { ctx.set_grad(0, zeros_like(ctx.grad())); }
// frac(x) = x - trunc(x): slope 1 almost everywhere.
void identity_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad()); }

// silu(x) = x * s with s = sigmoid(x): s * (1 + x * (1 - s)).
void silu_backward(GradContext& ctx) {
  const Tensor x = ctx.input(0);
  const Tensor s = x.sigmoid();
  ctx.set_grad(0, ctx.grad() * s * (x * (1 - s) + 1));
}

// gelu(x, 'none') = x * Phi(x): Phi(x) + x * phi(x).
// gelu(x, 'tanh') = 0.5 x (1 + tanh(k (x + c x^3))):
//   0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2), t = tanh(k (x + c x^3)).
void gelu_backward(GradContext& ctx) {
  const Tensor x = ctx.input(0);
  const Tensor g = ctx.grad();
  if (ctx.string_arg(1) == "tanh") {
    const double k = std::sqrt(2 / std::numbers::pi);
    constexpr double c = 0.044715;
    const Tensor x2 = x * x;
    const Tensor t = ((x2 * c + 1) * x * k).tanh();
    const Tensor slope = (t + 1) * 0.5 + x * (1 - t * t) * (x2 * (3 * c) + 1) * (0.5 * k);
    ctx.set_grad(0, g * slope);
    return;
  }
  const Tensor cdf = ((x * (std::numbers::sqrt2 / 2)).erf() + 1) * 0.5;
  const Tensor pdf = (x * x * -0.5).exp() * (1 / std::sqrt(2 * std::numbers::pi));
  ctx.set_grad(0, g * (cdf + x * pdf));
}

// softplus(x, beta, threshold) = x where beta x > threshold, else log1p(exp(beta x)) / beta:
// slope 1 above the threshold, sigmoid(beta x) below.
void softplus_backward(GradContext& ctx) {
  const Tensor x = ctx.input(0);
  const Tensor g = ctx.grad();
  const Tensor bx = x * ctx.scalar(1);
  ctx.set_grad(0, where(bx > ctx.scalar(2), g, g * bx.sigmoid()));
}

// ---- functions of the result ----

void exp_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad() * ctx.output()); }
void exp2_backward(GradContext& ctx) {
  ctx.set_grad(0, ctx.grad() * ctx.output() * std::numbers::ln2);
}
void expm1_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad() * (ctx.output() + 1)); }
// d erfinv(x) = sqrt(pi) / 2 * exp(erfinv(x)^2)
void erfinv_backward(GradContext& ctx) {
  const Tensor y = ctx.output();
  ctx.set_grad(0, ctx.grad() * (y * y).exp() * (std::sqrt(std::numbers::pi) / 2));
}
void reciprocal_backward(GradContext& ctx) {
  const Tensor y = ctx.output();
  ctx.set_grad(0, -ctx.grad() * (y * y));
}
// relu's output is positive exactly where the input was (NaN inputs give NaN, which is not > 0:
// no gradient there, as PyTorch's threshold_backward).
void relu_backward(GradContext& ctx) { ctx.set_grad(0, where(ctx.output() > 0, ctx.grad(), 0)); }
void rsqrt_backward(GradContext& ctx) {
  const Tensor y = ctx.output();
  ctx.set_grad(0, ctx.grad() * (y * y * y) * -0.5);
}
void sigmoid_backward(GradContext& ctx) {
  const Tensor y = ctx.output();
  ctx.set_grad(0, ctx.grad() * (y * (1 - y)));
}
void sqrt_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad() / (ctx.output() * 2)); }
void tan_backward(GradContext& ctx) {
  const Tensor y = ctx.output();
  ctx.set_grad(0, ctx.grad() * (y * y + 1));
}
void tanh_backward(GradContext& ctx) {
  const Tensor y = ctx.output();
  ctx.set_grad(0, ctx.grad() * (1 - y * y));
}

DerivativeDef of_input(const char* op, BackwardFormula f) {
  return {.op = op, .backward = f, .save_args = bits({0})};
}
DerivativeDef of_output(const char* op, BackwardFormula f) {
  return {.op = op, .backward = f, .save_outputs = bits({0})};
}
DerivativeDef of_grad(const char* op, BackwardFormula f) { return {.op = op, .backward = f}; }

}  // namespace

void register_unary_derivatives(OpRegistry& ops) {
  add_derivatives(ops, {
                           of_input("abs", abs_backward),
                           of_input("acos", acos_backward),
                           of_input("asin", asin_backward),
                           of_input("atan", atan_backward),
                           of_input("cos", cos_backward),
                           of_input("cosh", cosh_backward),
                           of_input("sin", sin_backward),
                           of_input("sinh", sinh_backward),
                           of_input("erf", erf_backward),
                           of_input("log", log_backward),
                           of_input("log2", log2_backward),
                           of_input("log10", log10_backward),
                           of_input("log1p", log1p_backward),
                           of_input("nan_to_num", nan_to_num_backward),
                           of_input("silu", silu_backward),
                           of_input("gelu", gelu_backward),
                           of_input("softplus", softplus_backward),
                           of_grad("neg", neg_backward),
                           of_grad("neg_", neg_backward),
                           of_grad("ceil", zero_backward),
                           of_grad("floor", zero_backward),
                           of_grad("round", zero_backward),
                           of_grad("trunc", zero_backward),
                           of_grad("sign", zero_backward),
                           of_grad("frac", identity_backward),
                           of_output("exp", exp_backward),
                           of_output("exp_", exp_backward),
                           of_output("exp2", exp2_backward),
                           of_output("expm1", expm1_backward),
                           of_output("erfinv", erfinv_backward),
                           of_output("reciprocal", reciprocal_backward),
                           of_output("relu", relu_backward),
                           of_output("relu_", relu_backward),
                           of_output("rsqrt", rsqrt_backward),
                           of_output("sigmoid", sigmoid_backward),
                           of_output("sigmoid_", sigmoid_backward),
                           of_output("sqrt", sqrt_backward),
                           of_output("sqrt_", sqrt_backward),
                           of_output("tan", tan_backward),
                           of_output("tanh", tanh_backward),
                           of_output("tanh_", tanh_backward),
                       });
}

}  // namespace kiln::autograd
