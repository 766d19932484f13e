// Value-range analysis (value_range_handler.h); Note [Sound value ranges].
#include "src/lower/handlers/value_range_handler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "kiln/error.h"
#include "src/lower/handlers/loop_symbols.h"

namespace kiln::lower {
namespace {

using i128 = __int128;
constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- integer bounds ----------------------------------------------------------------------------

i128 dtype_min(ScalarType t) {
  return visit_dtype(t, [&]<typename T>() -> i128 {
    if constexpr (std::is_integral_v<T>) return static_cast<i128>(std::numeric_limits<T>::min());
    return 0;
  });
}
i128 dtype_max(ScalarType t) {
  return visit_dtype(t, [&]<typename T>() -> i128 {
    if constexpr (std::is_integral_v<T>) return static_cast<i128>(std::numeric_limits<T>::max());
    return 0;
  });
}

// The exact result [lo, hi] of an integer op, or the dtype's full range when the op could wrap.
ValueInterval int_result(i128 lo, i128 hi, ScalarType dtype) {
  if (lo < dtype_min(dtype) || hi > dtype_max(dtype)) return ValueInterval::full(dtype);
  ValueInterval r;
  r.dtype = dtype;
  r.ilo = lo;
  r.ihi = hi;
  return r;
}

ValueInterval bool_result(bool can_false, bool can_true) {
  if (!can_false && !can_true) can_false = can_true = true;  // unreachable code: anything
  return ValueInterval::between(can_false ? 0 : 1, can_true ? 1 : 0, kBool);
}

std::string i128_to_string(i128 v) {
  if (v == 0) return "0";
  const bool negative = v < 0;
  unsigned __int128 u =
      negative ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  std::string s;
  while (u != 0) {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  }
  return negative ? "-" + s : s;
}

// min and max over a list of candidate endpoints, failing (nullopt) on 128-bit overflow.
struct Hull {
  i128 lo = 0, hi = 0;
  bool any = false;
  void add(i128 v) {
    lo = any ? std::min(lo, v) : v;
    hi = any ? std::max(hi, v) : v;
    any = true;
  }
};

// ---- floating bounds ---------------------------------------------------------------------------

// Rounds v to the dtype's grid: down (toward -inf) or up, then `extra` more steps outward.
template <typename T>
double round_to(double v, bool down, int extra) {
  if (std::isnan(v)) return down ? -kInf : kInf;
  auto step = [&](T t) -> T {
    if constexpr (std::is_floating_point_v<T>) {
      return std::nextafter(
          t, down ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity());
    } else {
      // float16/bfloat16 are sign-magnitude: a step away from zero is bits + 1, toward it bits - 1.
      const float f = static_cast<float>(t);
      if (std::isinf(f) && (f < 0) == down) return t;
      uint16_t bits = t.bits;
      const bool negative = bits & 0x8000u;
      if ((bits & 0x7fffu) == 0) return T::from_bits(down ? 0x8001u : 0x0001u);  // +-0
      bits = static_cast<uint16_t>(negative == down ? bits + 1 : bits - 1);
      return T::from_bits(bits);
    }
  };
  T t = static_cast<T>(static_cast<opmath_t<T>>(v));
  // double -> float -> half can round twice; the check below fixes either direction.
  auto as_double = [](T x) { return static_cast<double>(static_cast<opmath_t<T>>(x)); };
  if (down ? as_double(t) > v : as_double(t) < v) t = step(t);
  for (int i = 0; i < extra; ++i) t = step(t);
  return as_double(t);
}

double round_out(double v, bool down, ScalarType dtype, int extra) {
  return visit_dtype(dtype, [&]<typename T>() -> double {
    if constexpr (is_floating_v<T>) return round_to<T>(v, down, extra);
    return v;
  });
}

// A floating result [lo, hi] computed in double, rounded outward to the dtype; `inexact` adds two
// ulps each way for functions libm does not round correctly (a float32 function may also differ
// from its double counterpart by a rounding). The extra ulps never cross zero: libm is faithful,
// so a result that is exactly 0 (exp(-inf), tanh(0)) comes out exactly, and a sign is kept.
ValueInterval float_result(double lo, double hi, bool maybe_nan, ScalarType dtype,
                           bool inexact = false) {
  if (std::isnan(lo)) lo = -kInf;
  if (std::isnan(hi)) hi = kInf;
  ValueInterval r;
  r.dtype = dtype;
  const int extra = inexact ? 2 : 0;
  r.lo = round_out(lo, true, dtype, extra);
  r.hi = round_out(hi, false, dtype, extra);
  if (lo >= 0 && r.lo < 0) r.lo = 0;
  if (hi <= 0 && r.hi > 0) r.hi = 0;
  r.maybe_nan = maybe_nan;
  return r;
}

bool has_inf(const ValueInterval& x) { return std::isinf(x.lo) || std::isinf(x.hi); }
bool contains_zero(const ValueInterval& x) { return x.lo <= 0 && x.hi >= 0; }
double max_abs(const ValueInterval& x) { return std::max(std::fabs(x.lo), std::fabs(x.hi)); }
double min_abs(const ValueInterval& x) {
  return contains_zero(x) ? 0.0 : std::min(std::fabs(x.lo), std::fabs(x.hi));
}

// min/max over candidate values, NaN candidates (0 * inf at a corner) replaced by `nan_as`.
ValueInterval float_hull(std::initializer_list<double> candidates, double nan_as, bool maybe_nan,
                         ScalarType dtype, bool inexact = false) {
  double lo = kInf, hi = -kInf;
  for (double c : candidates) {
    if (std::isnan(c)) c = nan_as;
    lo = std::min(lo, c);
    hi = std::max(hi, c);
  }
  return float_result(lo, hi, maybe_nan, dtype, inexact);
}

// f over [lo, hi] ∩ [dlo, dhi]: monotone increasing or decreasing there; NaN outside the domain.
template <typename F>
ValueInterval monotone(const ValueInterval& x, F f, bool increasing, double dlo = -kInf,
                       double dhi = kInf, bool inexact = true) {
  const bool nan = x.maybe_nan || x.lo < dlo || x.hi > dhi;
  double a = std::max(x.lo, dlo), b = std::min(x.hi, dhi);
  if (a > b) a = b = std::clamp(a, dlo, dhi);  // only NaN is possible; any point will do
  // Endpoints at -0.0 are taken as +0.0 (the callers handle functions that tell them apart).
  if (a == 0) a = 0.0;
  if (b == 0) b = 0.0;
  const double fa = f(a), fb = f(b);
  return float_result(increasing ? fa : fb, increasing ? fb : fa, nan, x.dtype, inexact);
}

// ---- unary rules -------------------------------------------------------------------------------

ValueInterval float_unary(UnaryOp op, const ValueInterval& x) {
  const ScalarType t = x.dtype;
  switch (op) {
    case UnaryOp::neg:
      return float_result(-x.hi, -x.lo, x.maybe_nan, t);
    case UnaryOp::abs:
      if (x.lo >= 0) return x;
      if (x.hi <= 0) return float_result(-x.hi, -x.lo, x.maybe_nan, t);
      return float_result(0, max_abs(x), x.maybe_nan, t);
    case UnaryOp::sign: {
      auto sgn = [](double v) { return static_cast<double>((0 < v) - (v < 0)); };
      double lo = sgn(x.lo), hi = sgn(x.hi);
      if (x.maybe_nan) lo = std::min(lo, 0.0), hi = std::max(hi, 0.0);  // sign(NaN) == 0
      return float_result(lo, hi, false, t);
    }
    case UnaryOp::rsqrt: {
      // Decreasing on [0, inf], but rsqrt(-0.0) is -inf.
      ValueInterval r = monotone(
          x, [](double v) { return 1 / std::sqrt(v); }, false, 0);
      if (contains_zero(x)) r.lo = -kInf;
      return r;
    }
    case UnaryOp::reciprocal:
      if (x.lo > 0 || x.hi < 0) return float_result(1 / x.hi, 1 / x.lo, x.maybe_nan, t);
      return float_result(-kInf, kInf, x.maybe_nan, t);
    case UnaryOp::sin:
    case UnaryOp::cos:
      return float_result(-1, 1, x.maybe_nan || has_inf(x), t);
    case UnaryOp::tan:
      return float_result(-kInf, kInf, x.maybe_nan || has_inf(x), t);
    case UnaryOp::cosh:
      return float_result(std::cosh(min_abs(x)), std::cosh(max_abs(x)), x.maybe_nan, t, true);
    case UnaryOp::frac: {
      // x - trunc(x) has x's sign, magnitude below 1 and at most |x|.
      const double lo = x.lo >= 0 ? 0 : std::max(x.lo, -1.0),
                   hi = x.hi <= 0 ? 0 : std::min(x.hi, 1.0);
      return float_result(lo, hi, x.maybe_nan || has_inf(x), t);
    }
    case UnaryOp::bitwise_not:
      return ValueInterval::full(t);  // not defined on floats
    default:
      break;
  }
  return ValueInterval::full(t);
}

ValueInterval integer_unary(UnaryOp op, const ValueInterval& x) {
  const ScalarType t = x.dtype;
  if (t == kBool) {
    switch (op) {
      case UnaryOp::bitwise_not:
        return ValueInterval::between(1 - static_cast<int64_t>(x.ihi),
                                      1 - static_cast<int64_t>(x.ilo), kBool);
      case UnaryOp::sign:
      case UnaryOp::floor:
      case UnaryOp::ceil:
      case UnaryOp::round:
      case UnaryOp::trunc:
        return x;
      default:
        return ValueInterval::full(t);
    }
  }
  switch (op) {
    case UnaryOp::neg:
      return int_result(-x.ihi, -x.ilo, t);
    case UnaryOp::abs:
      if (x.ilo >= 0) return x;
      if (x.ihi <= 0) return int_result(-x.ihi, -x.ilo, t);
      return int_result(0, std::max(-x.ilo, x.ihi), t);
    case UnaryOp::sign: {
      auto sgn = [](i128 v) -> i128 { return (0 < v) - (v < 0); };
      return int_result(sgn(x.ilo), sgn(x.ihi), t);
    }
    case UnaryOp::bitwise_not:
      // ~v is -v - 1 for signed values and max - v for unsigned ones.
      if (is_unsigned(t)) return int_result(dtype_max(t) - x.ihi, dtype_max(t) - x.ilo, t);
      return int_result(-x.ihi - 1, -x.ilo - 1, t);
    case UnaryOp::floor:
    case UnaryOp::ceil:
    case UnaryOp::round:
    case UnaryOp::trunc:
      return x;
    default:
      return ValueInterval::full(t);  // math functions are not defined on integers
  }
}

// ---- binary rules ------------------------------------------------------------------------------

// Integer division with the divisor's zero excluded (division by zero is an error, not a value).
template <typename Div>
ValueInterval int_division(const ValueInterval& a, const ValueInterval& b, Div div) {
  Hull h;
  auto corners = [&](i128 blo, i128 bhi) {
    if (blo > bhi) return;
    for (i128 x : {a.ilo, a.ihi})
      for (i128 y : {blo, bhi}) h.add(div(x, y));
  };
  corners(b.ilo, std::min<i128>(b.ihi, -1));
  corners(std::max<i128>(b.ilo, 1), b.ihi);
  if (!h.any) return ValueInterval::full(a.dtype);
  return int_result(h.lo, h.hi, a.dtype);
}

i128 floor_div128(i128 x, i128 y) {
  const i128 q = x / y, r = x % y;
  return (r != 0 && ((r < 0) != (y < 0))) ? q - 1 : q;
}

// x^e for x, e >= 0, or nullopt past 2^100 (then the result wraps anyway).
std::optional<i128> pow128(i128 x, i128 e) {
  i128 r = 1;
  for (i128 i = 0; i < e; ++i) {
    if (x <= 1) return e == 0 ? 1 : x;  // 0^e, 1^e
    if (r > (i128(1) << 100) / x) return std::nullopt;
    r *= x;
  }
  return r;
}

int bit_length(i128 v) {
  int n = 0;
  while (v > 0) v >>= 1, ++n;
  return n;
}

ValueInterval compare_rule(BinaryOp op, double alo, double ahi, double blo, double bhi, bool nan) {
  const bool overlap = alo <= bhi && blo <= ahi;
  const bool same_point = alo == ahi && blo == bhi && alo == blo;
  switch (op) {
    case BinaryOp::lt:
      return bool_result(ahi >= blo || nan, alo < bhi);
    case BinaryOp::le:
      return bool_result(ahi > blo || nan, alo <= bhi);
    case BinaryOp::gt:
      return bool_result(alo <= bhi || nan, ahi > blo);
    case BinaryOp::ge:
      return bool_result(alo < bhi || nan, ahi >= blo);
    case BinaryOp::eq:
      return bool_result(!same_point || nan, overlap);
    case BinaryOp::ne:
      return bool_result(overlap, !same_point || nan);
    default:
      break;
  }
  return ValueInterval::full(kBool);
}

ValueInterval logical_rule(BinaryOp op, const ValueInterval& a, const ValueInterval& b) {
  const bool at = a.may_be_nonzero(), af = a.may_be_zero(), bt = b.may_be_nonzero(),
             bf = b.may_be_zero();
  switch (op) {
    case BinaryOp::logical_and:
      return bool_result(af || bf, at && bt);
    case BinaryOp::logical_or:
      return bool_result(af && bf, at || bt);
    default:
      return bool_result((at && bt) || (af && bf), (at && bf) || (af && bt));
  }
}

ValueInterval integer_binary(BinaryOp op, const ValueInterval& a, const ValueInterval& b) {
  const ScalarType t = a.dtype;
  if (t == kBool) {
    switch (op) {
      case BinaryOp::add:
      case BinaryOp::maximum:
      case BinaryOp::bitwise_or:
        return logical_rule(BinaryOp::logical_or, a, b);
      case BinaryOp::mul:
      case BinaryOp::minimum:
      case BinaryOp::bitwise_and:
        return logical_rule(BinaryOp::logical_and, a, b);
      case BinaryOp::bitwise_xor:
        return logical_rule(BinaryOp::logical_xor, a, b);
      default:
        return ValueInterval::full(kBool);
    }
  }
  const int bits = static_cast<int>(element_size(t) * 8);
  switch (op) {
    case BinaryOp::add:
      return int_result(a.ilo + b.ilo, a.ihi + b.ihi, t);
    case BinaryOp::sub:
      return int_result(a.ilo - b.ihi, a.ihi - b.ilo, t);
    case BinaryOp::mul: {
      Hull h;
      for (i128 x : {a.ilo, a.ihi})
        for (i128 y : {b.ilo, b.ihi}) {
          i128 p;
          if (__builtin_mul_overflow(x, y, &p)) return ValueInterval::full(t);
          h.add(p);
        }
      return int_result(h.lo, h.hi, t);
    }
    case BinaryOp::floordiv:
      return int_division(a, b, floor_div128);
    case BinaryOp::truncdiv:
      return int_division(a, b, [](i128 x, i128 y) { return x / y; });
    case BinaryOp::remainder: {
      // Sign of the divisor, magnitude below it; a non-negative dividend below every positive
      // divisor is unchanged.
      Hull h;
      if (b.ihi >= 1) {
        if (a.ilo >= 0 && a.ihi < std::max<i128>(b.ilo, 1))
          h.add(a.ilo), h.add(a.ihi);
        else
          h.add(0), h.add(b.ihi - 1);
      }
      if (b.ilo <= -1) h.add(b.ilo + 1), h.add(0);
      if (!h.any) return ValueInterval::full(t);
      return int_result(h.lo, h.hi, t);
    }
    case BinaryOp::fmod: {
      // Sign of the dividend, magnitude below the divisor's and at most the dividend's.
      const i128 m = std::max(b.ilo < 0 ? -b.ilo : b.ilo, b.ihi < 0 ? -b.ihi : b.ihi);
      if (m == 0) return ValueInterval::full(t);
      return int_result(a.ilo < 0 ? std::max(a.ilo, -(m - 1)) : 0,
                        a.ihi > 0 ? std::min(a.ihi, m - 1) : 0, t);
    }
    case BinaryOp::pow: {
      // For x, e >= 0, x^e is monotone in each argument, so the extremes are at the corners.
      if (a.ilo < 0 || b.ilo < 0) return ValueInterval::full(t);
      Hull h;
      for (i128 x : {a.ilo, a.ihi})
        for (i128 e : {b.ilo, b.ihi}) {
          const std::optional<i128> p = pow128(x, e);
          if (!p) return ValueInterval::full(t);
          h.add(*p);
        }
      return int_result(h.lo, h.hi, t);
    }
    case BinaryOp::maximum:
      return int_result(std::max(a.ilo, b.ilo), std::max(a.ihi, b.ihi), t);
    case BinaryOp::minimum:
      return int_result(std::min(a.ilo, b.ilo), std::min(a.ihi, b.ihi), t);
    case BinaryOp::bitwise_and:
      if (a.ilo >= 0 && b.ilo >= 0) return int_result(0, std::min(a.ihi, b.ihi), t);
      return ValueInterval::full(t);
    case BinaryOp::bitwise_or:
    case BinaryOp::bitwise_xor:
      if (a.ilo >= 0 && b.ilo >= 0) {
        const int n = bit_length(std::max(a.ihi, b.ihi));
        return int_result(op == BinaryOp::bitwise_or ? std::max(a.ilo, b.ilo) : 0,
                          (i128(1) << n) - 1, t);
      }
      return ValueInterval::full(t);
    case BinaryOp::lshift:
      if (a.ilo >= 0 && b.ilo >= 0 && b.ihi < bits && bit_length(a.ihi) + b.ihi < 120)
        return int_result(a.ilo << static_cast<int>(b.ilo), a.ihi << static_cast<int>(b.ihi), t);
      return ValueInterval::full(t);
    case BinaryOp::rshift:
      if (a.ilo >= 0 && b.ilo >= 0) {
        const i128 lo = b.ihi >= bits ? 0 : a.ilo >> static_cast<int>(b.ihi);
        const i128 hi = b.ilo >= bits ? 0 : a.ihi >> static_cast<int>(b.ilo);
        return int_result(lo, hi, t);
      }
      return ValueInterval::full(t);
    default:
      return ValueInterval::full(t);  // truediv, atan2, hypot are not defined on integers
  }
}

ValueInterval float_binary(BinaryOp op, const ValueInterval& a, const ValueInterval& b) {
  const ScalarType t = a.dtype;
  const bool nan_in = a.maybe_nan || b.maybe_nan;
  switch (op) {
    case BinaryOp::add:
    case BinaryOp::sub: {
      const double blo = op == BinaryOp::add ? b.lo : -b.hi,
                   bhi = op == BinaryOp::add ? b.hi : -b.lo;
      // inf + -inf is NaN.
      const bool nan = nan_in || (a.hi == kInf && blo == -kInf) || (a.lo == -kInf && bhi == kInf);
      return float_result(a.lo + blo, a.hi + bhi, nan, t);
    }
    case BinaryOp::mul: {
      const bool nan =
          nan_in || (contains_zero(a) && has_inf(b)) || (contains_zero(b) && has_inf(a));
      return float_hull({a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi}, 0, nan, t);
    }
    case BinaryOp::truediv:
    case BinaryOp::floordiv:
    case BinaryOp::truncdiv: {
      bool nan = nan_in || (contains_zero(a) && contains_zero(b)) || (has_inf(a) && has_inf(b));
      ValueInterval q;
      if (contains_zero(b)) {
        q = float_result(-kInf, kInf, nan, t);
      } else {
        const double c[] = {a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi};
        const bool corner_nan =
            std::any_of(std::begin(c), std::end(c), [](double v) { return std::isnan(v); });
        q = corner_nan ? float_result(-kInf, kInf, nan, t)
                       : float_hull({c[0], c[1], c[2], c[3]}, 0, nan, t);
      }
      if (op == BinaryOp::truediv) return q;
      if (op == BinaryOp::truncdiv)
        return float_result(std::trunc(q.lo), std::trunc(q.hi), q.maybe_nan, t);
      // Eager's floordiv goes through fmod (inf // y is NaN) and may differ from floor(a / b) by
      // one where a / b rounds to an integer.
      return float_result(std::floor(q.lo) - 1, std::floor(q.hi) + 1,
                          q.maybe_nan || has_inf(a) || has_inf(b), t);
    }
    case BinaryOp::remainder: {
      const bool nan = nan_in || contains_zero(b) || has_inf(a);
      if (has_inf(b)) return float_result(-kInf, kInf, nan, t);
      const double lo = b.lo < 0 ? b.lo : 0, hi = b.hi > 0 ? b.hi : 0;
      return float_result(lo, hi, nan, t);
    }
    case BinaryOp::fmod: {
      const bool nan = nan_in || contains_zero(b) || has_inf(a);
      const double m = max_abs(b);
      return float_result(a.lo < 0 ? std::max(a.lo, -m) : 0, a.hi > 0 ? std::min(a.hi, m) : 0, nan,
                          t);
    }
    case BinaryOp::pow: {
      if (a.lo >= 0) {
        // Monotone in each argument for x >= 0: extremes at the corners, never NaN.
        return float_hull({std::pow(a.lo, b.lo), std::pow(a.lo, b.hi), std::pow(a.hi, b.lo),
                           std::pow(a.hi, b.hi)},
                          0, nan_in, t, true);
      }
      if (b.lo == b.hi && !b.maybe_nan && std::trunc(b.lo) == b.lo && b.lo >= 0 && b.lo < 64) {
        // An integer power: even powers depend on |x|, odd ones are increasing.
        const double e = b.lo;
        if (std::fmod(e, 2) == 0)
          return float_result(std::pow(min_abs(a), e), std::pow(max_abs(a), e), a.maybe_nan, t,
                              true);
        return float_result(std::pow(a.lo, e), std::pow(a.hi, e), a.maybe_nan, t, true);
      }
      return ValueInterval::full(t);
    }
    case BinaryOp::atan2:
      return float_result(-std::numbers::pi, std::numbers::pi, nan_in, t, true);
    case BinaryOp::hypot:
      return float_result(std::hypot(min_abs(a), min_abs(b)), std::hypot(max_abs(a), max_abs(b)),
                          nan_in, t, true);
    case BinaryOp::maximum:
      return float_result(std::max(a.lo, b.lo), std::max(a.hi, b.hi), nan_in, t);
    case BinaryOp::minimum:
      return float_result(std::min(a.lo, b.lo), std::min(a.hi, b.hi), nan_in, t);
    default:
      return ValueInterval::full(t);  // bitwise ops are not defined on floats
  }
}

sym::ValueRange symbol_lookup(const SymbolRanges& ranges, sym::ExprPtr s) {
  auto it = ranges.find(s);
  return it == ranges.end() ? sym::ValueRange::unbounded() : it->second;
}

}  // namespace

// ---- ValueInterval ------------------------------------------------------------------------------

ValueInterval ValueInterval::full(ScalarType dtype) {
  ValueInterval r;
  r.dtype = dtype;
  if (is_floating(dtype)) {
    r.lo = -kInf;
    r.hi = kInf;
    r.maybe_nan = true;
  } else {
    r.ilo = dtype_min(dtype);
    r.ihi = dtype_max(dtype);
  }
  return r;
}

ValueInterval ValueInterval::exactly(int64_t v, ScalarType dtype) { return between(v, v, dtype); }

ValueInterval ValueInterval::between(int64_t lo, int64_t hi, ScalarType dtype) {
  KILN_CHECK(!is_floating(dtype), ValueError,
             "ValueInterval::between: {} is floating; use between_float", dtype_name(dtype));
  return int_result(lo, hi, dtype);
}

ValueInterval ValueInterval::between_float(double lo, double hi, ScalarType dtype, bool maybe_nan) {
  KILN_CHECK(is_floating(dtype), ValueError, "ValueInterval::between_float: {} is not floating",
             dtype_name(dtype));
  return float_result(lo, hi, maybe_nan, dtype);
}

bool ValueInterval::is_full() const { return *this == full(dtype); }

bool ValueInterval::is_singleton() const {
  return is_integral() ? ilo == ihi : (lo == hi && !maybe_nan);
}

bool ValueInterval::is_nonnegative() const {
  return is_integral() ? ilo >= 0 : (lo >= 0 && !maybe_nan);
}

bool ValueInterval::fits_in(ScalarType target) const {
  if (is_floating(target)) {
    // Integers fit when the target's mantissa holds them; floats when the target is as wide.
    if (!is_integral())
      return element_size(target) >= element_size(dtype) &&
             (target != kFloat16 || dtype == kFloat16) &&
             (target != kBFloat16 || dtype == kBFloat16);
    const int mantissa = target == kFloat64   ? 53
                         : target == kFloat32 ? 24
                         : target == kFloat16 ? 11
                                              : 8;
    const i128 limit = i128(1) << mantissa;
    return ilo >= -limit && ihi <= limit;
  }
  if (is_integral()) return ilo >= dtype_min(target) && ihi <= dtype_max(target);
  // Floats fit an integer dtype when they are whole numbers in range; a range cannot show
  // wholeness, except for a single value.
  return is_singleton() && std::trunc(lo) == lo && lo >= static_cast<double>(dtype_min(target)) &&
         lo <= static_cast<double>(dtype_max(target));
}

bool ValueInterval::may_be_zero() const {
  return is_integral() ? (ilo <= 0 && ihi >= 0) : contains_zero(*this);
}

bool ValueInterval::may_be_nonzero() const {
  return is_integral() ? !(ilo == 0 && ihi == 0) : (maybe_nan || !(lo == 0 && hi == 0));
}

std::string ValueInterval::to_string() const {
  if (is_integral())
    return fmt::format("[{}, {}] ({})", i128_to_string(ilo), i128_to_string(ihi),
                       dtype_name(dtype));
  return fmt::format("[{}, {}]{} ({})", lo, hi, maybe_nan ? " or nan" : "", dtype_name(dtype));
}

// ---- interval rules ----------------------------------------------------------------------------

ValueInterval range_unary(UnaryOp op, const ValueInterval& x) {
  // The primitive's row says when no rule below is needed (Note [The primitive table]).
  const RangeRule& rule = primitive(op).range;
  if (rule.kind == RangeKind::unknown)
    return ValueInterval::full(produces_bool(op) ? kBool : x.dtype);
  if (!x.is_integral() && rule.kind != RangeKind::rule)
    return monotone(x, rule.f, rule.kind == RangeKind::increasing, rule.domain_lo, rule.domain_hi,
                    !rule.correctly_rounded);
  switch (op) {
    case UnaryOp::logical_not:
      return bool_result(x.may_be_nonzero(), x.may_be_zero());
    case UnaryOp::isnan:
      return bool_result(true, x.is_integral() ? false : x.maybe_nan);
    case UnaryOp::isinf:
      if (x.is_integral()) return bool_result(true, false);
      return bool_result(x.maybe_nan || !(x.lo == x.hi && std::isinf(x.lo)), has_inf(x));
    case UnaryOp::isfinite:
      if (x.is_integral()) return bool_result(false, true);
      return bool_result(x.maybe_nan || has_inf(x), !(x.lo == x.hi && std::isinf(x.lo)));
    default:
      break;
  }
  return x.is_integral() ? integer_unary(op, x) : float_unary(op, x);
}

ValueInterval range_binary(BinaryOp op, const ValueInterval& a, const ValueInterval& b) {
  KILN_CHECK(
      a.dtype == b.dtype, ValueError,
      "lower value ranges: {} got operands of dtypes {} and {}; loop-IR operands share one dtype",
      name_of(op), dtype_name(a.dtype), dtype_name(b.dtype));
  if (primitive(op).range.kind == RangeKind::unknown)
    return ValueInterval::full(produces_bool(op) ? kBool : a.dtype);
  switch (op) {
    case BinaryOp::logical_and:
    case BinaryOp::logical_or:
    case BinaryOp::logical_xor:
      return logical_rule(op, a, b);
    case BinaryOp::eq:
    case BinaryOp::ne:
    case BinaryOp::lt:
    case BinaryOp::le:
    case BinaryOp::gt:
    case BinaryOp::ge:
      if (a.is_integral()) {
        // 128-bit bounds compare exactly through their order; map them to doubles only when the
        // comparison outcome would not change (beyond 2^53 use the exact comparisons).
        auto d = [](i128 v) { return static_cast<double>(v); };
        const bool exact = a.ilo > -(i128(1) << 53) && a.ihi < (i128(1) << 53) &&
                           b.ilo > -(i128(1) << 53) && b.ihi < (i128(1) << 53);
        if (!exact) return ValueInterval::full(kBool);
        return compare_rule(op, d(a.ilo), d(a.ihi), d(b.ilo), d(b.ihi), false);
      }
      return compare_rule(op, a.lo, a.hi, b.lo, b.hi, a.maybe_nan || b.maybe_nan);
    default:
      break;
  }
  return a.is_integral() ? integer_binary(op, a, b) : float_binary(op, a, b);
}

ValueInterval range_cast(const ValueInterval& x, ScalarType dtype) {
  if (x.dtype == dtype) return x;
  if (dtype == kBool) return bool_result(x.may_be_zero(), x.may_be_nonzero());
  if (is_floating(dtype)) {
    if (x.is_integral())
      return float_result(static_cast<double>(x.ilo), static_cast<double>(x.ihi), false, dtype);
    return float_result(x.lo, x.hi, x.maybe_nan, dtype);
  }
  if (x.is_integral()) return int_result(x.ilo, x.ihi, dtype);
  // Float -> integer truncates; NaN becomes 0; out of range wraps (Note [Casting to integers]).
  if (has_inf(x) || std::fabs(x.lo) >= 9.2e18 || std::fabs(x.hi) >= 9.2e18)
    return ValueInterval::full(dtype);
  i128 lo = static_cast<i128>(std::trunc(x.lo)), hi = static_cast<i128>(std::trunc(x.hi));
  if (x.maybe_nan) lo = std::min<i128>(lo, 0), hi = std::max<i128>(hi, 0);
  return int_result(lo, hi, dtype);
}

ValueInterval range_union(const ValueInterval& a, const ValueInterval& b) {
  KILN_CHECK(a.dtype == b.dtype, ValueError, "lower value ranges: a union of {} and {}",
             dtype_name(a.dtype), dtype_name(b.dtype));
  ValueInterval r = a;
  if (a.is_integral()) {
    r.ilo = std::min(a.ilo, b.ilo);
    r.ihi = std::max(a.ihi, b.ihi);
  } else {
    r.lo = std::min(a.lo, b.lo);
    r.hi = std::max(a.hi, b.hi);
    r.maybe_nan = a.maybe_nan || b.maybe_nan;
  }
  return r;
}

// ---- the handler -------------------------------------------------------------------------------

ValueRangeHandler::ValueRangeHandler(SymbolRanges symbol_ranges, BufferRanges buffer_ranges)
    : symbol_ranges_(std::move(symbol_ranges)), buffer_ranges_(std::move(buffer_ranges)) {}

void ValueRangeHandler::set_loop_range(sym::ExprPtr symbol, sym::ExprPtr size) {
  const sym::ValueRange n = index_range(size);
  const int64_t upper =
      n.upper == sym::ValueRange::kPosInf ? n.upper : std::max<int64_t>(n.upper, 1) - 1;
  symbol_ranges_[symbol] = sym::ValueRange::between(0, upper);
}

void ValueRangeHandler::set_reduction_numel(sym::ExprPtr numel) {
  reduction_numel_ = index_range(numel).intersect(sym::ValueRange::at_least(0));
}

sym::ValueRange ValueRangeHandler::index_range(sym::ExprPtr e) const {
  return sym::bound(e, [&](sym::ExprPtr s) { return symbol_lookup(symbol_ranges_, s); });
}

const ValueInterval& ValueRangeHandler::range(Val v) const {
  KILN_CHECK(v.id >= 0 && static_cast<size_t>(v.id) < values_.size(), ValueError,
             "lower value ranges: Val {} was not made by this handler", v.id);
  return values_[static_cast<size_t>(v.id)];
}

Val ValueRangeHandler::push(ValueInterval r) {
  values_.push_back(r);
  return Val{static_cast<int32_t>(values_.size() - 1), r.dtype};
}

Val ValueRangeHandler::load(BufferRef buffer, sym::ExprPtr) {
  auto it = buffer_ranges_.find(std::string(buffer.name));
  if (it == buffer_ranges_.end()) return push(ValueInterval::full(buffer.dtype));
  KILN_CHECK(it->second.dtype == buffer.dtype, ValueError,
             "lower value ranges: the range given for buffer '{}' is {} but the buffer is {}",
             buffer.name, it->second.to_string(), dtype_name(buffer.dtype));
  return push(it->second);
}

void ValueRangeHandler::record_store(BufferRef buffer, Val value) {
  const ValueInterval r = range_cast(range(value), buffer.dtype);
  auto [it, inserted] = stored_.try_emplace(std::string(buffer.name), r);
  if (!inserted) it->second = range_union(it->second, r);
}

void ValueRangeHandler::store(BufferRef buffer, sym::ExprPtr, Val value) {
  record_store(buffer, value);
}
void ValueRangeHandler::store_reduction(BufferRef buffer, sym::ExprPtr, Val value) {
  record_store(buffer, value);
}

Val ValueRangeHandler::index_expr(sym::ExprPtr expr, ScalarType dtype) {
  // The expression is evaluated in int64 (sym::evaluate wraps there), then converted.
  const sym::ValueRange r = index_range(expr);
  ValueInterval v = ValueInterval::full(kInt64);
  if (r.lower != sym::ValueRange::kNegInf && r.upper != sym::ValueRange::kPosInf && !r.is_empty())
    v = ValueInterval::between(r.lower, r.upper, kInt64);
  return push(range_cast(v, dtype));
}

Val ValueRangeHandler::constant_int(int64_t i, ScalarType dtype) {
  if (is_floating(dtype))
    return push(float_result(static_cast<double>(i), static_cast<double>(i), false, dtype));
  if (dtype == kBool) return push(ValueInterval::exactly(i != 0, kBool));
  // Integral constants take i's bit pattern (uint64 values above 2^63 come as negative i).
  const i128 v = visit_dtype(dtype, [&]<typename T>() -> i128 {
    if constexpr (std::is_integral_v<T>) return static_cast<i128>(static_cast<T>(i));
    return 0;
  });
  return push(int_result(v, v, dtype));
}

Val ValueRangeHandler::constant_float(double f, ScalarType dtype) {
  if (!is_floating(dtype)) {
    ValueInterval c = float_result(f, f, std::isnan(f), kFloat64);
    return push(range_cast(c, dtype));
  }
  if (std::isnan(f)) {
    ValueInterval r = float_result(0, 0, true, dtype);
    return push(r);
  }
  return push(float_result(f, f, false, dtype));
}

Val ValueRangeHandler::to_dtype(Val x, ScalarType dtype) {
  casts_.push_back({x.dtype, dtype, float_cast_in_range(range(x), dtype)});
  return push(range_cast(range(x), dtype));
}

// A C++ conversion of a floating value to an integer type is defined when the truncated value is
// representable: trunc(v) in [min, max], i.e. v in (min - 1, max + 1), and v is not NaN.
bool float_cast_in_range(const ValueInterval& x, ScalarType dtype) {
  if (x.is_integral() || is_floating(dtype) || dtype == kBool || x.maybe_nan) return false;
  const double below = static_cast<double>(dtype_min(dtype)) - 1,
               above = static_cast<double>(dtype_max(dtype)) + 1;
  return x.lo > below && x.hi < above;
}
Val ValueRangeHandler::unary(UnaryOp op, Val x) { return push(range_unary(op, range(x))); }
Val ValueRangeHandler::binary(BinaryOp op, Val a, Val b) {
  return push(range_binary(op, range(a), range(b)));
}

Val ValueRangeHandler::where(Val cond, Val a, Val b) {
  const ValueInterval& c = range(cond);
  if (!c.may_be_zero()) return push(range(a));
  if (!c.may_be_nonzero()) return push(range(b));
  return push(range_union(range(a), range(b)));
}

Val ValueRangeHandler::reduction(ReductionType type, Val value) {
  const ValueInterval v = range(value);
  const ScalarType t = v.dtype;
  const int64_t nlo = reduction_numel_.lower, nhi = reduction_numel_.upper;
  const bool unbounded_n = nhi == sym::ValueRange::kPosInf;
  switch (type) {
    case ReductionType::max:
    case ReductionType::min:
      return push(v);
    case ReductionType::any:
      return push(bool_result(v.may_be_zero() || nlo == 0, v.may_be_nonzero()));
    case ReductionType::all:
      return push(bool_result(v.may_be_zero(), v.may_be_nonzero() || nlo == 0));
    case ReductionType::argmax:
    case ReductionType::argmin:
      return push(ValueInterval::between(0, unbounded_n ? INT64_MAX : std::max<int64_t>(nhi - 1, 0),
                                         kInt64));
    case ReductionType::sum: {
      if (t == kBool) return push(bool_result(true, v.may_be_nonzero()));
      if (v.is_integral()) {
        // n values in [lo, hi] sum to within [min(n lo), max(n hi)] over n in [nlo, nhi].
        if (unbounded_n) return push(v.ilo >= 0 && v.ihi == 0 ? v : ValueInterval::full(t));
        Hull h;
        for (i128 n : {i128(nlo), i128(nhi)})
          for (i128 x : {v.ilo, v.ihi}) {
            i128 p;
            if (__builtin_mul_overflow(n, x, &p)) return push(ValueInterval::full(t));
            h.add(p);
          }
        return push(int_result(h.lo, h.hi, t));
      }
      const double n_hi = unbounded_n ? kInf : static_cast<double>(nhi);
      double lo = kInf, hi = -kInf;
      for (double n : {static_cast<double>(nlo), n_hi})
        for (double x : {v.lo, v.hi}) {
          const double p = std::isnan(n * x) ? 0 : n * x;  // 0 * inf: no terms
          lo = std::min(lo, p), hi = std::max(hi, p);
        }
      // Rounding of the running sum: at most n relative epsilons of the largest partial sum.
      const double eps = t == kFloat64 ? 0x1p-52 : t == kFloat32 ? 0x1p-23 : 0x1p-7;
      const double slack = n_hi * eps * std::max(std::fabs(lo), std::fabs(hi));
      const double l = std::isnan(lo - slack) ? -kInf : lo - slack,
                   u = std::isnan(hi + slack) ? kInf : hi + slack;
      return push(float_result(l, u, v.maybe_nan || (l == -kInf && u == kInf), t));
    }
    case ReductionType::prod:
      if (v.is_integral() ? (v.ilo >= 0 && v.ihi <= 1) : (v.lo >= 0 && v.hi <= 1 && !v.maybe_nan))
        return push(v.is_integral() ? ValueInterval::between(0, 1, t)
                                    : float_result(0, 1, false, t));
      return push(ValueInterval::full(t));
    case ReductionType::welford_mean: {
      if (v.is_integral()) return push(ValueInterval::full(t));
      // The running mean stays within the values up to a few roundings.
      const double slack =
          16 * (t == kFloat64 ? 0x1p-52 : 0x1p-23) * std::max(std::fabs(v.lo), std::fabs(v.hi));
      return push(
          float_result(v.lo - slack, v.hi + slack, v.maybe_nan || has_inf(v) || nlo == 0, t));
    }
    case ReductionType::welford_m2:
      if (v.is_integral()) return push(ValueInterval::full(t));
      return push(float_result(0, kInf, v.maybe_nan || has_inf(v), t));
  }
  return push(ValueInterval::full(reduction_result_dtype(type, t)));
}

// ---- whole bodies ------------------------------------------------------------------------------

ValueInterval bound(const Loader& fn, const std::vector<sym::ExprPtr>& ranges,
                    const SymbolRanges& symbol_ranges, const BufferRanges& buffer_ranges) {
  ValueRangeHandler h(symbol_ranges, buffer_ranges);
  const std::vector<sym::ExprPtr> vars = loop_symbols("i", ranges.size());
  for (size_t d = 0; d < ranges.size(); ++d) h.set_loop_range(vars[d], ranges[d]);
  HandlerScope scope(h);
  return h.range(fn(vars));
}

ValueInterval bound(const Reduction& red, const SymbolRanges& symbol_ranges,
                    const BufferRanges& buffer_ranges) {
  ValueRangeHandler h(symbol_ranges, buffer_ranges);
  const std::vector<sym::ExprPtr> vars = loop_symbols("i", red.ranges.size());
  const std::vector<sym::ExprPtr> rvars = loop_symbols("r", red.reduction_ranges.size());
  for (size_t d = 0; d < vars.size(); ++d) h.set_loop_range(vars[d], red.ranges[d]);
  sym::ExprPtr numel = sym::integer(1);
  for (size_t d = 0; d < rvars.size(); ++d) {
    h.set_loop_range(rvars[d], red.reduction_ranges[d]);
    numel = sym::mul(numel, red.reduction_ranges[d]);
  }
  h.set_reduction_numel(numel);
  HandlerScope scope(h);
  const Val v = red.inner_fn(vars, rvars);
  return h.range(h.reduction(red.type, v));
}

}  // namespace kiln::lower
