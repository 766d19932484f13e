// ShapeEnv: size symbols, guards, replacements, data-dependent conditions, runtime asserts.
#include <gtest/gtest.h>

#include <map>

#include "kiln/error.h"
#include "src/sym/shape_env.h"

using namespace kiln;
using namespace kiln::sym;

namespace {

ExprPtr I(int64_t v) { return integer(v); }

// Values for check_guards from a name -> value table.
auto values(std::map<std::string, int64_t> table) {
  return [table](ExprPtr s) -> std::optional<int64_t> {
    auto it = table.find(s->name());
    if (it == table.end()) return std::nullopt;
    return it->second;
  };
}

std::source_location here(std::source_location loc = std::source_location::current()) {
  return loc;
}

}  // namespace

TEST(ShapeEnv, SizesZeroAndOneAreSpecializedToConstants) {
  ShapeEnv env;
  EXPECT_TRUE(same(env.create_size_symbol(0, "x.size(0)"), SymInt(0)));
  EXPECT_TRUE(same(env.create_size_symbol(1, "x.size(1)"), SymInt(1)));
  SymInt s = env.create_size_symbol(5, "x.size(2)");
  ASSERT_TRUE(s.is_symbolic());
  EXPECT_EQ(s.expr(), symbol("s0"));
  ASSERT_EQ(env.symbols().size(), 1u);
  const SymbolInfo* info = env.info(s.expr());
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->hint, 5);
  EXPECT_EQ(info->range, ValueRange::at_least(2));
  EXPECT_EQ(info->source, "x.size(2)");
  EXPECT_FALSE(info->unbacked);
}

TEST(ShapeEnv, WithoutZeroOneSpecializationSmallSizesGetSymbols) {
  ShapeEnv env({.specialize_zero_one = false, .duck_shape = true});
  SymInt s = env.create_size_symbol(1, "x.size(0)");
  ASSERT_TRUE(s.is_symbolic());
  EXPECT_EQ(env.info(s.expr())->range, ValueRange::at_least(0));
}

TEST(ShapeEnv, StaticSizesAreConstants) {
  ShapeEnv env;
  EXPECT_TRUE(same(env.create_size_symbol(7, "x.size(0)", /*dynamic=*/false), SymInt(7)));
  EXPECT_TRUE(env.symbols().empty());
  EXPECT_THROW(env.create_size_symbol(-1, "x.size(0)"), ValueError);
}

TEST(ShapeEnv, DuckSizingSharesASymbolBetweenEqualSizes) {
  ShapeEnv env;
  SymInt a = env.create_size_symbol(8, "x.size(0)");
  SymInt b = env.create_size_symbol(8, "x.size(1)");
  SymInt c = env.create_size_symbol(9, "y.size(0)");
  EXPECT_TRUE(same(a, b));
  EXPECT_FALSE(same(a, c));
  EXPECT_EQ(c.expr(), symbol("s1"));

  ShapeEnv no_duck({.specialize_zero_one = true, .duck_shape = false});
  SymInt x = no_duck.create_size_symbol(8, "x.size(0)");
  SymInt y = no_duck.create_size_symbol(8, "x.size(1)");
  EXPECT_FALSE(same(x, y));
}

TEST(ShapeEnv, GuardsRecordTheConditionAsItHeldWithItsOrigin) {
  ShapeEnv env;
  ExprPtr s0 = env.create_size_symbol(4, "x.size(0)").expr();
  auto loc = here();
  EXPECT_FALSE(env.guard_bool(lt(I(8), s0), loc));  // s0 > 8 is false for s0 = 4
  ASSERT_EQ(env.guards().size(), 1u);
  EXPECT_EQ(env.guards()[0].condition, le(s0, I(8)));
  EXPECT_EQ(env.guards()[0].origin, fmt::format("shape_env_test.cpp:{}", loc.line()));
  EXPECT_TRUE(env.guard_bool(lt(s0, I(5)), loc));
  EXPECT_EQ(env.guards()[1].condition, lt(s0, I(5)));
}

