// Decompositions of composite pointwise ops: gelu, silu, relu, softplus, nan_to_num, masked_fill,
// addcmul, addcdiv, lerp. Each uses the eager kernel's formula (src/kernels/cpu/unary_float.cpp,
// ternary.cpp, unary.cpp), so results agree to rounding.
//
// Note [Pointwise decompositions of reduced floats]
// The eager kernels compute float16/bfloat16 in float32 (opmath) and round once. A chain of
// float16 ops would round after every step, so these decompositions convert reduced-float
// operands to float32 first and the result back at the end.
#include <cmath>
#include <numbers>

#include "src/lower/decomp/table.h"

namespace kiln::lower {
namespace {

// x in its opmath dtype (Note [Pointwise decompositions of reduced floats]).
Value* widen(DecompBuilder& b, Value* x) { return b.to(x, opmath_dtype(x->meta().dtype)); }

// gelu(x) = x/2 (1 + erf(x/sqrt 2)), or with approximate='tanh'
// x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
std::vector<Value*> gelu(DecompBuilder& b) {
  Value* x = widen(b, b.input(0));
  const std::string approximate = b.constant(1).string();
  Value* inner;
  if (approximate == "tanh") {
    constexpr double kSqrt2OverPi = 0.79788456080286535588;
    Value* cube = b.mul(b.mul(x, x), x);
    Value* poly = b.add(x, b.mul(cube, Scalar(0.044715)));
    inner = b.unary("tanh", b.mul(poly, Scalar(kSqrt2OverPi)));
  } else {
    inner = b.unary("erf", b.mul(x, Scalar(std::numbers::sqrt2 / 2)));
  }
  Value* half_x = b.mul(x, Scalar(0.5));
  return {b.as_output(b.mul(half_x, b.add(inner, Scalar(1))))};
}

// silu(x) = x / (1 + exp(-x)).
std::vector<Value*> silu(DecompBuilder& b) {
  Value* x = widen(b, b.input(0));
  return {b.as_output(b.div(x, b.add(b.exp(b.neg(x)), Scalar(1))))};
}

// relu(x) = clamp(x, min=0): NaN propagates and the dtype is kept, as the eager kernel.
std::vector<Value*> relu(DecompBuilder& b) {
  return {b.clamp(b.input(0), Scalar(int64_t{0}), std::nullopt)};
}

// softplus(x) = x when x*beta > threshold, else log1p(exp(x*beta)) / beta.
std::vector<Value*> softplus(DecompBuilder& b) {
  Value* x = widen(b, b.input(0));
  const Scalar beta = b.constant(1).scalar(), threshold = b.constant(2).scalar();
  Value* xb = b.mul(x, beta);
  Value* soft = b.div(b.unary("log1p", b.exp(xb)), beta);
  Value* linear = b.binary("gt", xb, threshold);
  return {b.as_output(b.where(linear, x, soft))};
}

// The largest finite value of T (float16 65504, bfloat16 ~3.39e38) and the lowest, as Scalars.
Scalar max_finite(ScalarType t, bool lowest) {
  return visit_dtype(t, [&]<typename T>() -> Scalar {
    if constexpr (std::is_same_v<T, Half>) {
      return Scalar(Half::from_bits(lowest ? 0xfbff : 0x7bff));
    } else if constexpr (std::is_same_v<T, BFloat16>) {
      return Scalar(BFloat16::from_bits(lowest ? 0xff7f : 0x7f7f));
    } else if constexpr (std::is_floating_point_v<T>) {
      return Scalar(lowest ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
    } else {
      return Scalar(int64_t{0});
    }
  });
}

// `v` converted to dtype t as the eager kernels convert a double bound: through opmath.
Scalar as_dtype(ScalarType t, double v) {
  return visit_dtype(t, [&]<typename T>() -> Scalar {
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      return Scalar(T(static_cast<float>(v)));
    } else {
      return Scalar(static_cast<T>(v));
    }
  });
}

// nan_to_num: NaN -> nan (0), +inf -> posinf (the largest finite), -inf -> neginf (the lowest
// finite). Integer and bool tensors are copied.
std::vector<Value*> nan_to_num(DecompBuilder& b) {
  Value* x = b.input(0);
  const ScalarType dt = x->meta().dtype;
  if (!is_floating(dt)) return {b.call1("clone", {DecompBuilder::V(x)})};
  const IValue nan = b.constant(1), posinf = b.constant(2), neginf = b.constant(3);
  const Scalar hi = posinf.is_none() ? max_finite(dt, false) : as_dtype(dt, posinf.to_double());
  const Scalar lo = neginf.is_none() ? max_finite(dt, true) : as_dtype(dt, neginf.to_double());
  const Scalar nv = as_dtype(dt, nan.is_none() ? 0.0 : nan.to_double());
  Value* positive = b.binary("gt", x, Scalar(int64_t{0}));
  Value* inf_value = b.where(positive, hi, b.full({}, lo, dt));
  Value* finite = b.where(b.unary("isinf", x), inf_value, x);
  return {b.where(b.unary("isnan", x), nv, finite)};
}

// `value` converted to dtype t as the eager kernel does (value.to<T>()), so where() keeps t.
Scalar converted_scalar(ScalarType t, const Scalar& value) {
  return visit_dtype(t, [&]<typename T>() { return Scalar(value.to<T>()); });
}

// masked_fill(self, mask, value) = where(mask, value, self), in self's dtype.
std::vector<Value*> masked_fill(DecompBuilder& b) {
  Value* self = b.input(0);
  const Scalar v = converted_scalar(self->meta().dtype, b.constant(2).scalar());
  Value* out = b.where(b.input(1), v, self);
  return {b.as_output(out)};
}

// The node's three tensor operands converted to its result dtype (reduced floats widened). An
// operand of another dtype goes through the result dtype first, as the eager kernel converts it:
// a uint64 2^64 - 1 tensor1 of a float16 addcdiv is inf there, not 1.8e19 in float32.
std::array<Value*, 3> ternary_operands(DecompBuilder& b) {
  const ScalarType result = b.output_meta().dtype, dt = opmath_dtype(result);
  auto operand = [&](Value* v) {
    if (v->meta().dtype != result && result != dt) v = b.to(v, result);
    return b.to(v, dt);
  };
  return {operand(b.input(0)), operand(b.input(1)), operand(b.input(2))};
}

// addcmul(self, t1, t2, value) = self + value * (t1 * t2); integers wrap as in eager.
std::vector<Value*> addcmul(DecompBuilder& b) {
  const auto [self, t1, t2] = ternary_operands(b);
  const Scalar value = b.constant(3).scalar();
  Value* prod = b.mul(t1, t2);
  if (!(value.is_integral() && value.to_int64() == 1)) prod = b.mul(prod, value);
  return {b.as_output(b.add(self, prod))};
}

// addcdiv(self, t1, t2, value) = self + (value * t1) / t2.
std::vector<Value*> addcdiv(DecompBuilder& b) {
  const auto [self, t1, t2] = ternary_operands(b);
  const Scalar value = b.constant(3).scalar();
  Value* num = value.is_integral() && value.to_int64() == 1 ? t1 : b.mul(t1, value);
  return {b.as_output(b.add(self, b.div(num, t2)))};
}

// lerp(start, end, weight): start + w (end - start) when |w| < 0.5, else
// end - (end - start) (1 - w): exact at both ends, as the eager kernel.
std::vector<Value*> lerp_scalar(DecompBuilder& b) {
  const ScalarType dt = opmath_dtype(b.output_meta().dtype);
  Value* start = b.to(b.input(0), dt);
  Value* end = b.to(b.input(1), dt);
  const double w = b.constant(2).scalar().to_double();
  Value* diff = b.sub(end, start);
  // The weight in opmath precision, and 1 - w computed there (the kernel's M(1) - w).
  const bool single = dt == kFloat32;
  const double wm = single ? static_cast<double>(static_cast<float>(w)) : w;
  if (std::abs(wm) < 0.5) return {b.as_output(b.add(start, b.mul(diff, Scalar(wm))))};
  const double one_minus = single ? static_cast<double>(1.0f - static_cast<float>(w)) : 1.0 - w;
  return {b.as_output(b.sub(end, b.mul(diff, Scalar(one_minus))))};
}

std::vector<Value*> lerp_tensor(DecompBuilder& b) {
  const auto [start, end, w] = ternary_operands(b);
  Value* diff = b.sub(end, start);
  Value* low = b.add(start, b.mul(w, diff));
  Value* one_minus_w = b.add(b.neg(w), Scalar(int64_t{1}));  // rounds as 1 - w does
  Value* high = b.sub(end, b.mul(diff, one_minus_w));
  Value* small = b.binary("lt", b.abs(w), Scalar(0.5));
  return {b.as_output(b.where(small, low, high))};
}

}  // namespace

void register_activation_decompositions(DecompositionTable& t) {
  t.add("gelu", gelu);
  t.add("silu", silu);
  t.add("relu", relu);
  t.add("softplus", softplus);
  t.add("nan_to_num", nan_to_num);
  t.add("masked_fill", masked_fill);
  t.add("addcmul", addcmul);
  t.add("addcdiv", addcdiv);
  t.add("lerp", lerp_scalar);
  t.add("lerp.Tensor", lerp_tensor);
}

}  // namespace kiln::lower
