// SymInt / SymBool: concrete values stay on the integer path, symbolic ones build expressions and
// guard through the current ShapeEnv (Note [Guarding a symbolic value]).
#include <gtest/gtest.h>

#include <sstream>

#include "kiln/error.h"
#include "kiln/sym_int.h"
#include "src/sym/shape_env.h"
#include "tests/sym/allocation_counter.h"

using namespace kiln;
using namespace kiln::sym;

namespace {

std::string str(auto v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

TEST(SymInt, ConcreteArithmeticStaysConcreteAndDoesNotAllocate) {
  size_t before = test_support::allocations_on_this_thread();
  SymInt a(7), b(-2);
  SymInt r = (a + b) * SymInt(3) - a / b + a % b;  // 15 - (-4) + (-1)
  SymBool c = sym_and(a > b, sym_not(a == b));
  SymInt m = sym_max(a, b) + sym_min(a, 3);
  size_t after = test_support::allocations_on_this_thread();
  EXPECT_EQ(after, before);
  EXPECT_FALSE(r.is_symbolic());
  EXPECT_EQ(r.raw(), 18);
  EXPECT_FALSE(c.is_symbolic());
  EXPECT_TRUE(c.expect_bool());
  EXPECT_EQ(m.expect_int(), 10);
}

TEST(SymInt, SymbolicValuesAreTaggedExpressionPointers) {
  ExprPtr s0 = symbol("s0");
  SymInt s = SymInt::from_expr(s0);
  EXPECT_TRUE(s.is_symbolic());
  EXPECT_LE(s.raw(), SymInt::kSymbolicTagMax);
  EXPECT_EQ(s.expr(), s0);
  EXPECT_EQ(SymInt(5).expr(), integer(5));
  EXPECT_TRUE(same(SymInt::from_expr(integer(5)), SymInt(5)));  // constants come back plain
  EXPECT_THROW(SymInt::from_expr(boolean(true)), ValueError);
  EXPECT_THROW(SymInt::from_expr(integer(INT64_MIN)), ValueError);
}

TEST(SymInt, MixedArithmeticBuildsCanonicalExpressions) {
  SymInt s0 = SymInt::from_expr(symbol("s0")), s1 = SymInt::from_expr(symbol("s1"));
  EXPECT_TRUE(same(s0 * 2 + s0, 3 * s0));
  EXPECT_TRUE(same(s0 * s1, s1 * s0));
  EXPECT_TRUE(same(s0 - s0, SymInt(0)));
  EXPECT_FALSE((s0 - s0).is_symbolic());
  EXPECT_EQ(str((s0 + 1) / 2), "(s0 + 1)//2");
  EXPECT_EQ(str(s0 % 4), "s0 % 4");
  EXPECT_EQ(str(sym_max(s0, s1)), "Max(s0, s1)");
  EXPECT_EQ(str(-s0), "-s0");
  SymInt n = s0;
  n += 3;
  n *= 2;
  EXPECT_EQ(str(n), "2*s0 + 6");
  EXPECT_EQ(str(s0 > 8), "s0 > 8");
  EXPECT_EQ(str(s0 >= s1), "s0 >= s1");
  EXPECT_EQ(str(sym_or(s0 == 3, s1 != 2)), "s0 == 3 || s1 != 2");
  EXPECT_EQ(str(SymBool(true)), "True");
  EXPECT_TRUE((s0 <= s0).expect_bool());  // decided by the simplifier
}

TEST(SymInt, ConversionOutsideATraceThrows) {
  SymInt s0 = SymInt::from_expr(symbol("s0"));
  try {
    [[maybe_unused]] int64_t v = s0 + 1;
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("outside a trace"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("s0 + 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(static_cast<void>(static_cast<bool>(s0 > 2)), Error);
  EXPECT_THROW(s0.hint(), Error);
  EXPECT_THROW(s0.expect_int(), Error);
  EXPECT_THROW((s0 > 2).expect_bool(), Error);
  EXPECT_THROW(check(s0 > 2), Error);
}

TEST(SymInt, ConversionUnderAScopeGuardsOnTheHint) {
  ShapeEnv env;
  ShapeEnv::Scope scope(&env);
  SymInt n = env.create_size_symbol(12, "x.size(0)");
  EXPECT_EQ(n.hint(), 12);
  EXPECT_EQ((n * 2).hint(), 24);
  if (n > 8) {
    SUCCEED();
  } else {
    FAIL() << "n > 8 holds for the hint 12";
  }
  ASSERT_EQ(env.guards().size(), 1u);
  EXPECT_EQ(to_string(env.guards()[0].condition), "s0 > 8");
  // An implicit conversion cannot see its caller (the origin is in sym_int.h); guard_bool() and
  // guard_int() called directly record the caller's line.
  EXPECT_TRUE((n < 100).guard_bool());
  EXPECT_NE(env.guards()[1].origin.find("sym_int_test.cpp:"), std::string::npos);
  int64_t half = n / 2;
  EXPECT_EQ(half, 6);
  EXPECT_EQ(to_string(env.guards()[2].condition), "s0//2 == 6");
  EXPECT_EQ(n.guard_int(), 12);  // s0 == 12 is a replacement now
  EXPECT_FALSE(env.simplify(n.expr())->is_symbol());
}

TEST(SymInt, CheckOnConcreteAndSymbolicConditions) {
  check(SymBool(true));
  auto loc = std::source_location::current();
  try {
    check(SymBool(false), loc);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()),
              fmt::format("check failed at sym_int_test.cpp:{}", loc.line()));
  }
  ShapeEnv env;
  ShapeEnv::Scope scope(&env);
  SymInt u0 = env.create_unbacked_symbol("nonzero output size");
  check(u0 >= 1);
  check(u0 < 100);
  EXPECT_EQ(env.runtime_asserts().size(), 2u);
  EXPECT_EQ(env.info(u0.expr())->range, ValueRange::between(1, 99));
  EXPECT_TRUE(static_cast<bool>(u0 != 0));  // known from the asserts, no graph break
  EXPECT_THROW(static_cast<void>(static_cast<bool>(u0 > 5)), DataDependentError);
}