TEST(ShapeEnv, GuardsAreDeduplicated) {
  ShapeEnv env;
  ExprPtr s0 = env.create_size_symbol(4, "x.size(0)").expr();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(env.guard_bool(lt(s0, I(5)), here()));
  EXPECT_TRUE(env.guard_bool(logical_not(le(I(5), s0)), here()));  // the same condition
  EXPECT_EQ(env.guards().size(), 1u);
}

TEST(ShapeEnv, StaticallyKnownConditionsAreNotGuarded) {
  ShapeEnv env;
  ExprPtr s0 = env.create_size_symbol(4, "x.size(0)").expr();
  EXPECT_EQ(env.statically_known(le(I(0), s0)), true);
  EXPECT_EQ(env.statically_known(eq(s0, I(1))), false);  // s0 >= 2 under 0/1 specialization
  EXPECT_EQ(env.statically_known(lt(I(8), s0)), std::nullopt);
  EXPECT_TRUE(env.guard_bool(le(I(0), s0), here()));
  EXPECT_TRUE(env.guard_bool(ne(s0, I(1)), here()));
  EXPECT_TRUE(env.guard_bool(le(I(0), floordiv(s0, I(2))), here()));
  EXPECT_TRUE(env.guards().empty());
  EXPECT_EQ(env.simplify(lt(s0, I(0))), boolean(false));
}

TEST(ShapeEnv, SimplifyUsesValueRanges) {
  ShapeEnv env;
  ExprPtr s0 = env.create_size_symbol(5, "x.size(0)").expr();
  EXPECT_EQ(env.simplify(max(s0, I(1))), s0);
  EXPECT_EQ(env.simplify(min(s0, I(2))), I(2));
  EXPECT_EQ(env.simplify(add(max(s0, I(1)), s0)), mul(I(2), s0));
  ExprPtr u0 = env.create_unbacked_symbol("item()", ValueRange::between(0, 7)).expr();
  EXPECT_EQ(env.simplify(mod(u0, I(8))), u0);
  EXPECT_EQ(env.simplify(floordiv(u0, I(8))), I(0));
  EXPECT_EQ(env.simplify(logical_and(le(I(0), u0), lt(I(3), s0))), lt(I(3), s0));
  EXPECT_EQ(env.simplify(max(s0, u0)), max(s0, u0));  // undecided
}

TEST(ShapeEnv, EqualityGuardsReplaceTheNewerSymbol) {
  ShapeEnv env({.specialize_zero_one = true, .duck_shape = false});
  ExprPtr s0 = env.create_size_symbol(8, "x.size(0)").expr();
  ExprPtr s1 = env.create_size_symbol(8, "y.size(0)").expr();
  ExprPtr s2 = env.create_size_symbol(3, "z.size(0)").expr();
  EXPECT_TRUE(env.guard_bool(eq(s1, s0), here()));
  EXPECT_EQ(env.simplify(add(s0, s1)), mul(I(2), s0));
  EXPECT_EQ(env.simplify(sub(s1, s0)), I(0));
  EXPECT_EQ(env.statically_known(eq(s0, s1)), true);   // no second guard needed
  EXPECT_FALSE(env.guard_bool(ne(s2, I(3)), here()));  // s2 == 3 held: s2 becomes 3
  EXPECT_EQ(env.simplify(mul(s2, s0)), mul(I(3), s0));
  EXPECT_EQ(env.guard_int(add(s2, s1), here()), 11);
  EXPECT_EQ(env.guards().size(), 3u);  // s0 == s1, s2 == 3, s0 == 8
  EXPECT_EQ(env.guards()[2].condition, eq(s0, I(8)));
  EXPECT_EQ(env.simplify(s1), I(8));  // chains resolve
}

TEST(ShapeEnv, GuardIntRecordsEqualityAndReturnsTheHint) {
  ShapeEnv env;
  ExprPtr s0 = env.create_size_symbol(6, "x.size(0)").expr();
  EXPECT_EQ(env.guard_int(floordiv(s0, I(4)), here()), 1);
  ASSERT_EQ(env.guards().size(), 1u);
  EXPECT_EQ(env.guards()[0].condition, eq(floordiv(s0, I(4)), I(1)));
  EXPECT_EQ(env.hint(mul(s0, I(3))), 18);
}

