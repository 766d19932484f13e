// The simplifying factories of sym::Expr: every expression is built here, in canonical form.
//
// Note [Canonical form]
// Factories return the canonical form of their result, so structurally different spellings of
// one expression are the same interned pointer (Note [Interned expressions] in expr.h):
// - Integer arithmetic on constants is folded (overflow is a ValueError, never a wrap).
// - A sum is a sum of products: Add(terms..., constant) with like terms merged, each term
//   `coefficient * monomial`, terms ordered by sym::compare of their monomials (so by symbol name,
//   then structure), the constant last and absent when 0. Add never nests.
// - A product is Mul(coefficient, factors...) with the coefficient first and absent when 1, the
//   factors sorted; a product of sums is distributed, so Mul never holds an Add.
// - FloorDiv/Mod by a positive constant k move terms divisible by k out (`(4*s0 + s1 + 5)//2` is
//   `2*s0 + 2 + (s1 + 1)//2`, `(4*s0 + s1 + 5) % 2` is `(s1 + 1) % 2`) and divide out a common
//   factor of all coefficients and k; `(x//a)//b` is `x//(a*b)` for constants a, b > 0 (not for
//   symbols, which could be 0). A symbolic divisor moves out the terms it divides exactly.
// - Min/Max of equal arguments or of arguments differing by a constant are decided; two constants
//   nested in one Min/Max are merged; arguments are sorted.
// - Comparisons are Eq, Ne, Lt or Le with one side an integer and the other a sum whose first term
//   has a positive coefficient and whose coefficients have no common factor: `s0 > 8` is
//   Lt(8, s0), `2*s0 < 7` is Lt(s0, 4), `s0 == s1` is Eq(s0 - s1, 0). A comparison of constants
//   is decided. Lt and Le are not merged (`s0 < 9` and `s0 <= 8` stay distinct nodes).
// - Not is pushed into comparisons (Not(Lt(a, b)) is Le(b, a)) and through And/Or (De Morgan), so
//   canonical expressions contain no Not. And/Or are flattened, sorted, deduplicated and fold
//   True/False; `c && !c` is False.
// Facts that need value ranges (a size is >= 0) are not used here; ShapeEnv adds them.
#include <algorithm>
#include <numeric>

#include "kiln/error.h"
#include "kiln/sym_int.h"
#include "src/sym/intern.h"

namespace kiln::sym {
namespace {

using detail::intern;

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  KILN_CHECK(!__builtin_add_overflow(a, b, &r), ValueError,
             "sym: integer overflow in a symbolic expression ({} + {})", a, b);
  return r;
}
int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  KILN_CHECK(!__builtin_mul_overflow(a, b, &r), ValueError,
             "sym: integer overflow in a symbolic expression ({} * {})", a, b);
  return r;
}
int64_t checked_neg(int64_t a) { return checked_mul(a, -1); }

void require_integer(const char* op, ExprPtr e) {
  KILN_CHECK(!e->is_bool(), ValueError, "sym::{}: `{}` is a condition, expected an integer", op,
             to_string(e));
}
void require_bool(const char* op, ExprPtr e) {
  KILN_CHECK(e->is_bool(), ValueError, "sym::{}: `{}` is an integer, expected a condition", op,
             to_string(e));
}

// A term of a sum: coefficient * monomial; a null monomial is the constant term.
struct Term {
  int64_t coeff;
  ExprPtr monomial;
};

Term split_term(ExprPtr e) {
  if (e->is_integer()) return {e->value(), nullptr};
  if (e->kind() == ExprKind::Mul && e->args()[0]->is_integer()) {
    auto rest = e->args().subspan(1);
    ExprPtr monomial =
        rest.size() == 1 ? rest[0] : intern(ExprKind::Mul, 0, {}, {rest.begin(), rest.end()});
    return {e->args()[0]->value(), monomial};
  }
  return {1, e};
}

std::vector<Term> terms_of(ExprPtr e) {
  std::vector<Term> out;
  if (e->kind() != ExprKind::Add) return {split_term(e)};
  for (ExprPtr a : e->args()) out.push_back(split_term(a));
  return out;
}

std::vector<ExprPtr> factors_of(ExprPtr monomial) {
  if (!monomial) return {};
  if (monomial->kind() == ExprKind::Mul) return {monomial->args().begin(), monomial->args().end()};
  return {monomial};
}

