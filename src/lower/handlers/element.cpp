// The primitives on one element (element.h). Each helper mirrors the eager kernel of the same
// op; see Note [Integer arithmetic without UB] in src/kernels/cpu/binary_arith.cpp and Note
// [Shifts] in src/kernels/cpu/binary_bitwise.cpp for the integer rules.
#include "src/lower/handlers/element.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <type_traits>

#include "kiln/error.h"
#include "src/core/cast.h"
#include "src/kernels/cpu/unary.h"

namespace kiln::lower {
namespace {

// ---- integer helpers (modular, never UB) ------------------------------------------------------

template <typename T>
using wide_unsigned_t = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

template <typename T>
T wrap_add(T x, T y) {
  using W = wide_unsigned_t<T>;
  return static_cast<T>(static_cast<W>(static_cast<W>(x) + static_cast<W>(y)));
}
template <typename T>
T wrap_sub(T x, T y) {
  using W = wide_unsigned_t<T>;
  return static_cast<T>(static_cast<W>(static_cast<W>(x) - static_cast<W>(y)));
}
template <typename T>
T wrap_mul(T x, T y) {
  using W = wide_unsigned_t<T>;
  return static_cast<T>(static_cast<W>(static_cast<W>(x) * static_cast<W>(y)));
}
// x / -1 is a wrapping negation (INT_MIN / -1 == INT_MIN) instead of a trap.
template <typename T>
T div_trunc(T x, T y) {
  if constexpr (std::is_signed_v<T>) {
    if (y == T(-1)) return wrap_sub(T(0), x);
  }
  return static_cast<T>(x / y);
}
template <typename T>
T div_floor(T x, T y) {
  if constexpr (std::is_signed_v<T>) {
    if (y == T(-1)) return wrap_sub(T(0), x);
    const T q = static_cast<T>(x / y);
    const T r = static_cast<T>(x % y);
    return (r != 0 && ((r < 0) != (y < 0))) ? static_cast<T>(q - 1) : q;
  } else {
    return static_cast<T>(x / y);
  }
}
template <typename T>
T int_fmod(T x, T y) {
  if constexpr (std::is_signed_v<T>) {
    if (y == T(-1)) return 0;
  }
  return static_cast<T>(x % y);
}
template <typename T>
T int_remainder(T x, T y) {
  if constexpr (std::is_signed_v<T>) {
    if (y == T(-1)) return 0;
    const T r = static_cast<T>(x % y);
    return (r != 0 && ((r < 0) != (y < 0))) ? static_cast<T>(r + y) : r;
  } else {
    return static_cast<T>(x % y);
  }
}
// Squaring, modulo 2^bits. A negative exponent gives the integer part of 1/x^|e| (PyTorch's rule
// for tensor exponents): 1 for x == 1, +-1 for x == -1, 0 otherwise.
template <typename T>
T int_pow(T x, T e) {
  if constexpr (std::is_signed_v<T>) {
    if (e < 0) {
      if (x == 1) return 1;
      if (x == -1) return (e & 1) ? T(-1) : T(1);
      return 0;
    }
  }
  T result = 1;
  auto k = static_cast<std::make_unsigned_t<T>>(e);
  while (k != 0) {
    if (k & 1u) result = wrap_mul(result, x);
    k >>= 1;
    if (k != 0) x = wrap_mul(x, x);
  }
  return result;
}
// Shifts by a negative amount or by >= the width: 0, or -1 for a negative signed right shift.
template <typename T>
T shift_left(T x, T s) {
  constexpr int kBits = static_cast<int>(sizeof(T) * 8);
  if constexpr (std::is_signed_v<T>) {
    if (s < 0) return 0;
  }
  if (s >= static_cast<T>(kBits)) return 0;
  using W = wide_unsigned_t<T>;
  return static_cast<T>(
      static_cast<W>(static_cast<W>(static_cast<std::make_unsigned_t<T>>(x)) << s));
}
template <typename T>
T shift_right(T x, T s) {
  constexpr int kBits = static_cast<int>(sizeof(T) * 8);
  if constexpr (std::is_signed_v<T>) {
    if (s < 0 || s >= static_cast<T>(kBits)) return x < 0 ? T(-1) : T(0);
  } else {
    if (s >= static_cast<T>(kBits)) return 0;
  }
  return static_cast<T>(x >> s);  // arithmetic for signed values (C++20)
}
template <typename T>
T wrapping_neg(T v) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(U(0) - static_cast<U>(v)));
}

