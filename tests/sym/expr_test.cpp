// Canonical forms and the simplification rules of sym::Expr (Note [Canonical form]).
#include <gtest/gtest.h>

#include <thread>

#include "kiln/error.h"
#include "src/sym/expr.h"

using namespace kiln;
using namespace kiln::sym;

namespace {

ExprPtr I(int64_t v) { return integer(v); }
const ExprPtr s0 = symbol("s0"), s1 = symbol("s1"), s2 = symbol("s2"), s10 = symbol("s10");

}  // namespace

TEST(SymExpr, StructurallyEqualExpressionsAreOnePointer) {
  EXPECT_EQ(integer(7), integer(7));
  EXPECT_EQ(symbol("s0"), s0);
  EXPECT_NE(symbol("s0"), symbol("s00"));
  EXPECT_EQ(add(s0, mul(I(2), s1)), add(mul(s1, I(2)), s0));
}

TEST(SymExpr, ConstantsFold) {
  EXPECT_EQ(add(I(2), I(3)), I(5));
  EXPECT_EQ(mul(I(-4), I(3)), I(-12));
  EXPECT_EQ(sub(I(2), I(3)), I(-1));
  EXPECT_EQ(floordiv(I(7), I(2)), I(3));
  EXPECT_EQ(floordiv(I(-7), I(2)), I(-4));  // toward -inf, like Python
  EXPECT_EQ(mod(I(-7), I(2)), I(1));        // sign of the divisor
  EXPECT_EQ(mod(I(7), I(-2)), I(-1));
  EXPECT_THROW(add(I(INT64_MAX), I(1)), ValueError);
  EXPECT_THROW(mul(I(INT64_MAX), I(2)), ValueError);
}

TEST(SymExpr, AddCollectsLikeTerms) {
  EXPECT_EQ(add(mul(I(2), s0), s0), mul(I(3), s0));
  EXPECT_EQ(sub(s0, s0), I(0));
  EXPECT_EQ(add(add(s0, s1), s2), add(s2, add(s1, s0)));
  EXPECT_EQ(add(s0, I(0)), s0);
  ExprPtr e = add(add(mul(I(3), s0), I(4)), sub(s1, add(s0, I(4))));
  EXPECT_EQ(e, add(mul(I(2), s0), s1));
  // Constant last, sum never nested.
  ExprPtr sum = add(I(4), add(s1, s0));
  ASSERT_EQ(sum->kind(), ExprKind::Add);
  ASSERT_EQ(sum->args().size(), 3u);
  EXPECT_EQ(sum->args()[0], s0);
  EXPECT_EQ(sum->args()[2], I(4));
}

TEST(SymExpr, MulCommutesFlattensAndDistributes) {
  EXPECT_EQ(mul(s0, s1), mul(s1, s0));
  EXPECT_EQ(mul(mul(s0, s1), s2), mul(s2, mul(s1, s0)));
  EXPECT_EQ(mul(I(0), s0), I(0));
  EXPECT_EQ(mul(I(1), s0), s0);
  EXPECT_EQ(mul(I(2), add(s0, I(1))), add(mul(I(2), s0), I(2)));
  ExprPtr square = mul(add(s0, I(1)), add(s0, I(1)));
  EXPECT_EQ(square, add(add(mul(s0, s0), mul(I(2), s0)), I(1)));
  ExprPtr product = mul(I(3), mul(s1, I(2)));
  ASSERT_EQ(product->kind(), ExprKind::Mul);
  EXPECT_EQ(product->args()[0], I(6));  // coefficient first
}

TEST(SymExpr, OrderIsBySymbolNameWithNumericSuffixesThenStructure) {
  EXPECT_LT(compare(s2, s10), 0);
  EXPECT_LT(compare(s0, mul(s0, s1)), 0);
  EXPECT_LT(compare(mul(s0, s1), s1), 0);
  EXPECT_LT(compare(I(100), s0), 0);
  EXPECT_EQ(compare(s0, s0), 0);
  EXPECT_EQ(to_string(add(add(s10, s2), add(mul(s1, s0), I(3)))), "s0*s1 + s2 + s10 + 3");
}

