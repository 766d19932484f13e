// Value ranges: closed integer intervals [lower, upper] that bound what an expression can be, used
// to decide comparisons without guarding (`s0 >= 0` always holds for a size).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>

namespace kiln::sym {

class Expr;

struct ValueRange {
  // Sentinels for unbounded ends; arithmetic saturates at them instead of overflowing.
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();

  int64_t lower = kNegInf;
  int64_t upper = kPosInf;

  static constexpr ValueRange unbounded() { return {}; }
  static constexpr ValueRange at_least(int64_t n) { return {n, kPosInf}; }
  static constexpr ValueRange exactly(int64_t n) { return {n, n}; }
  static constexpr ValueRange between(int64_t lo, int64_t hi) { return {lo, hi}; }

  bool is_singleton() const { return lower == upper; }
  bool is_empty() const { return lower > upper; }
  bool contains(int64_t v) const { return lower <= v && v <= upper; }
  // The intersection (may be empty, which means the facts contradict each other).
  ValueRange intersect(ValueRange other) const;
  bool operator==(const ValueRange&) const = default;

  std::string to_string() const;  // "[2, inf]"
};

// Interval arithmetic, sound for every integer in the operands (Python floor semantics for
// floordiv and mod). A divisor range containing 0 gives unbounded (division by zero is not a
// value).
ValueRange range_add(ValueRange a, ValueRange b);
ValueRange range_neg(ValueRange a);
ValueRange range_mul(ValueRange a, ValueRange b);
ValueRange range_floordiv(ValueRange a, ValueRange b);
ValueRange range_mod(ValueRange a, ValueRange b);
ValueRange range_min(ValueRange a, ValueRange b);
ValueRange range_max(ValueRange a, ValueRange b);

// Bounds an integer expression given each symbol's range (booleans give [0, 1], or a single value
// when the ranges decide them).
ValueRange bound(const Expr* e, const std::function<ValueRange(const Expr* symbol)>& symbol_range);

}  // namespace kiln::sym