// ---- floating helpers (in opmath: float for float16/bfloat16/float32, double for float64) ----

template <typename M>
M float_div_floor(M a, M b) {
  if (b == M(0)) return a / b;
  const M mod = std::fmod(a, b);
  M div = (a - mod) / b;
  if (mod != M(0) && ((b < M(0)) != (mod < M(0)))) div -= M(1);
  if (div == M(0)) return std::copysign(M(0), a / b);
  M floordiv = std::floor(div);
  if (div - floordiv > M(0.5)) floordiv += M(1);
  return floordiv;
}
template <typename M>
M float_remainder(M a, M b) {
  M mod = std::fmod(a, b);
  if (mod != M(0) && ((b < M(0)) != (mod < M(0)))) mod += b;
  return mod;
}
template <typename M>
M nan_max(M a, M b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<M>::quiet_NaN();
  return a > b ? a : b;
}
template <typename M>
M nan_min(M a, M b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<M>::quiet_NaN();
  return a < b ? a : b;
}

[[noreturn]] void unsupported(std::string_view op, ScalarType dtype) {
  throw DTypeError(fmt::format(
      "lower interpreter: {} is not defined for dtype {}; the lowering must cast the operand first "
      "(math functions take floating operands, bitwise ops integer or bool ones)",
      op, dtype_name(dtype)));
}

// ---- unary -------------------------------------------------------------------------------------

template <typename M>
M float_function(UnaryOp op, M v) {
  switch (op) {
    case UnaryOp::exp:
      return std::exp(v);
    case UnaryOp::exp2:
      return std::exp2(v);
    case UnaryOp::expm1:
      return std::expm1(v);
    case UnaryOp::log:
      return std::log(v);
    case UnaryOp::log2:
      return std::log2(v);
    case UnaryOp::log10:
      return std::log10(v);
    case UnaryOp::log1p:
      return std::log1p(v);
    case UnaryOp::sqrt:
      return std::sqrt(v);
    case UnaryOp::rsqrt:
      return M(1) / std::sqrt(v);
    case UnaryOp::reciprocal:
      return M(1) / v;
    case UnaryOp::sin:
      return std::sin(v);
    case UnaryOp::cos:
      return std::cos(v);
    case UnaryOp::tan:
      return std::tan(v);
    case UnaryOp::asin:
      return std::asin(v);
    case UnaryOp::acos:
      return std::acos(v);
    case UnaryOp::atan:
      return std::atan(v);
    case UnaryOp::sinh:
      return std::sinh(v);
    case UnaryOp::cosh:
      return std::cosh(v);
    case UnaryOp::tanh:
      return std::tanh(v);
    case UnaryOp::erf:
      return std::erf(v);
    case UnaryOp::erfinv:
      return static_cast<M>(cpu::erfinv(static_cast<double>(v)));
    case UnaryOp::sigmoid:
      return M(1) / (M(1) + std::exp(-v));
    case UnaryOp::floor:
      return std::floor(v);
    case UnaryOp::ceil:
      return std::ceil(v);
    case UnaryOp::round:
      return std::nearbyint(v);  // halfway cases to even, as torch.round
    case UnaryOp::trunc:
      return std::trunc(v);
    case UnaryOp::frac:
      return v - std::trunc(v);
    case UnaryOp::neg:
      return -v;
    case UnaryOp::abs:
      return std::fabs(v);
    case UnaryOp::sign:
      return static_cast<M>(M(0) < v) - static_cast<M>(v < M(0));  // NaN -> 0
    default:
      break;
  }
  __builtin_unreachable();
}

bool is_float_only(UnaryOp op) {
  switch (op) {
    case UnaryOp::neg:
    case UnaryOp::abs:
    case UnaryOp::sign:
    case UnaryOp::floor:
    case UnaryOp::ceil:
    case UnaryOp::round:
    case UnaryOp::trunc:
    case UnaryOp::logical_not:
    case UnaryOp::bitwise_not:
    case UnaryOp::isnan:
    case UnaryOp::isinf:
    case UnaryOp::isfinite:
      return false;
    default:
      return true;
  }
}

