// Random expressions for property tests: each comes with a reference evaluator that computes its
// value straight from the generated tree (Python integer semantics), independent of the
// simplifier, so `evaluate(expr) == reference` checks that simplification preserves meaning.
#pragma once

#include <cstdint>
#include <functional>
#include <random>

#include "src/sym/expr.h"

namespace kiln::sym::test_support {

constexpr int kRandomSymbols = 4;  // s0..s3

struct RandomExpr {
  ExprPtr expr;
  std::function<int64_t(const int64_t* symbol_values)> reference;
};

// Symbol values must be >= 0 (sizes): divisors are positive constants or `s_i + c` with c >= 1.
RandomExpr random_int_expr(std::mt19937& rng, int depth);
RandomExpr random_bool_expr(std::mt19937& rng, int depth);
ExprPtr random_symbol(std::mt19937& rng, int* index = nullptr);

}  // namespace kiln::sym::test_support