TEST(SymExpr, FloorDivRules) {
  EXPECT_EQ(floordiv(s0, I(1)), s0);
  EXPECT_EQ(floordiv(I(0), s0), I(0));
  EXPECT_EQ(floordiv(s0, s0), I(1));
  EXPECT_EQ(floordiv(mul(s0, I(4)), I(4)), s0);
  EXPECT_EQ(floordiv(mul(s0, s1), s1), s0);
  EXPECT_EQ(floordiv(mul(I(6), mul(s0, s1)), mul(I(3), s1)), mul(I(2), s0));
  // (a*k + b)//k == a + b//k, with the constant reduced into [0, k).
  ExprPtr e = floordiv(add(add(mul(I(4), s0), s1), I(5)), I(2));
  EXPECT_EQ(e, add(add(mul(I(2), s0), I(2)), floordiv(add(s1, I(1)), I(2))));
  EXPECT_EQ(floordiv(add(mul(I(2), s0), I(5)), I(2)), add(s0, I(2)));
  // A common factor of the numerator and the constant divisor cancels.
  EXPECT_EQ(floordiv(add(mul(I(2), s0), I(4)), I(6)), floordiv(add(s0, I(2)), I(3)));
  // Nested division by positive constants.
  EXPECT_EQ(floordiv(floordiv(s0, I(2)), I(3)), floordiv(s0, I(6)));
  // ... but not by symbols, which could be 0 or negative.
  ExprPtr nested = floordiv(floordiv(s0, s1), I(3));
  EXPECT_EQ(nested->kind(), ExprKind::FloorDiv);
  EXPECT_EQ(nested->args()[0], floordiv(s0, s1));
  EXPECT_THROW(floordiv(s0, I(0)), ValueError);
}

TEST(SymExpr, ModRules) {
  EXPECT_EQ(mod(s0, I(1)), I(0));
  EXPECT_EQ(mod(s0, s0), I(0));
  EXPECT_EQ(mod(mul(s0, I(4)), I(4)), I(0));
  EXPECT_EQ(mod(mul(s0, s1), s1), I(0));
  EXPECT_EQ(mod(add(add(mul(I(4), s0), s1), I(5)), I(2)), mod(add(s1, I(1)), I(2)));
  EXPECT_EQ(mod(add(mul(I(4), s0), I(6)), I(4)), I(2));
  EXPECT_EQ(mod(mod(s0, I(3)), I(3)), mod(s0, I(3)));
  EXPECT_THROW(mod(s0, I(0)), ValueError);
}

TEST(SymExpr, MinMaxRules) {
  EXPECT_EQ(min(I(3), I(5)), I(3));
  EXPECT_EQ(max(I(3), I(5)), I(5));
  EXPECT_EQ(min(s0, s0), s0);
  EXPECT_EQ(min(s0, add(s0, I(1))), s0);
  EXPECT_EQ(max(s0, add(s0, I(1))), add(s0, I(1)));
  EXPECT_EQ(min(s0, s1), min(s1, s0));
  EXPECT_EQ(min(I(3), min(I(5), s0)), min(I(3), s0));
  EXPECT_EQ(max(max(s0, I(2)), I(7)), max(s0, I(7)));
  EXPECT_EQ(min(s0, s1)->kind(), ExprKind::Min);
}

TEST(SymExpr, ComparisonsAreNormalizedWithTheConstantOnOneSide) {
  ExprPtr gt8 = lt(I(8), s0);  // s0 > 8
  ASSERT_EQ(gt8->kind(), ExprKind::Lt);
  EXPECT_EQ(gt8->args()[0], I(8));
  EXPECT_EQ(gt8->args()[1], s0);
  EXPECT_EQ(lt(sub(I(8), s0), I(0)), gt8);            // 8 - s0 < 0
  EXPECT_EQ(lt(add(s0, I(2)), I(10)), lt(s0, I(8)));  // constants move right
  EXPECT_EQ(lt(mul(I(2), s0), I(7)), lt(s0, I(4)));   // 2*s0 < 7 <=> s0 < 4
  EXPECT_EQ(le(mul(I(2), s0), I(7)), le(s0, I(3)));
  EXPECT_EQ(lt(I(7), mul(I(2), s0)), lt(I(3), s0));
  EXPECT_EQ(le(I(7), mul(I(2), s0)), le(I(4), s0));
  EXPECT_EQ(eq(s0, s1), eq(s1, s0));
  EXPECT_EQ(eq(mul(I(2), s0), I(3)), boolean(false));
  EXPECT_EQ(ne(mul(I(2), s0), I(3)), boolean(true));
  EXPECT_EQ(eq(mul(I(2), s0), I(6)), eq(s0, I(3)));
  EXPECT_EQ(lt(I(3), I(5)), boolean(true));
  EXPECT_EQ(le(I(5), I(3)), boolean(false));
  EXPECT_EQ(le(s0, s0), boolean(true));
  EXPECT_EQ(lt(s0, s0), boolean(false));
  EXPECT_EQ(eq(add(s0, I(1)), add(s0, I(1))), boolean(true));
}

