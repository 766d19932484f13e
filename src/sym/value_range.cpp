// Interval arithmetic over [lower, upper] with infinite ends (value_range.h).
#include "src/sym/value_range.h"

#include <algorithm>
#include <vector>

#include "kiln/error.h"
#include "kiln/sym_int.h"
#include "src/sym/expr.h"

namespace kiln::sym {
namespace {

constexpr int64_t kNegInf = ValueRange::kNegInf;
constexpr int64_t kPosInf = ValueRange::kPosInf;

bool infinite(int64_t x) { return x == kNegInf || x == kPosInf; }

// Extended-integer products and sums: infinities absorb, overflow saturates.
int64_t ext_mul(int64_t x, int64_t y) {
  if (x == 0 || y == 0) return 0;
  bool negative = (x < 0) != (y < 0);
  int64_t r;
  if (infinite(x) || infinite(y) || __builtin_mul_overflow(x, y, &r)) {
    return negative ? kNegInf : kPosInf;
  }
  return r;
}
int64_t ext_add(int64_t x, int64_t y, int64_t infinity_wins) {
  if (x == infinity_wins || y == infinity_wins) return infinity_wins;
  if (infinite(x)) return x;
  if (infinite(y)) return y;
  int64_t r;
  if (__builtin_add_overflow(x, y, &r)) return x < 0 ? kNegInf : kPosInf;
  return r;
}
int64_t ext_neg(int64_t x) {
  if (x == kNegInf) return kPosInf;
  if (x == kPosInf) return kNegInf;
  return -x;
}
// floor(x / y) for y != 0, either possibly infinite (both infinite is handled by the caller).
int64_t ext_floordiv(int64_t x, int64_t y) {
  if (infinite(y)) {
    if (x == 0) return 0;
    return ((x < 0) != (y < 0)) ? -1 : 0;
  }
  if (infinite(x)) return ((x < 0) != (y < 0)) ? kNegInf : kPosInf;
  if (x == INT64_MIN && y == -1) return kPosInf;
  return sym_detail::floordiv_int(x, y);
}

ValueRange hull(std::initializer_list<int64_t> values) {
  return {std::min(values), std::max(values)};
}

}  // namespace

ValueRange ValueRange::intersect(ValueRange other) const {
  return {std::max(lower, other.lower), std::min(upper, other.upper)};
}

std::string ValueRange::to_string() const {
  auto end = [](int64_t x) {
    return x == kNegInf ? std::string("-inf") : x == kPosInf ? "inf" : fmt::format("{}", x);
  };
  return fmt::format("[{}, {}]", end(lower), end(upper));
}

ValueRange range_add(ValueRange a, ValueRange b) {
  return {ext_add(a.lower, b.lower, kNegInf), ext_add(a.upper, b.upper, kPosInf)};
}

ValueRange range_neg(ValueRange a) { return {ext_neg(a.upper), ext_neg(a.lower)}; }

ValueRange range_mul(ValueRange a, ValueRange b) {
  return hull({ext_mul(a.lower, b.lower), ext_mul(a.lower, b.upper), ext_mul(a.upper, b.lower),
               ext_mul(a.upper, b.upper)});
}

// For a divisor of one sign, floor(x/y) is monotonic in x and in y, so the corners bound it.
ValueRange range_floordiv(ValueRange a, ValueRange b) {
  if (b.contains(0)) return ValueRange::unbounded();
  if ((infinite(a.lower) || infinite(a.upper)) && (infinite(b.lower) || infinite(b.upper))) {
    return ValueRange::unbounded();
  }
  return hull({ext_floordiv(a.lower, b.lower), ext_floordiv(a.lower, b.upper),
               ext_floordiv(a.upper, b.lower), ext_floordiv(a.upper, b.upper)});
}

// Python's x % y has the sign of y and |x % y| < |y|; x % y == x when 0 <= x < y.
ValueRange range_mod(ValueRange a, ValueRange b) {
  if (b.contains(0)) return ValueRange::unbounded();
  if (b.lower > 0) {
    if (a.lower >= 0 && a.upper < b.lower) return a;
    int64_t upper = b.upper == kPosInf ? kPosInf : b.upper - 1;
    if (a.lower >= 0) upper = std::min(upper, a.upper);
    return {0, upper};
  }
  if (a.upper <= 0 && a.lower > b.upper) return a;
  int64_t lower = b.lower == kNegInf ? kNegInf : b.lower + 1;
  if (a.upper <= 0) lower = std::max(lower, a.lower);
  return {lower, 0};
}

ValueRange range_min(ValueRange a, ValueRange b) {
  return {std::min(a.lower, b.lower), std::min(a.upper, b.upper)};
}
ValueRange range_max(ValueRange a, ValueRange b) {
  return {std::max(a.lower, b.lower), std::max(a.upper, b.upper)};
}

ValueRange bound(const Expr* e, const std::function<ValueRange(const Expr*)>& symbol_range) {
  auto args = e->args();
  std::vector<ValueRange> r;
  r.reserve(args.size());
  for (const Expr* a : args) r.push_back(bound(a, symbol_range));
  auto fold = [&](ValueRange (*f)(ValueRange, ValueRange)) {
    ValueRange acc = r[0];
    for (size_t i = 1; i < r.size(); ++i) acc = f(acc, r[i]);
    return acc;
  };
  constexpr ValueRange kTrue = ValueRange::exactly(1), kFalse = ValueRange::exactly(0),
                       kUnknown = ValueRange::between(0, 1);
  auto decide = [&](bool is_true, bool is_false) {
    return is_true ? kTrue : is_false ? kFalse : kUnknown;
  };
  switch (e->kind()) {
    case ExprKind::Integer:
      return ValueRange::exactly(e->value());
    case ExprKind::Symbol:
      return symbol_range(e);
    case ExprKind::True:
      return kTrue;
    case ExprKind::False:
      return kFalse;
    case ExprKind::Add:
      return fold(&range_add);
    case ExprKind::Mul:
      return fold(&range_mul);
    case ExprKind::FloorDiv:
      return range_floordiv(r[0], r[1]);
    case ExprKind::Mod:
      return range_mod(r[0], r[1]);
    case ExprKind::Min:
      return fold(&range_min);
    case ExprKind::Max:
      return fold(&range_max);
    case ExprKind::Eq:
    case ExprKind::Ne: {
      bool equal = r[0].is_singleton() && r[0] == r[1];
      bool disjoint = r[0].upper < r[1].lower || r[1].upper < r[0].lower;
      return e->kind() == ExprKind::Eq ? decide(equal, disjoint) : decide(disjoint, equal);
    }
    case ExprKind::Lt:
      return decide(r[0].upper < r[1].lower, r[0].lower >= r[1].upper);
    case ExprKind::Le:
      return decide(r[0].upper <= r[1].lower, r[0].lower > r[1].upper);
    case ExprKind::And:
      return fold(&range_min);
    case ExprKind::Or:
      return fold(&range_max);
    case ExprKind::Not:
      return {1 - r[0].upper, 1 - r[0].lower};
  }
  return ValueRange::unbounded();
}

}  // namespace kiln::sym
