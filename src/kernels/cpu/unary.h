// CPU kernels of the unary pointwise ops (src/ops/unary.cpp registers them).
#pragma once

#include <cstdint>
#include <optional>

#include "kiln/tensor.h"

namespace kiln::cpu {

enum class UnaryOp : uint8_t {
  // Same dtype as the input.
  Neg,
  Abs,
  Sign,
  Relu,
  Floor,
  Ceil,
  Round,
  Trunc,
  Frac,
  BitwiseNot,
  // Bool results.
  LogicalNot,
  IsNan,
  IsInf,
  IsFinite,
  // Floating functions: integer/bool inputs compute in the default float dtype.
  Exp,
  Exp2,
  Expm1,
  Log,
  Log2,
  Log10,
  Log1p,
  Sqrt,
  Rsqrt,
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Tanh,
  Sigmoid,
  Silu,
  GeluErf,
  GeluTanh,
  Erf,
  Erfinv,
  Reciprocal,
};

constexpr bool is_floating_function(UnaryOp op) { return op >= UnaryOp::Exp; }

// out = op(in); `in` has out's shape. Floating functions cast `in` to out's dtype first.
void unary_kernel(UnaryOp op, const Tensor& out, const Tensor& in);
// The floating-function half of unary_kernel (src/kernels/cpu/unary_float.cpp).
void floating_unary_kernel(UnaryOp op, const Tensor& out, const Tensor& in);

// softplus(x) = log1p(exp(beta * x)) / beta, or x where beta * x > threshold.
void softplus_kernel(const Tensor& out, const Tensor& in, double beta, double threshold);
// NaN -> nan, +inf -> posinf, -inf -> neginf (defaults: 0 and the dtype's largest/lowest finite
// value); integers and bool are copied unchanged.
void nan_to_num_kernel(const Tensor& out, const Tensor& in, std::optional<double> nan,
                       std::optional<double> posinf, std::optional<double> neginf);

// The inverse error function in double precision (exact to a few ulps); +-1 -> +-inf, |y| > 1 ->
// NaN. Exposed for the float32 vector path and for tests.
double erfinv(double y);

}  // namespace kiln::cpu