template <typename T>
Element unary_typed(UnaryOp op, T v) {
  using M = opmath_t<T>;
  switch (op) {
    case UnaryOp::logical_not:
      return Element::of(!cast_value<bool>(v));
    case UnaryOp::isnan:
      if constexpr (is_floating_v<T>) return Element::of(static_cast<bool>(std::isnan(M(v))));
      return Element::of(false);
    case UnaryOp::isinf:
      if constexpr (is_floating_v<T>) return Element::of(static_cast<bool>(std::isinf(M(v))));
      return Element::of(false);
    case UnaryOp::isfinite:
      if constexpr (is_floating_v<T>) return Element::of(static_cast<bool>(std::isfinite(M(v))));
      return Element::of(true);
    default:
      break;
  }
  if constexpr (is_floating_v<T>) {
    if (op == UnaryOp::bitwise_not) unsupported(name_of(op), scalar_type_of<T>);
    return Element::of(static_cast<T>(float_function<M>(op, static_cast<M>(v))));
  } else if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case UnaryOp::bitwise_not:
        return Element::of(!v);
      case UnaryOp::sign:
        return Element::of(v);
      default:  // eager rejects rounding of bool too
        unsupported(name_of(op), kBool);
    }
  } else {
    if (is_float_only(op)) unsupported(name_of(op), scalar_type_of<T>);
    switch (op) {
      case UnaryOp::neg:
        return Element::of(wrapping_neg(v));
      case UnaryOp::abs:
        if constexpr (std::is_signed_v<T>) return Element::of(v < 0 ? wrapping_neg(v) : v);
        return Element::of(v);
      case UnaryOp::sign:
        return Element::of(static_cast<T>((T(0) < v) - (v < T(0))));
      case UnaryOp::bitwise_not:
        return Element::of(static_cast<T>(~v));
      default:
        return Element::of(v);  // rounding: integers are whole already
    }
  }
}

// ---- binary ------------------------------------------------------------------------------------

template <typename T>
Element compare(BinaryOp op, T x, T y) {
  using M = opmath_t<T>;
  const M a = static_cast<M>(x), b = static_cast<M>(y);
  switch (op) {
    case BinaryOp::eq:
      return Element::of(a == b);
    case BinaryOp::ne:
      return Element::of(a != b);
    case BinaryOp::lt:
      return Element::of(a < b);
    case BinaryOp::le:
      return Element::of(a <= b);
    case BinaryOp::gt:
      return Element::of(a > b);
    case BinaryOp::ge:
      return Element::of(a >= b);
    case BinaryOp::logical_and:
      return Element::of(cast_value<bool>(x) && cast_value<bool>(y));
    case BinaryOp::logical_or:
      return Element::of(cast_value<bool>(x) || cast_value<bool>(y));
    case BinaryOp::logical_xor:
      return Element::of(cast_value<bool>(x) != cast_value<bool>(y));
    default:
      break;
  }
  __builtin_unreachable();
}

template <typename T>
Element float_binary(BinaryOp op, T x, T y) {
  using M = opmath_t<T>;
  const M a = static_cast<M>(x), b = static_cast<M>(y);
  M r;
  switch (op) {
    case BinaryOp::add:
      r = a + b;
      break;
    case BinaryOp::sub:
      r = a - b;
      break;
    case BinaryOp::mul:
      r = a * b;
      break;
    case BinaryOp::truediv:
      r = a / b;
      break;
    case BinaryOp::floordiv:
      r = float_div_floor(a, b);
      break;
    case BinaryOp::truncdiv:
      r = std::trunc(a / b);
      break;
    case BinaryOp::remainder:
      r = float_remainder(a, b);
      break;
    case BinaryOp::fmod:
      r = std::fmod(a, b);
      break;
    case BinaryOp::pow:
      r = std::pow(a, b);
      break;
    case BinaryOp::atan2:
      r = std::atan2(a, b);
      break;
    case BinaryOp::hypot:
      r = std::hypot(a, b);
      break;
    case BinaryOp::maximum:
      r = nan_max(a, b);
      break;
    case BinaryOp::minimum:
      r = nan_min(a, b);
      break;
    default:
      unsupported(name_of(op), scalar_type_of<T>);
  }
  return Element::of(static_cast<T>(r));
}

