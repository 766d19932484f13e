// to_string / parse, and simplification soundness on random expressions.
#include <gtest/gtest.h>

#include "kiln/error.h"
#include "src/sym/expr.h"
#include "tests/sym/random_expr.h"

using namespace kiln;
using namespace kiln::sym;

namespace {

ExprPtr I(int64_t v) { return integer(v); }
const ExprPtr s0 = symbol("s0"), s1 = symbol("s1"), s2 = symbol("s2");

std::string parse_error(std::string_view text) {
  try {
    parse(text);
  } catch (const ValueError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(SymPrint, CodeLikeInfixWithMinimalParentheses) {
  EXPECT_EQ(to_string(add(mul(I(128), s0), I(4))), "128*s0 + 4");
  EXPECT_EQ(to_string(sub(s0, mul(I(2), s1))), "s0 - 2*s1");
  EXPECT_EQ(to_string(sub(I(3), s0)), "-s0 + 3");
  EXPECT_EQ(to_string(sub(s0, I(3))), "s0 - 3");
  EXPECT_EQ(to_string(mul(I(-3), s0)), "-3*s0");
  EXPECT_EQ(to_string(floordiv(add(s0, I(1)), I(2))), "(s0 + 1)//2");
  EXPECT_EQ(to_string(mul(I(2), floordiv(s0, I(3)))), "2*(s0//3)");
  EXPECT_EQ(to_string(mul(floordiv(s0, I(3)), s1)), "s1*(s0//3)");
  EXPECT_EQ(to_string(mul(floordiv(s0, I(3)), min(s0, s1))), "s0//3*Min(s0, s1)");
  EXPECT_EQ(to_string(mul(I(-1), floordiv(s0, I(3)))), "-(s0//3)");
  EXPECT_EQ(to_string(mod(mul(I(2), s0), I(3))), "2*s0 % 3");
  EXPECT_EQ(to_string(floordiv(s0, mul(s1, s2))), "s0//(s1*s2)");
  EXPECT_EQ(to_string(floordiv(s0, I(-2))), "s0//-2");
  EXPECT_EQ(to_string(max(s0, add(s1, I(1)))), "Max(s0, s1 + 1)");
  EXPECT_EQ(to_string(min(s0, s1)), "Min(s0, s1)");
  EXPECT_EQ(to_string(I(-7)), "-7");
  EXPECT_EQ(to_string(boolean(true)), "True");
}

TEST(SymPrint, ComparisonsPrintWithTheConstantOnTheRight) {
  EXPECT_EQ(to_string(lt(I(8), s0)), "s0 > 8");
  EXPECT_EQ(to_string(le(I(8), s0)), "s0 >= 8");
  EXPECT_EQ(to_string(lt(s0, I(8))), "s0 < 8");
  EXPECT_EQ(to_string(le(s0, I(8))), "s0 <= 8");
  EXPECT_EQ(to_string(eq(s0, s1)), "s0 == s1");
  EXPECT_EQ(to_string(ne(s1, s0)), "s0 != s1");
  EXPECT_EQ(to_string(lt(s1, add(s0, I(1)))), "s0 > s1 - 1");
  EXPECT_EQ(to_string(logical_and(lt(s0, I(8)), logical_or(eq(s1, I(2)), eq(s2, I(3))))),
            "s0 < 8 && (s1 == 2 || s2 == 3)");
}

TEST(SymParse, ReadsTheCodeLikeSyntax) {
  EXPECT_EQ(parse("s0 + 2 * s1"), add(s0, mul(I(2), s1)));
  EXPECT_EQ(parse("  (s0+1)//2 "), floordiv(add(s0, I(1)), I(2)));
  EXPECT_EQ(parse("-s0//2"), floordiv(mul(I(-1), s0), I(2)));  // unary minus binds tighter
  EXPECT_EQ(parse("s0 - s1 - s2"), sub(sub(s0, s1), s2));      // left-associative
  EXPECT_EQ(parse("s0 // 2 // 3"), floordiv(s0, I(6)));
  EXPECT_EQ(parse("s0 > 8"), lt(I(8), s0));
  EXPECT_EQ(parse("8 <= s0"), le(I(8), s0));
  EXPECT_EQ(parse("s0 >= s1"), le(s1, s0));
  EXPECT_EQ(parse("!(s0 < 3) && True"), le(I(3), s0));
  EXPECT_EQ(parse("s0 < 3 || s1 != 2"), logical_or(lt(s0, I(3)), ne(s1, I(2))));
  EXPECT_EQ(parse("Max(s0, Min(s1, 4))"), max(s0, min(s1, I(4))));
  EXPECT_EQ(parse("-9223372036854775808"), I(INT64_MIN));
  EXPECT_EQ(parse("my_size7"), symbol("my_size7"));
}

TEST(SymParse, ErrorsAreValueErrorsNamingThePosition) {
  EXPECT_NE(parse_error("s0 +").find("position 4"), std::string::npos) << parse_error("s0 +");
  EXPECT_NE(parse_error("s0 + )").find("unexpected ')' at position 5"), std::string::npos);
  EXPECT_NE(parse_error("(s0 + 1").find("expected ')'"), std::string::npos);
  EXPECT_NE(parse_error("Min(s0)").find("expected ','"), std::string::npos);
  EXPECT_NE(parse_error("s0 s1").find("unexpected text at position 3"), std::string::npos);
  EXPECT_NE(parse_error("99999999999999999999").find("integer out of range at position 0"),
            std::string::npos);
  EXPECT_NE(parse_error("s0 < 1 < 2").find("position 7"), std::string::npos);
  // A type error names the operator's position and the offending operand.
  std::string mixed = parse_error("s0 + (s1 < 2)");
  EXPECT_NE(mixed.find("position 3"), std::string::npos) << mixed;
  EXPECT_NE(mixed.find("s1 < 2"), std::string::npos) << mixed;
  EXPECT_NE(parse_error("s0 // 0").find("division by zero"), std::string::npos);
}

// Round trip and soundness over a few thousand random expressions: parsing the printed form
// gives the same pointer, and the simplified expression evaluates like the generated tree.
TEST(SymPrint, RandomExpressionsRoundTripAndKeepTheirValue) {
  std::mt19937 rng(1234);
  int checked = 0;
  for (int i = 0; i < 4000; ++i) {
    bool boolean_expr = i % 3 == 0;
    test_support::RandomExpr r = boolean_expr ? test_support::random_bool_expr(rng, 3)
                                              : test_support::random_int_expr(rng, 4);
    std::string text = to_string(r.expr);
    ASSERT_EQ(parse(text), r.expr) << text << " reads back as " << to_string(parse(text));
    for (int trial = 0; trial < 3; ++trial) {
      int64_t values[test_support::kRandomSymbols];
      for (int64_t& v : values) v = std::uniform_int_distribution<int64_t>(0, 12)(rng);
      auto value = [&](ExprPtr s) -> std::optional<int64_t> { return values[s->name()[1] - '0']; };
      ASSERT_EQ(evaluate(r.expr, value), r.reference(values))
          << text << " at s0..s3 = " << values[0] << ", " << values[1] << ", " << values[2] << ", "
          << values[3];
      ++checked;
    }
  }
  EXPECT_EQ(checked, 12000);
}

// Sums and products are canonical polynomials: the order and grouping of operands never shows.
TEST(SymExpr, RandomSumsAndProductsAreCommutativeAndAssociative) {
  std::mt19937 rng(42);
  for (int i = 0; i < 1000; ++i) {
    ExprPtr a = test_support::random_int_expr(rng, 2).expr;
    ExprPtr b = test_support::random_int_expr(rng, 2).expr;
    ExprPtr c = test_support::random_int_expr(rng, 2).expr;
    ASSERT_EQ(add(a, b), add(b, a)) << to_string(a) << " + " << to_string(b);
    ASSERT_EQ(mul(a, b), mul(b, a)) << to_string(a) << " * " << to_string(b);
    ASSERT_EQ(add(add(a, b), c), add(a, add(b, c)));
    ASSERT_EQ(mul(mul(a, b), c), mul(a, mul(b, c)));
    ASSERT_EQ(mul(a, add(b, c)), add(mul(a, b), mul(a, c)));
    ASSERT_EQ(sub(add(a, b), b), a);
    ASSERT_EQ(eq(a, b), eq(b, a));
    ASSERT_EQ(logical_not(lt(a, b)), le(b, a));
  }
}