ExprPtr make_product(int64_t coeff, std::vector<ExprPtr> factors) {
  if (coeff == 0 || factors.empty()) return integer(coeff);
  std::sort(factors.begin(), factors.end(), [](ExprPtr a, ExprPtr b) { return compare(a, b) < 0; });
  if (coeff == 1 && factors.size() == 1) return factors[0];
  if (coeff != 1) factors.insert(factors.begin(), integer(coeff));
  return intern(ExprKind::Mul, 0, {}, std::move(factors));
}

ExprPtr make_term(Term t) { return make_product(t.coeff, factors_of(t.monomial)); }

// The canonical sum of `terms`: like monomials merged, sorted, the constant last.
ExprPtr make_sum(std::vector<Term> terms) {
  int64_t constant = 0;
  std::vector<Term> symbolic;
  for (const Term& t : terms) {
    if (t.monomial) {
      symbolic.push_back(t);
    } else {
      constant = checked_add(constant, t.coeff);
    }
  }
  std::sort(symbolic.begin(), symbolic.end(),
            [](const Term& a, const Term& b) { return compare(a.monomial, b.monomial) < 0; });
  std::vector<ExprPtr> args;
  for (size_t i = 0; i < symbolic.size();) {
    Term t = symbolic[i++];
    while (i < symbolic.size() && symbolic[i].monomial == t.monomial) {
      t.coeff = checked_add(t.coeff, symbolic[i++].coeff);
    }
    if (t.coeff != 0) args.push_back(make_term(t));
  }
  if (constant != 0 || args.empty()) args.push_back(integer(constant));
  if (args.size() == 1) return args[0];
  return intern(ExprKind::Add, 0, {}, std::move(args));
}

// t / d when the division is exact (6*s0*s1 / (3*s1) is 2*s0), else nullopt.
std::optional<Term> divide_term(const Term& t, const Term& d) {
  if (d.coeff == 0 || (d.coeff == -1 && t.coeff == INT64_MIN) || t.coeff % d.coeff != 0) {
    return std::nullopt;
  }
  std::vector<ExprPtr> rest = factors_of(t.monomial);
  for (ExprPtr f : factors_of(d.monomial)) {
    auto it = std::find(rest.begin(), rest.end(), f);
    if (it == rest.end()) return std::nullopt;
    rest.erase(it);
  }
  ExprPtr monomial = rest.empty() ? nullptr : make_product(1, std::move(rest));
  return Term{t.coeff / d.coeff, monomial};
}

std::optional<int64_t> positive_constant(ExprPtr e) {
  if (e->is_integer() && e->value() > 0) return e->value();
  return std::nullopt;
}

ExprPtr min_max(ExprKind kind, ExprPtr a, ExprPtr b) {
  bool is_min = kind == ExprKind::Min;
  require_integer(is_min ? "min" : "max", a);
  require_integer(is_min ? "min" : "max", b);
  if (a == b) return a;
  ExprPtr difference = sub(a, b);
  if (difference->is_integer()) return (difference->value() < 0) == is_min ? a : b;
  if (b->is_integer()) std::swap(a, b);
  if (a->is_integer() && b->kind() == kind) {  // Min(3, Min(5, x)) is Min(3, x)
    for (int i = 0; i < 2; ++i) {
      if (b->args()[i]->is_integer()) {
        return min_max(kind, min_max(kind, a, b->args()[i]), b->args()[1 - i]);
      }
    }
  }
  if (compare(a, b) > 0) std::swap(a, b);
  return intern(kind, 0, {}, {a, b});
}