TEST(ShapeEnv, UnbackedConditionsThrowDataDependentError) {
  ShapeEnv env;
  ExprPtr u0 = env.create_unbacked_symbol("nonzero output size", ValueRange::at_least(0)).expr();
  EXPECT_EQ(u0, symbol("u0"));
  EXPECT_EQ(env.hint(u0), std::nullopt);
  EXPECT_TRUE(env.guard_bool(le(I(0), u0), here()));  // decided by its range, no error
  auto loc = here();
  try {
    env.guard_bool(lt(I(4), u0), loc);
    FAIL() << "expected DataDependentError";
  } catch (const DataDependentError& e) {
    EXPECT_EQ(e.condition, lt(I(4), u0));
    EXPECT_EQ(e.origin, fmt::format("shape_env_test.cpp:{}", loc.line()));
    std::string msg = e.what();
    EXPECT_NE(msg.find("u0 > 4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("nonzero output size"), std::string::npos) << msg;
    EXPECT_NE(msg.find(e.origin), std::string::npos) << msg;
  }
  EXPECT_THROW(env.guard_int(add(u0, I(1)), here()), DataDependentError);
  EXPECT_TRUE(env.guards().empty());
}

TEST(ShapeEnv, DataDependentHandlerAnswersInsteadOfThrowing) {
  ShapeEnv env;
  ExprPtr u0 = env.create_unbacked_symbol("item()").expr();
  std::vector<ExprPtr> asked;
  env.set_data_dependent_handler([&](ExprPtr c, std::source_location) {
    asked.push_back(c);
    return true;
  });
  EXPECT_TRUE(env.guard_bool(lt(u0, I(3)), here()));
  EXPECT_EQ(asked, std::vector<ExprPtr>{lt(u0, I(3))});
}

TEST(ShapeEnv, RuntimeAssertsNarrowUnbackedRanges) {
  ShapeEnv env;
  ExprPtr u0 = env.create_unbacked_symbol("nonzero output size").expr();
  env.add_runtime_assert(le(I(1), u0), here());
  env.add_runtime_assert(lt(u0, I(10)), here());
  env.add_runtime_assert(lt(u0, I(10)), here());  // deduplicated
  EXPECT_EQ(env.info(u0)->range, ValueRange::between(1, 9));
  EXPECT_EQ(env.runtime_asserts().size(), 2u);
  EXPECT_TRUE(env.guard_bool(ne(u0, I(0)), here()));  // follows from u0 >= 1
  EXPECT_FALSE(env.guard_bool(lt(I(20), u0), here()));
  EXPECT_TRUE(env.guards().empty());
  env.add_runtime_assert(le(I(0), u0), here());  // already known: nothing recorded
  EXPECT_EQ(env.runtime_asserts().size(), 2u);
  EXPECT_THROW(env.add_runtime_assert(lt(I(50), u0), here()), ValueError);  // statically false

  ExprPtr u1 = env.create_unbacked_symbol("item()").expr();
  env.add_runtime_assert(logical_and(le(I(2), u1), le(u1, I(4))), here());
  EXPECT_EQ(env.info(u1)->range, ValueRange::between(2, 4));
}

TEST(ShapeEnv, RuntimeAssertOnBackedSymbolsChecksTheHint) {
  ShapeEnv env;
  ExprPtr s0 = env.create_size_symbol(4, "x.size(0)").expr();
  env.add_runtime_assert(lt(s0, I(10)), here());
  EXPECT_EQ(env.runtime_asserts().size(), 1u);
  try {
    env.add_runtime_assert(lt(I(10), s0), here());
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("s0 = 4"), std::string::npos) << e.what();
  }
}

TEST(ShapeEnv, CheckGuardsExplainsTheFirstFailure) {
  ShapeEnv env;
  ExprPtr s0 = env.create_size_symbol(10, "x.size(0)").expr();
  ExprPtr s1 = env.create_size_symbol(3, "x.size(1)").expr();
  auto loc = here();
  EXPECT_TRUE(env.guard_bool(le(I(8), s0), loc));
  EXPECT_TRUE(env.guard_bool(lt(s1, s0), loc));
  std::string failed;
  EXPECT_TRUE(env.check_guards(values({{"s0", 10}, {"s1", 3}}), &failed));
  EXPECT_TRUE(env.check_guards(values({{"s0", 9}, {"s1", 2}}), &failed));
  EXPECT_FALSE(env.check_guards(values({{"s0", 4}, {"s1", 3}}), &failed));
  uint32_t line = loc.line();
  EXPECT_EQ(failed, fmt::format("s0 >= 8 (from shape_env_test.cpp:{}) is false: s0 = 4", line));
  EXPECT_FALSE(env.check_guards(values({{"s0", 9}, {"s1", 12}}), &failed));
  EXPECT_EQ(failed,
            fmt::format("s0 > s1 (from shape_env_test.cpp:{}) is false: s0 = 9, s1 = 12", line));
  // The 0/1 specialization of a symbol is checked too.
  EXPECT_FALSE(env.check_guards(values({{"s0", 9}, {"s1", 1}}), &failed));
  EXPECT_EQ(failed, "s1 >= 2 (from x.size(1)) is false: s1 = 1");
  EXPECT_FALSE(env.check_guards(values({{"s0", 9}}), &failed));
  EXPECT_NE(failed.find("cannot be checked"), std::string::npos) << failed;
  // all_guards() is the conjunction of the same conditions.
  EXPECT_EQ(env.all_guards()->args().size(), 4u);  // s0 >= 2, s1 >= 2, s0 >= 8, s0 > s1
  for (auto [v0, v1] : {std::pair{10, 3}, {9, 2}, {4, 3}, {9, 12}, {9, 1}}) {
    auto value = values({{"s0", v0}, {"s1", v1}});
    EXPECT_EQ(evaluate(env.all_guards(), value) == 1, env.check_guards(value)) << v0 << ", " << v1;
  }
}

TEST(ShapeEnv, ScopeSetsTheCurrentEnvironmentPerThread) {
  EXPECT_EQ(ShapeEnv::current(), nullptr);
  ShapeEnv outer, inner;
  {
    ShapeEnv::Scope a(&outer);
    EXPECT_EQ(ShapeEnv::current(), &outer);
    {
      ShapeEnv::Scope b(&inner);
      EXPECT_EQ(ShapeEnv::current(), &inner);
    }
    EXPECT_EQ(ShapeEnv::current(), &outer);
  }
  EXPECT_EQ(ShapeEnv::current(), nullptr);
}

// Note [A frozen ShapeEnv]: a copy answers what the trace decided or guarded, and raises for a
// condition that would need a new guard; the original is untouched.
TEST(ShapeEnv, AFrozenCopyAnswersWhatTheTraceDecidedAndRaisesForANewGuard) {
  ShapeEnv env;
  SymInt s = env.create_size_symbol(5, "x.size(0)");
  SymInt t = env.create_size_symbol(7, "y.size(0)");
  EXPECT_TRUE(env.guard_bool(lt(I(3), s.expr()), here()));
  const size_t guards = env.guards().size();
  std::shared_ptr<ShapeEnv> frozen = env.frozen_copy("the specialized backward");
  EXPECT_TRUE(frozen->frozen());
  EXPECT_FALSE(env.frozen());
  EXPECT_FALSE(frozen->guard_bool(eq(s.expr(), I(1)), here()));  // value range s >= 2
  EXPECT_TRUE(frozen->guard_bool(lt(I(3), s.expr()), here()));   // guarded by the trace
  try {
    frozen->guard_bool(lt(s.expr(), t.expr()), here());
    FAIL() << "a new guard on a frozen ShapeEnv did not raise";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("the specialized backward"), std::string::npos) << message;
    EXPECT_NE(message.find("s0 < s1"), std::string::npos) << message;
  }
  EXPECT_EQ(frozen->guards().size(), guards);
  EXPECT_EQ(env.guards().size(), guards);
  EXPECT_TRUE(env.guard_bool(lt(s.expr(), t.expr()), here()));  // the original still guards
}
