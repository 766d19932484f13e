// Interval arithmetic (value_range.h).
#include <gtest/gtest.h>

#include "kiln/sym_int.h"
#include "src/sym/expr.h"
#include "src/sym/value_range.h"
#include "tests/sym/random_expr.h"

using namespace kiln;
using namespace kiln::sym;

namespace {

constexpr int64_t kInf = ValueRange::kPosInf, kNegInf = ValueRange::kNegInf;
ValueRange R(int64_t lo, int64_t hi) { return ValueRange::between(lo, hi); }

}  // namespace

TEST(SymValueRange, Basics) {
  EXPECT_EQ(ValueRange::unbounded(), R(kNegInf, kInf));
  EXPECT_EQ(ValueRange::at_least(2), R(2, kInf));
  EXPECT_TRUE(R(2, 5).contains(5));
  EXPECT_FALSE(R(2, 5).contains(6));
  EXPECT_EQ(R(0, 10).intersect(R(5, kInf)), R(5, 10));
  EXPECT_TRUE(R(0, 3).intersect(R(5, 9)).is_empty());
  EXPECT_EQ(R(2, kInf).to_string(), "[2, inf]");
  EXPECT_EQ(ValueRange::unbounded().to_string(), "[-inf, inf]");
}

TEST(SymValueRange, AddAndNegSaturateAtInfinity) {
  EXPECT_EQ(range_add(R(1, 2), R(10, 20)), R(11, 22));
  EXPECT_EQ(range_add(R(1, kInf), R(-5, 3)), R(-4, kInf));
  EXPECT_EQ(range_add(R(INT64_MAX - 1, INT64_MAX - 1), R(5, 5)), R(kInf, kInf));
  EXPECT_EQ(range_neg(R(-3, kInf)), R(kNegInf, 3));
}

TEST(SymValueRange, MulHandlesNegativeBounds) {
  EXPECT_EQ(range_mul(R(2, 3), R(4, 5)), R(8, 15));
  EXPECT_EQ(range_mul(R(-2, 3), R(4, 5)), R(-10, 15));
  EXPECT_EQ(range_mul(R(-2, 3), R(-5, 4)), R(-15, 12));
  EXPECT_EQ(range_mul(R(-3, -2), R(-5, -4)), R(8, 15));
  EXPECT_EQ(range_mul(R(0, kInf), R(-1, 1)), R(kNegInf, kInf));
  EXPECT_EQ(range_mul(R(2, kInf), R(3, 3)), R(6, kInf));
  EXPECT_EQ(range_mul(R(0, 0), ValueRange::unbounded()), R(0, 0));
}

TEST(SymValueRange, FloorDivAndMod) {
  EXPECT_EQ(range_floordiv(R(0, 10), R(2, 3)), R(0, 5));
  EXPECT_EQ(range_floordiv(R(-7, 7), R(2, 2)), R(-4, 3));
  EXPECT_EQ(range_floordiv(R(-7, 7), R(-2, -2)), R(-4, 3));
  EXPECT_EQ(range_floordiv(R(2, kInf), R(2, 2)), R(1, kInf));
  EXPECT_EQ(range_floordiv(R(5, 9), R(1, kInf)), R(0, 9));
  EXPECT_EQ(range_floordiv(R(5, 9), R(-1, 1)), ValueRange::unbounded());
  EXPECT_EQ(range_mod(R(0, kInf), R(8, 8)), R(0, 7));
  EXPECT_EQ(range_mod(R(0, 3), R(8, 8)), R(0, 3));
  EXPECT_EQ(range_mod(R(-5, 5), R(3, 4)), R(0, 3));
  EXPECT_EQ(range_mod(R(0, 100), R(-4, -3)), R(-3, 0));
  EXPECT_EQ(range_mod(R(2, 3), R(0, 4)), ValueRange::unbounded());
}

TEST(SymValueRange, MinMax) {
  EXPECT_EQ(range_min(R(0, 10), R(5, 7)), R(0, 7));
  EXPECT_EQ(range_max(R(0, 10), R(5, 7)), R(5, 10));
  EXPECT_EQ(range_max(R(kNegInf, 3), R(2, kInf)), R(2, kInf));
}

TEST(SymValueRange, BoundOfExpressionsAndConditions) {
  ExprPtr s0 = symbol("s0"), s1 = symbol("s1");
  auto sizes = [&](const Expr* s) { return s == s0 ? R(2, kInf) : R(0, 10); };
  EXPECT_EQ(bound(add(mul(integer(2), s0), s1), sizes), R(4, kInf));
  EXPECT_EQ(bound(sub(s1, s0), sizes), R(kNegInf, 8));
  EXPECT_EQ(bound(floordiv(s1, integer(4)), sizes), R(0, 2));
  EXPECT_EQ(bound(le(integer(0), s0), sizes), R(1, 1));  // s0 >= 0 always holds
  EXPECT_EQ(bound(lt(s0, integer(2)), sizes), R(0, 0));
  EXPECT_EQ(bound(lt(integer(8), s0), sizes), R(0, 1));  // unknown
  EXPECT_EQ(bound(eq(s1, integer(11)), sizes), R(0, 0));
  EXPECT_EQ(bound(logical_or(eq(s1, integer(11)), le(integer(1), s0)), sizes), R(1, 1));
}

// bound() contains every value the expression takes for symbol values inside their ranges.
TEST(SymValueRange, BoundIsSoundOnRandomExpressions) {
  std::mt19937 rng(99);
  std::uniform_int_distribution<int64_t> lo_dist(-4, 6), width(0, 6);
  for (int i = 0; i < 2000; ++i) {
    ValueRange ranges[test_support::kRandomSymbols];
    for (ValueRange& r : ranges) {
      r.lower = lo_dist(rng);
      r.upper = r.lower + width(rng);
    }
    // Divisors s_i + c need s_i >= 0 in the generator; shift negative ranges up for those.
    for (ValueRange& r : ranges) {
      if (r.lower < 0) r = R(0, r.upper - r.lower);
    }
    test_support::RandomExpr e =
        i % 2 ? test_support::random_int_expr(rng, 3) : test_support::random_bool_expr(rng, 2);
    auto range_of = [&](const Expr* s) { return ranges[s->name()[1] - '0']; };
    ValueRange b = bound(e.expr, range_of);
    for (int trial = 0; trial < 5; ++trial) {
      int64_t values[test_support::kRandomSymbols];
      for (int k = 0; k < test_support::kRandomSymbols; ++k) {
        values[k] = std::uniform_int_distribution<int64_t>(ranges[k].lower, ranges[k].upper)(rng);
      }
      int64_t v = e.reference(values);
      ASSERT_TRUE(b.contains(v)) << to_string(e.expr) << " = " << v << " outside " << b.to_string();
    }
  }
}