TEST(SymExpr, NotIsPushedIntoComparisons) {
  EXPECT_EQ(logical_not(lt(s0, I(8))), le(I(8), s0));
  EXPECT_EQ(logical_not(le(s0, I(8))), lt(I(8), s0));
  EXPECT_EQ(logical_not(eq(s0, s1)), ne(s0, s1));
  EXPECT_EQ(logical_not(ne(s0, s1)), eq(s0, s1));
  ExprPtr a = lt(s0, I(8)), b = eq(s1, I(3));
  EXPECT_EQ(logical_not(logical_and(a, b)), logical_or(logical_not(a), logical_not(b)));
  EXPECT_EQ(logical_not(logical_not(a)), a);
}

TEST(SymExpr, BooleanConnectivesFoldAndSort) {
  ExprPtr a = lt(s0, I(8)), b = eq(s1, I(3)), c = ne(s2, I(0));
  EXPECT_EQ(logical_and(boolean(true), a), a);
  EXPECT_EQ(logical_and(boolean(false), a), boolean(false));
  EXPECT_EQ(logical_or(a, boolean(true)), boolean(true));
  EXPECT_EQ(logical_or(boolean(false), a), a);
  EXPECT_EQ(logical_and(a, a), a);
  EXPECT_EQ(logical_and(a, b), logical_and(b, a));
  EXPECT_EQ(logical_and(logical_and(a, b), c), logical_and(c, logical_and(b, a)));
  EXPECT_EQ(logical_and(a, logical_not(a)), boolean(false));
  EXPECT_EQ(logical_or(a, logical_not(a)), boolean(true));
  EXPECT_EQ(logical_and(a, b)->args().size(), 2u);
}

TEST(SymExpr, MixingIntegersAndConditionsIsAValueError) {
  ExprPtr c = lt(s0, I(8));
  EXPECT_THROW(add(s0, c), ValueError);
  EXPECT_THROW(lt(c, s0), ValueError);
  EXPECT_THROW(logical_and(s0, c), ValueError);
  try {
    mul(c, I(2));
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("s0 < 8"), std::string::npos) << e.what();
  }
}

TEST(SymExpr, InterningIsThreadSafe) {
  std::vector<std::vector<ExprPtr>> built(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&built, t] {
      for (int i = 0; i < 500; ++i) {
        ExprPtr x = symbol(fmt::format("t{}", i));
        built[t].push_back(floordiv(add(mul(x, I(3)), s0), I(i + 2)));
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 1; t < 4; ++t) EXPECT_EQ(built[t], built[0]);
}

TEST(SymExpr, FreeSymbolsInFirstOccurrenceOrder) {
  ExprPtr e = add(floordiv(s1, I(2)), mul(s0, s1));
  std::vector<ExprPtr> expected{s1, s0};
  // The sum's terms are ordered s0*s1 then s1//2.
  EXPECT_EQ(free_symbols(e), (std::vector<ExprPtr>{s0, s1}));
  EXPECT_EQ(free_symbols(I(3)), std::vector<ExprPtr>{});
  EXPECT_EQ(free_symbols(floordiv(s1, s0)), expected);
}

TEST(SymExpr, SubstituteResimplifies) {
  ExprPtr e = add(mul(I(2), s0), s1);
  EXPECT_EQ(substitute(e, [](ExprPtr s) { return s == s1 ? s0 : nullptr; }), mul(I(3), s0));
  EXPECT_EQ(substitute(lt(s0, s1), [](ExprPtr s) { return s == s0 ? I(4) : I(9); }), boolean(true));
  EXPECT_EQ(substitute(e, [](ExprPtr) -> ExprPtr { return nullptr; }), e);
}

TEST(SymExpr, EvaluateUsesPythonDivisionAndBooleansAsZeroOne) {
  auto values = [](ExprPtr s) -> std::optional<int64_t> {
    if (s == s0) return 7;
    if (s == s1) return -2;
    return std::nullopt;
  };
  EXPECT_EQ(evaluate(floordiv(s0, s1), values), -4);
  EXPECT_EQ(evaluate(mod(s0, s1), values), -1);
  EXPECT_EQ(evaluate(lt(s1, s0), values), 1);
  EXPECT_EQ(evaluate(logical_and(lt(s1, s0), eq(s0, I(8))), values), 0);
  EXPECT_EQ(evaluate(max(s0, mul(s1, s1)), values), 7);
  EXPECT_EQ(evaluate(add(s0, s2), values), std::nullopt);
  EXPECT_THROW(evaluate(floordiv(s0, sub(s1, I(-2))), values), ValueError);
}
