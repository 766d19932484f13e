#include <string>

#include "kiln/error.h"
#include "kiln/sym_int.h"
#include "tests/sym/random_expr.h"

namespace kiln::sym::test_support {
namespace {

int pick(std::mt19937& rng, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

RandomExpr constant(int64_t v) {
  return {integer(v), [v](const int64_t*) { return v; }};
}

RandomExpr random_divisor(std::mt19937& rng) {
  if (pick(rng, 0, 1) == 0) return constant(pick(rng, 1, 6));
  int i = 0;
  ExprPtr s = random_symbol(rng, &i);
  int64_t c = pick(rng, 1, 3);
  return {add(s, integer(c)), [i, c](const int64_t* v) { return v[i] + c; }};
}

}  // namespace

ExprPtr random_symbol(std::mt19937& rng, int* index) {
  int i = pick(rng, 0, kRandomSymbols - 1);
  if (index) *index = i;
  return symbol(fmt::format("s{}", i));
}

RandomExpr random_int_expr(std::mt19937& rng, int depth) {
  if (depth == 0 || pick(rng, 0, 4) == 0) {
    if (pick(rng, 0, 1) == 0) return constant(pick(rng, -5, 10));
    int i = 0;
    ExprPtr s = random_symbol(rng, &i);
    return {s, [i](const int64_t* v) { return v[i]; }};
  }
  RandomExpr a = random_int_expr(rng, depth - 1);
  auto fa = a.reference;
  switch (pick(rng, 0, 7)) {
    case 0: {
      RandomExpr b = random_int_expr(rng, depth - 1);
      auto fb = b.reference;
      return {add(a.expr, b.expr), [fa, fb](const int64_t* v) { return fa(v) + fb(v); }};
    }
    case 1: {
      RandomExpr b = random_int_expr(rng, depth - 1);
      auto fb = b.reference;
      return {sub(a.expr, b.expr), [fa, fb](const int64_t* v) { return fa(v) - fb(v); }};
    }
    case 2: {
      RandomExpr b = random_int_expr(rng, depth - 1);
      auto fb = b.reference;
      return {mul(a.expr, b.expr), [fa, fb](const int64_t* v) { return fa(v) * fb(v); }};
    }
    case 3: {
      RandomExpr d = random_divisor(rng);
      auto fd = d.reference;
      return {floordiv(a.expr, d.expr),
              [fa, fd](const int64_t* v) { return sym_detail::floordiv_int(fa(v), fd(v)); }};
    }
    case 4: {
      RandomExpr d = random_divisor(rng);
      auto fd = d.reference;
      return {mod(a.expr, d.expr),
              [fa, fd](const int64_t* v) { return sym_detail::mod_int(fa(v), fd(v)); }};
    }
    case 5: {
      RandomExpr b = random_int_expr(rng, depth - 1);
      auto fb = b.reference;
      return {min(a.expr, b.expr), [fa, fb](const int64_t* v) { return std::min(fa(v), fb(v)); }};
    }
    case 6: {
      RandomExpr b = random_int_expr(rng, depth - 1);
      auto fb = b.reference;
      return {max(a.expr, b.expr), [fa, fb](const int64_t* v) { return std::max(fa(v), fb(v)); }};
    }
    default: {
      int64_t k = pick(rng, -3, 3);
      return {mul(integer(k), a.expr), [fa, k](const int64_t* v) { return k * fa(v); }};
    }
  }
}

RandomExpr random_bool_expr(std::mt19937& rng, int depth) {
  int choice = depth == 0 ? 0 : pick(rng, 0, 4);
  if (choice <= 1) {
    RandomExpr a = random_int_expr(rng, std::max(depth - 1, 1));
    RandomExpr b = random_int_expr(rng, std::max(depth - 1, 1));
    auto fa = a.reference, fb = b.reference;
    switch (pick(rng, 0, 5)) {
      case 0:
        return {eq(a.expr, b.expr), [=](const int64_t* v) -> int64_t { return fa(v) == fb(v); }};
      case 1:
        return {ne(a.expr, b.expr), [=](const int64_t* v) -> int64_t { return fa(v) != fb(v); }};
      case 2:
        return {lt(a.expr, b.expr), [=](const int64_t* v) -> int64_t { return fa(v) < fb(v); }};
      case 3:
        return {le(a.expr, b.expr), [=](const int64_t* v) -> int64_t { return fa(v) <= fb(v); }};
      case 4:
        return {lt(b.expr, a.expr), [=](const int64_t* v) -> int64_t { return fa(v) > fb(v); }};
      default:
        return {le(b.expr, a.expr), [=](const int64_t* v) -> int64_t { return fa(v) >= fb(v); }};
    }
  }
  RandomExpr a = random_bool_expr(rng, depth - 1);
  auto fa = a.reference;
  if (choice == 2) {
    return {logical_not(a.expr), [fa](const int64_t* v) -> int64_t { return fa(v) == 0; }};
  }
  RandomExpr b = random_bool_expr(rng, depth - 1);
  auto fb = b.reference;
  if (choice == 3) {
    return {logical_and(a.expr, b.expr),
            [=](const int64_t* v) -> int64_t { return fa(v) != 0 && fb(v) != 0; }};
  }
  return {logical_or(a.expr, b.expr),
          [=](const int64_t* v) -> int64_t { return fa(v) != 0 || fb(v) != 0; }};
}

}  // namespace kiln::sym::test_support