ExprPtr comparison(ExprKind kind, ExprPtr a, ExprPtr b) {
  const char* names[] = {"eq", "ne", "lt", "le"};
  const char* name = names[static_cast<int>(kind) - static_cast<int>(ExprKind::Eq)];
  require_integer(name, a);
  require_integer(name, b);
  // a OP b  <=>  0 OP (b - a) = P + c  <=>  -c OP P
  std::vector<Term> p;
  int64_t c = 0;
  for (const Term& t : terms_of(sub(b, a))) {
    if (t.monomial) {
      p.push_back(t);
    } else {
      c = t.coeff;
    }
  }
  if (p.empty()) {
    switch (kind) {
      case ExprKind::Eq:
        return boolean(c == 0);
      case ExprKind::Ne:
        return boolean(c != 0);
      case ExprKind::Lt:
        return boolean(0 < c);
      default:
        return boolean(0 <= c);
    }
  }
  int64_t k = checked_neg(c);
  // Make the first coefficient positive: k OP -Q  <=>  Q OP' -k (the constant moves right).
  bool constant_right = p[0].coeff < 0;
  if (constant_right) {
    for (Term& t : p) t.coeff = checked_neg(t.coeff);
    k = checked_neg(k);
  }
  int64_t g = 0;
  for (const Term& t : p) g = std::gcd(g, t.coeff);
  for (Term& t : p) t.coeff /= g;
  ExprPtr q = make_sum(p);
  auto floor_div = [&](int64_t x) { return sym_detail::floordiv_int(x, g); };
  auto ceil_div = [&](int64_t x) { return -sym_detail::floordiv_int(-x, g); };
  switch (kind) {
    case ExprKind::Eq:
    case ExprKind::Ne:
      if (k % g != 0) return boolean(kind == ExprKind::Ne);
      return intern(kind, 0, {}, {q, integer(k / g)});
    case ExprKind::Lt:  // g*q < k  <=>  q < ceil(k/g);  k < g*q  <=>  floor(k/g) < q
      if (constant_right) return intern(kind, 0, {}, {q, integer(ceil_div(k))});
      return intern(kind, 0, {}, {integer(floor_div(k)), q});
    default:  // g*q <= k  <=>  q <= floor(k/g);  k <= g*q  <=>  ceil(k/g) <= q
      if (constant_right) return intern(kind, 0, {}, {q, integer(floor_div(k))});
      return intern(kind, 0, {}, {integer(ceil_div(k)), q});
  }
}

ExprPtr junction(ExprKind kind, ExprPtr a, ExprPtr b) {
  bool is_and = kind == ExprKind::And;
  require_bool(is_and ? "logical_and" : "logical_or", a);
  require_bool(is_and ? "logical_and" : "logical_or", b);
  ExprPtr identity = boolean(is_and), absorbing = boolean(!is_and);
  std::vector<ExprPtr> args;
  for (ExprPtr x : {a, b}) {
    if (x->kind() == kind) {
      args.insert(args.end(), x->args().begin(), x->args().end());
    } else if (x == absorbing) {
      return absorbing;
    } else if (x != identity) {
      args.push_back(x);
    }
  }
  std::sort(args.begin(), args.end(), [](ExprPtr x, ExprPtr y) { return compare(x, y) < 0; });
  args.erase(std::unique(args.begin(), args.end()), args.end());
  for (ExprPtr x : args) {
    bool is_comparison = x->kind() >= ExprKind::Eq && x->kind() <= ExprKind::Le;
    if (is_comparison && std::find(args.begin(), args.end(), logical_not(x)) != args.end()) {
      return absorbing;  // c && !c, c || !c
    }
  }
  if (args.empty()) return identity;
  if (args.size() == 1) return args[0];
  return intern(kind, 0, {}, std::move(args));
}

}  // namespace

ExprPtr add(ExprPtr a, ExprPtr b) {
  require_integer("add", a);
  require_integer("add", b);
  if (a->is_integer() && b->is_integer()) return integer(checked_add(a->value(), b->value()));
  if (a == integer(0)) return b;
  if (b == integer(0)) return a;
  std::vector<Term> terms = terms_of(a);
  for (const Term& t : terms_of(b)) terms.push_back(t);
  return make_sum(std::move(terms));
}

ExprPtr sub(ExprPtr a, ExprPtr b) { return add(a, mul(integer(-1), b)); }

ExprPtr mul(ExprPtr a, ExprPtr b) {
  require_integer("mul", a);
  require_integer("mul", b);
  if (a->is_integer() && b->is_integer()) return integer(checked_mul(a->value(), b->value()));
  if (a->kind() == ExprKind::Add || b->kind() == ExprKind::Add) {  // distribute
    std::vector<Term> terms;
    for (const Term& x : terms_of(a)) {
      for (const Term& y : terms_of(b))
        terms.push_back(split_term(mul(make_term(x), make_term(y))));
    }
    return make_sum(std::move(terms));
  }
  Term x = split_term(a), y = split_term(b);
  std::vector<ExprPtr> factors = factors_of(x.monomial);
  for (ExprPtr f : factors_of(y.monomial)) factors.push_back(f);
  return make_product(checked_mul(x.coeff, y.coeff), std::move(factors));
}

