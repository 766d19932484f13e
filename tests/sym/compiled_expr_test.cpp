// CompiledExpr evaluates like sym::evaluate, without allocating.
#include <gtest/gtest.h>

#include "kiln/error.h"
#include "src/sym/compiled_expr.h"
#include "tests/sym/allocation_counter.h"
#include "tests/sym/random_expr.h"

using namespace kiln;
using namespace kiln::sym;

namespace {

std::vector<ExprPtr> random_symbols() {
  std::vector<ExprPtr> out;
  for (int i = 0; i < test_support::kRandomSymbols; ++i)
    out.push_back(symbol(fmt::format("s{}", i)));
  return out;
}

}  // namespace

TEST(CompiledExpr, EvaluatesConditionsOverASymbolArray) {
  ExprPtr s0 = symbol("s0"), s1 = symbol("s1");
  std::vector<ExprPtr> slots{s1, s0};  // s1 is read from index 0
  CompiledExpr guard(logical_and(le(integer(8), s0), lt(floordiv(s1, integer(2)), s0)), slots);
  int64_t ok[] = {5, 9}, too_small[] = {5, 4};
  EXPECT_EQ(guard.eval(ok), 1);
  EXPECT_EQ(guard.eval(too_small), 0);
  CompiledExpr size(add(mul(s0, s1), mod(s1, integer(-3))), slots);
  EXPECT_EQ(size.eval(ok), 45 - 1);
  EXPECT_EQ(CompiledExpr(boolean(true), {}).eval(nullptr), 1);
  EXPECT_EQ(CompiledExpr(integer(-4), {}).eval(nullptr), -4);
}

TEST(CompiledExpr, ErrorsNameTheProblem) {
  ExprPtr s0 = symbol("s0"), s1 = symbol("s1");
  std::vector<ExprPtr> slots{s0};
  EXPECT_THROW(CompiledExpr(add(s0, s1), slots), ValueError);
  CompiledExpr div(floordiv(integer(6), s0), slots);
  int64_t zero[] = {0};
  EXPECT_THROW(div.eval(zero), ValueError);
}

TEST(CompiledExpr, MatchesEvaluateOnRandomExpressionsWithoutAllocating) {
  std::mt19937 rng(7);
  std::vector<ExprPtr> symbols = random_symbols();
  for (int i = 0; i < 2000; ++i) {
    test_support::RandomExpr r =
        i % 2 ? test_support::random_bool_expr(rng, 3) : test_support::random_int_expr(rng, 4);
    CompiledExpr compiled(r.expr, symbols);
    int64_t values[test_support::kRandomSymbols];
    for (int64_t& v : values) v = std::uniform_int_distribution<int64_t>(0, 15)(rng);
    auto value = [&](ExprPtr s) -> std::optional<int64_t> { return values[s->name()[1] - '0']; };
    int64_t expected = *evaluate(r.expr, value);
    size_t before = test_support::allocations_on_this_thread();
    int64_t got = compiled.eval(values);
    ASSERT_EQ(test_support::allocations_on_this_thread(), before) << to_string(r.expr);
    ASSERT_EQ(got, expected) << to_string(r.expr);
  }
}

TEST(CompiledExpr, DeepExpressionsUseMoreStackThanTheInlineBuffer) {
  // Min(2*s0 + 1, Min(3*s0 + 2, ...)): each nested Min is a second operand, one slot deeper.
  ExprPtr s0 = symbol("s0");
  ExprPtr e = s0;
  for (int i = 100; i > 0; --i) e = min(add(mul(s0, integer(i + 1)), integer(i)), e);
  std::vector<ExprPtr> slots{s0};
  int64_t v[] = {3};
  EXPECT_EQ(CompiledExpr(e, slots).eval(v), *evaluate(e, [](ExprPtr) { return int64_t{3}; }));
}
