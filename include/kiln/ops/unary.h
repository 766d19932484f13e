// Unary pointwise functions, as torch.<name>. Floating functions (exp, log, sin, sigmoid, ...)
// of integer or bool tensors return float32 (the default float dtype); neg, abs, sign, relu and
// the rounding functions keep the dtype; logical_not and isnan/isinf/isfinite return bool.
// Each is also a Tensor method (t.exp()).
#pragma once

#include <optional>
#include <string_view>

#include "kiln/tensor.h"

namespace kiln {

Tensor neg(const Tensor& self);   // modular for unsigned; DTypeError for bool (use logical_not)
Tensor abs(const Tensor& self);   // identity for unsigned
Tensor sign(const Tensor& self);  // -1, 0 or 1 (0 for NaN, as PyTorch)
Tensor exp(const Tensor& self);
Tensor exp2(const Tensor& self);
Tensor expm1(const Tensor& self);
Tensor log(const Tensor& self);
Tensor log2(const Tensor& self);
Tensor log10(const Tensor& self);
Tensor log1p(const Tensor& self);
Tensor sqrt(const Tensor& self);
Tensor rsqrt(const Tensor& self);
Tensor sin(const Tensor& self);
Tensor cos(const Tensor& self);
Tensor tan(const Tensor& self);
Tensor asin(const Tensor& self);
Tensor acos(const Tensor& self);
Tensor atan(const Tensor& self);
Tensor sinh(const Tensor& self);
Tensor cosh(const Tensor& self);
Tensor tanh(const Tensor& self);
Tensor sigmoid(const Tensor& self);
Tensor relu(const Tensor& self);
// approximate: "none" (the exact x * Phi(x)) or "tanh" (the tanh approximation). Floating only.
Tensor gelu(const Tensor& self, std::string_view approximate = "none");
Tensor silu(const Tensor& self);  // floating only
// log(1 + exp(beta * x)) / beta, or x where beta * x > threshold. Floating only.
Tensor softplus(const Tensor& self, const Scalar& beta = 1, const Scalar& threshold = 20);
Tensor erf(const Tensor& self);
Tensor erfinv(const Tensor& self);
Tensor floor(const Tensor& self);
Tensor ceil(const Tensor& self);
Tensor round(const Tensor& self);  // halfway cases to even: round(2.5) == 2
Tensor trunc(const Tensor& self);
Tensor frac(const Tensor& self);  // x - trunc(x); floating only
Tensor reciprocal(const Tensor& self);
Tensor logical_not(const Tensor& self);
Tensor bitwise_not(const Tensor& self);  // integer and bool only
Tensor isnan(const Tensor& self);
Tensor isinf(const Tensor& self);
Tensor isfinite(const Tensor& self);
// Replaces NaN with `nan` (default 0), +inf with `posinf` and -inf with `neginf` (defaults: the
// dtype's largest and lowest finite values). Integer and bool tensors are returned unchanged.
Tensor nan_to_num(const Tensor& self, std::optional<double> nan = std::nullopt,
                  std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);

}  // namespace kiln