ExprPtr floordiv(ExprPtr a, ExprPtr b) {
  require_integer("floordiv", a);
  require_integer("floordiv", b);
  KILN_CHECK(b != integer(0), ValueError, "sym::floordiv: division by zero in ({})//0",
             to_string(a));
  if (a->is_integer() && b->is_integer()) {
    KILN_CHECK(a->value() != INT64_MIN || b->value() != -1, ValueError,
               "sym: integer overflow in a symbolic expression ({}//-1)", a->value());
    return integer(sym_detail::floordiv_int(a->value(), b->value()));
  }
  if (b == integer(1) || a == integer(0)) return a;
  if (a == b) return integer(1);
  std::optional<int64_t> k = positive_constant(b);
  if (k && a->kind() == ExprKind::FloorDiv) {
    if (auto inner = positive_constant(a->args()[1])) {
      return floordiv(a->args()[0], integer(checked_mul(*inner, *k)));
    }
  }
  Term divisor = split_term(b);
  std::vector<Term> quotient, rest;
  for (const Term& t : terms_of(a)) {
    if (!t.monomial && k) {  // c = k*(c//k) + c%k
      quotient.push_back({sym_detail::floordiv_int(t.coeff, *k), nullptr});
      rest.push_back({sym_detail::mod_int(t.coeff, *k), nullptr});
    } else if (auto q = divide_term(t, divisor)) {
      quotient.push_back(*q);
    } else {
      rest.push_back(t);
    }
  }
  if (k) {  // (g*x)//(g*m) is x//m
    int64_t g = *k;
    for (const Term& t : rest) g = std::gcd(g, t.coeff);
    if (g > 1) {
      for (Term& t : rest) t.coeff /= g;
      b = integer(*k / g);
    }
  }
  ExprPtr remainder = make_sum(std::move(rest)), whole = make_sum(std::move(quotient));
  if (remainder == a && whole == integer(0)) return intern(ExprKind::FloorDiv, 0, {}, {a, b});
  return add(whole, floordiv(remainder, b));
}

ExprPtr mod(ExprPtr a, ExprPtr b) {
  require_integer("mod", a);
  require_integer("mod", b);
  KILN_CHECK(b != integer(0), ValueError, "sym::mod: division by zero in ({}) % 0", to_string(a));
  if (b == integer(1) || b == integer(-1) || a == integer(0) || a == b) return integer(0);
  if (a->is_integer() && b->is_integer()) {
    return integer(sym_detail::mod_int(a->value(), b->value()));
  }
  if (a->kind() == ExprKind::Mod && a->args()[1] == b) return a;
  std::optional<int64_t> k = positive_constant(b);
  Term divisor = split_term(b);
  std::vector<Term> rest;
  for (const Term& t : terms_of(a)) {
    if (!t.monomial && k) {
      rest.push_back({sym_detail::mod_int(t.coeff, *k), nullptr});
    } else if (!divide_term(t, divisor)) {
      rest.push_back(t);
    }
  }
  ExprPtr remainder = make_sum(std::move(rest));
  if (remainder != a) return mod(remainder, b);
  return intern(ExprKind::Mod, 0, {}, {a, b});
}

ExprPtr min(ExprPtr a, ExprPtr b) { return min_max(ExprKind::Min, a, b); }
ExprPtr max(ExprPtr a, ExprPtr b) { return min_max(ExprKind::Max, a, b); }
ExprPtr eq(ExprPtr a, ExprPtr b) { return comparison(ExprKind::Eq, a, b); }
ExprPtr ne(ExprPtr a, ExprPtr b) { return comparison(ExprKind::Ne, a, b); }
ExprPtr lt(ExprPtr a, ExprPtr b) { return comparison(ExprKind::Lt, a, b); }
ExprPtr le(ExprPtr a, ExprPtr b) { return comparison(ExprKind::Le, a, b); }
ExprPtr logical_and(ExprPtr a, ExprPtr b) { return junction(ExprKind::And, a, b); }
ExprPtr logical_or(ExprPtr a, ExprPtr b) { return junction(ExprKind::Or, a, b); }

ExprPtr logical_not(ExprPtr a) {
  require_bool("logical_not", a);
  auto args = a->args();
  switch (a->kind()) {
    case ExprKind::True:
      return boolean(false);
    case ExprKind::False:
      return boolean(true);
    case ExprKind::Not:
      return args[0];
    case ExprKind::Eq:
      return ne(args[0], args[1]);
    case ExprKind::Ne:
      return eq(args[0], args[1]);
    case ExprKind::Lt:
      return le(args[1], args[0]);
    case ExprKind::Le:
      return lt(args[1], args[0]);
    case ExprKind::And:
    case ExprKind::Or: {
      ExprPtr r = logical_not(args[0]);
      for (size_t i = 1; i < args.size(); ++i) {
        r = a->kind() == ExprKind::And ? logical_or(r, logical_not(args[i]))
                                       : logical_and(r, logical_not(args[i]));
      }
      return r;
    }
    default:
      return intern(ExprKind::Not, 0, {}, {a});
  }
}

}  // namespace kiln::sym