template <typename T>
Element integer_binary(BinaryOp op, T x, T y) {
  switch (op) {
    case BinaryOp::add:
      return Element::of(wrap_add(x, y));
    case BinaryOp::sub:
      return Element::of(wrap_sub(x, y));
    case BinaryOp::mul:
      return Element::of(wrap_mul(x, y));
    case BinaryOp::maximum:
      return Element::of(x > y ? x : y);
    case BinaryOp::minimum:
      return Element::of(x < y ? x : y);
    case BinaryOp::pow:
      return Element::of(int_pow(x, y));
    case BinaryOp::bitwise_and:
      return Element::of(static_cast<T>(x & y));
    case BinaryOp::bitwise_or:
      return Element::of(static_cast<T>(x | y));
    case BinaryOp::bitwise_xor:
      return Element::of(static_cast<T>(x ^ y));
    case BinaryOp::lshift:
      return Element::of(shift_left(x, y));
    case BinaryOp::rshift:
      return Element::of(shift_right(x, y));
    case BinaryOp::floordiv:
    case BinaryOp::truncdiv:
    case BinaryOp::remainder:
    case BinaryOp::fmod:
      KILN_CHECK(y != T(0), ValueError,
                 "lower interpreter: integer division by zero in {} of dtype {} (dividend {}); "
                 "eager raises the same error (ZeroDivisionError)",
                 name_of(op), dtype_name(scalar_type_of<T>), Element::of(x).to_string());
      if (op == BinaryOp::floordiv) return Element::of(div_floor(x, y));
      if (op == BinaryOp::truncdiv) return Element::of(div_trunc(x, y));
      if (op == BinaryOp::remainder) return Element::of(int_remainder(x, y));
      return Element::of(int_fmod(x, y));
    default:
      unsupported(name_of(op), scalar_type_of<T>);
  }
}

Element bool_binary(BinaryOp op, bool x, bool y) {
  switch (op) {
    case BinaryOp::add:
    case BinaryOp::maximum:
    case BinaryOp::bitwise_or:
      return Element::of(x || y);
    case BinaryOp::mul:
    case BinaryOp::minimum:
    case BinaryOp::bitwise_and:
      return Element::of(x && y);
    case BinaryOp::bitwise_xor:
      return Element::of(x != y);
    default:
      unsupported(name_of(op), kBool);
  }
}

}  // namespace

double Element::to_double() const {
  return visit_dtype(dtype_, [&]<typename T>() { return cast_value<double>(get<T>()); });
}

int64_t Element::to_int64() const {
  return visit_dtype(dtype_, [&]<typename T>() { return cast_value<int64_t>(get<T>()); });
}

std::string Element::to_string() const {
  std::string v = visit_dtype(dtype_, [&]<typename T>() -> std::string {
    const T x = get<T>();
    if constexpr (std::is_same_v<T, bool>)
      return x ? "true" : "false";
    else if constexpr (is_floating_v<T>)
      return fmt::format("{}", static_cast<opmath_t<T>>(x));
    else
      return fmt::format("{}", x);
  });
  return fmt::format("{} ({})", v, dtype_name(dtype_));
}

Element make_int_element(int64_t i, ScalarType dtype) {
  return visit_dtype(dtype, [&]<typename T>() {
    if constexpr (is_floating_v<T> || std::is_same_v<T, bool>)
      return Element::of(cast_value<T>(i));
    else
      return Element::of(static_cast<T>(i));  // modular: uint64 takes the bit pattern
  });
}

Element make_float_element(double f, ScalarType dtype) {
  return visit_dtype(dtype, [&]<typename T>() { return Element::of(cast_value<T>(f)); });
}

Element convert(Element x, ScalarType dtype) {
  if (x.dtype() == dtype) return x;
  return visit_dtype(x.dtype(), [&]<typename From>() {
    const From v = x.get<From>();
    return visit_dtype(dtype, [&]<typename To>() { return Element::of(cast_value<To>(v)); });
  });
}

bool truth(Element x) {
  return visit_dtype(x.dtype(), [&]<typename T>() { return cast_value<bool>(x.get<T>()); });
}

Element apply(UnaryOp op, Element x) {
  return visit_dtype(x.dtype(), [&]<typename T>() { return unary_typed<T>(op, x.get<T>()); });
}

Element apply(BinaryOp op, Element a, Element b) {
  KILN_CHECK(a.dtype() == b.dtype(), DTypeError,
             "lower interpreter: {} got operands of dtypes {} and {}; loop-IR operands share one "
             "dtype (the lowering inserts to_dtype where eager promotes)",
             name_of(op), dtype_name(a.dtype()), dtype_name(b.dtype()));
  return visit_dtype(a.dtype(), [&]<typename T>() -> Element {
    const T x = a.get<T>(), y = b.get<T>();
    if (produces_bool(op)) return compare<T>(op, x, y);
    if constexpr (std::is_same_v<T, bool>) {
      return bool_binary(op, x, y);
    } else if constexpr (is_floating_v<T>) {
      return float_binary<T>(op, x, y);
    } else {
      return integer_binary<T>(op, x, y);
    }
  });
}

}  // namespace kiln::lower
