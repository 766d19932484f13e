// Binary pointwise ops, as in LibTorch: kiln::add(a, b), kiln::eq(t, 0), ... The Tensor methods
// (a.add(b)) and the operators (a + b, a == 0) call these.
//
// Operands broadcast (NumPy rules) and promote (kiln::result_type: a Scalar or 0-dim operand
// never widens a dimensioned tensor of the same category, so uint8 tensor + 1000 stays uint8,
// int tensor * 2.5 is float32). Integer arithmetic wraps modulo 2^bits, unsigned types
// included. uint64 with a signed integer tensor has no exact common dtype and raises DTypeError.
#pragma once

#include <concepts>
#include <optional>
#include <string_view>

#include "kiln/tensor.h"

namespace kiln {

// a + alpha * b, a - alpha * b.
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
// rounding_mode "" is true division (integer inputs give the default float dtype); "floor" and
// "trunc" round the quotient and keep integer dtypes. Integer division by zero raises ValueError.
Tensor div(const Tensor& a, const Tensor& b, std::string_view rounding_mode = "");
Tensor div(const Tensor& a, const Scalar& b, std::string_view rounding_mode = "");
// The remainder with the divisor's sign (Python's %).
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Scalar& b);
// The remainder with the dividend's sign (C's fmod).
Tensor fmod(const Tensor& a, const Tensor& b);
Tensor fmod(const Tensor& a, const Scalar& b);
// Integer powers wrap modulo 2^bits; a negative Scalar exponent of an integer base raises
// ValueError (use a floating base).
Tensor pow(const Tensor& a, const Tensor& exponent);
Tensor pow(const Tensor& a, const Scalar& exponent);
// Elementwise max/min; NaN propagates.
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
// Integer inputs compute in the default float dtype.
Tensor atan2(const Tensor& a, const Tensor& b);
Tensor hypot(const Tensor& a, const Tensor& b);

// Comparisons give bool and compare mathematical values: a uint64 tensor > -1 is all true.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Scalar& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Scalar& b);

// Truth of each operand (nonzero), combined; bool result.
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);

// Integer and bool operands only.
Tensor bitwise_and(const Tensor& a, const Tensor& b);
Tensor bitwise_and(const Tensor& a, const Scalar& b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, const Scalar& b);
Tensor bitwise_xor(const Tensor& a, const Tensor& b);
Tensor bitwise_xor(const Tensor& a, const Scalar& b);
// Integer operands only. Right shifts are logical for unsigned dtypes, arithmetic for signed;
// shifting by a negative amount or >= the bit width gives 0 (-1 for a negative value shifted
// right).
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_left_shift(const Tensor& a, const Scalar& b);
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_right_shift(const Tensor& a, const Scalar& b);

// Arithmetic with a SymInt operand: `x * n`, `n - x`, n from item<SymInt>() or a size. A
// concrete n, or one a trace can guard on, is the Scalar n. A value over unbacked symbols has no
// value to guard on while tracing: it becomes a 0-dim tensor that the graph computes when it runs
// (sym_int_operand; Note [A SymInt operand] in src/ops/binary_operators.cpp). The operators take
// exactly a SymInt (a constrained template), so `x * 2` still means the Scalar 2.
//
// The operand for `n` with `other`, when n depends on unbacked symbols: sym_scalar_tensor(n) in
// result_type(other, <an integer Scalar>) (a floating dtype for a true division, which keeps n's
// sign whatever other's dtype), so the result promotes as with a Scalar. nullopt when n is a
// Scalar.
std::optional<Tensor> sym_int_operand(SymInt n, const Tensor& other, bool true_division = false);

template <std::same_as<SymInt> S>
Tensor operator+(const Tensor& a, S b) {
  if (std::optional<Tensor> t = sym_int_operand(b, a)) return add(a, *t);
  return add(a, Scalar(b));
}
template <std::same_as<SymInt> S>
Tensor operator+(S a, const Tensor& b) {
  return b + a;
}
template <std::same_as<SymInt> S>
Tensor operator-(const Tensor& a, S b) {
  if (std::optional<Tensor> t = sym_int_operand(b, a)) return sub(a, *t);
  return sub(a, Scalar(b));
}
template <std::same_as<SymInt> S>
Tensor operator-(S a, const Tensor& b) {
  if (std::optional<Tensor> t = sym_int_operand(a, b)) return sub(*t, b);
  return Scalar(a) - b;
}
template <std::same_as<SymInt> S>
Tensor operator*(const Tensor& a, S b) {
  if (std::optional<Tensor> t = sym_int_operand(b, a)) return mul(a, *t);
  return mul(a, Scalar(b));
}
template <std::same_as<SymInt> S>
Tensor operator*(S a, const Tensor& b) {
  return b * a;
}
template <std::same_as<SymInt> S>
Tensor operator/(const Tensor& a, S b) {
  if (std::optional<Tensor> t = sym_int_operand(b, a, /*true_division=*/true)) return div(a, *t);
  return div(a, Scalar(b));
}
template <std::same_as<SymInt> S>
Tensor operator/(S a, const Tensor& b) {
  if (std::optional<Tensor> t = sym_int_operand(a, b, /*true_division=*/true)) return div(*t, b);
  return Scalar(a) / b;
}

}  // namespace kiln
