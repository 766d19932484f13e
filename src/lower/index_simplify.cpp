#include "src/lower/index_simplify.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace kiln::lower {
namespace {

using sym::ExprKind;
using sym::ExprPtr;

constexpr int64_t kUnbounded = std::numeric_limits<int64_t>::max();

struct Range {
  int64_t lo;
  int64_t hi;  // kUnbounded: no known upper bound
};

int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (a == kUnbounded || b == kUnbounded || __builtin_add_overflow(a, b, &r)) return kUnbounded;
  return r;
}

int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  if (a == 0 || b == 0) return 0;
  if (a == kUnbounded || b == kUnbounded || __builtin_mul_overflow(a, b, &r)) return kUnbounded;
  return r;
}

// A range of a non-negative expression, or nullopt when it may be negative or is not understood.
std::optional<Range> nonneg_range(ExprPtr e, const VarRanges& ranges) {
  switch (e->kind()) {
    case ExprKind::Integer:
      if (e->value() < 0) return std::nullopt;
      return Range{e->value(), e->value()};
    case ExprKind::Symbol: {
      auto it = ranges.find(e);
      if (it == ranges.end()) return Range{0, kUnbounded};  // a size symbol
      if (it->second->is_integer()) return Range{0, std::max<int64_t>(it->second->value() - 1, 0)};
      return Range{0, kUnbounded};
    }
    case ExprKind::Add: {
      Range r{0, 0};
      for (ExprPtr a : e->args()) {
        auto ar = nonneg_range(a, ranges);
        if (!ar) return std::nullopt;
        r.lo = sat_add(r.lo, ar->lo);
        r.hi = sat_add(r.hi, ar->hi);
      }
      return r;
    }
    case ExprKind::Mul: {
      Range r{1, 1};
      for (ExprPtr a : e->args()) {
        auto ar = nonneg_range(a, ranges);
        if (!ar) return std::nullopt;
        r.lo = sat_mul(r.lo, ar->lo);
        r.hi = sat_mul(r.hi, ar->hi);
      }
      return r;
    }
    case ExprKind::FloorDiv: {
      auto a = nonneg_range(e->args()[0], ranges);
      ExprPtr d = e->args()[1];
      if (!a || !d->is_integer() || d->value() <= 0) return std::nullopt;
      return Range{a->lo / d->value(), a->hi == kUnbounded ? kUnbounded : a->hi / d->value()};
    }
    case ExprKind::Mod: {
      ExprPtr d = e->args()[1];
      if (!nonneg_range(e->args()[0], ranges)) return std::nullopt;
      if (d->is_integer() && d->value() > 0) return Range{0, d->value() - 1};
      return Range{0, kUnbounded};
    }
    default:
      return std::nullopt;
  }
}

// True when 0 <= e < d holds for every value of the loop variables.
bool below(ExprPtr e, ExprPtr d, const VarRanges& ranges) {
  auto r = nonneg_range(e, ranges);
  if (!r) return false;
  if (d->is_integer()) return r->hi != kUnbounded && r->hi < d->value();
  // A loop variable whose loop size is exactly the divisor.
  auto it = ranges.find(e);
  return it != ranges.end() && it->second == d;
}

ExprPtr rebuild(ExprPtr e, std::vector<ExprPtr> args) {
  auto fold = [&](ExprPtr (*f)(ExprPtr, ExprPtr)) {
    ExprPtr r = args[0];
    for (size_t i = 1; i < args.size(); ++i) r = f(r, args[i]);
    return r;
  };
  switch (e->kind()) {
    case ExprKind::Add:
      return fold(sym::add);
    case ExprKind::Mul:
      return fold(sym::mul);
    case ExprKind::FloorDiv:
      return sym::floordiv(args[0], args[1]);
    case ExprKind::Mod:
      return sym::mod(args[0], args[1]);
    case ExprKind::Min:
      return fold(sym::min);
    case ExprKind::Max:
      return fold(sym::max);
    case ExprKind::Eq:
      return sym::eq(args[0], args[1]);
    case ExprKind::Ne:
      return sym::ne(args[0], args[1]);
    case ExprKind::Lt:
      return sym::lt(args[0], args[1]);
    case ExprKind::Le:
      return sym::le(args[0], args[1]);
    case ExprKind::And:
      return fold(sym::logical_and);
    case ExprKind::Or:
      return fold(sym::logical_or);
    case ExprKind::Not:
      return sym::logical_not(args[0]);
    default:
      return e;
  }
}

// m*(x//k)*k + m*(x%k) == m*x: finds such a pair of terms in a sum and merges it (repeatedly).
ExprPtr merge_div_mod(ExprPtr sum) {
  // A term as (multiplier, the Mod factor) when it has exactly one Mod factor.
  auto split_mod = [](ExprPtr t) -> std::pair<ExprPtr, ExprPtr> {
    if (t->kind() == ExprKind::Mod) return {sym::integer(1), t};
    if (t->kind() != ExprKind::Mul) return {nullptr, nullptr};
    ExprPtr mod = nullptr, rest = sym::integer(1);
    for (ExprPtr f : t->args()) {
      if (f->kind() == ExprKind::Mod && mod == nullptr)
        mod = f;
      else
        rest = sym::mul(rest, f);
    }
    return {mod ? rest : nullptr, mod};
  };
  bool changed = true;
  while (changed && sum->kind() == ExprKind::Add) {
    changed = false;
    std::vector<ExprPtr> terms(sum->args().begin(), sum->args().end());
    for (size_t i = 0; i < terms.size() && !changed; ++i) {
      auto [m, mod] = split_mod(terms[i]);
      if (mod == nullptr) continue;
      ExprPtr x = mod->args()[0], k = mod->args()[1];
      ExprPtr partner = sym::mul(m, sym::mul(sym::floordiv(x, k), k));
      for (size_t j = 0; j < terms.size(); ++j) {
        if (j == i || terms[j] != partner) continue;
        ExprPtr r = sym::mul(m, x);
        for (size_t t = 0; t < terms.size(); ++t) {
          if (t != i && t != j) r = sym::add(r, terms[t]);
        }
        sum = r;
        changed = true;
        break;
      }
    }
  }
  return sum;
}

// A term's integer coefficient (3 in 3*x, 1 in x) and the term divided by `c` (which must divide
// the coefficient).
int64_t coefficient(ExprPtr t) {
  if (t->is_integer()) return t->value();
  if (t->kind() != ExprKind::Mul) return 1;
  int64_t c = 1;
  for (ExprPtr f : t->args())
    if (f->is_integer()) c *= f->value();
  return c;
}

ExprPtr divide_term(ExprPtr t, int64_t c) {
  if (t->is_integer()) return sym::integer(t->value() / c);
  ExprPtr r = sym::integer(coefficient(t) / c);
  for (ExprPtr f : t->args())
    if (!f->is_integer()) r = sym::mul(r, f);
  return r;
}

// Note [Dividing a sum by a multiple of its stride]
// A view of a view (a reshape of a transposed tensor) indexes with (a + c*x) // (c*m) and
// (a + c*x) % (c*m), where 0 <= a < c: the small part never carries into the quotient. Then
//   (a + c*x) // (c*m) == x // m   and   (a + c*x) % (c*m) == a + c*(x % m),
// which merge_div_mod folds back into a flat index. The sum is split at the largest c (a term's
// coefficient dividing the divisor) for which the terms with smaller coefficients stay below c.
std::optional<std::pair<ExprPtr, ExprPtr>> split_sum(ExprPtr sum, int64_t divisor,
                                                     const VarRanges& ranges, int64_t& c_out) {
  if (sum->kind() != ExprKind::Add || divisor <= 1) return std::nullopt;
  std::vector<int64_t> candidates;
  for (ExprPtr t : sum->args()) {
    const int64_t c = coefficient(t);
    if (c > 1 && divisor % c == 0) candidates.push_back(c);
  }
  std::sort(candidates.rbegin(), candidates.rend());
  for (int64_t c : candidates) {
    ExprPtr small = sym::integer(0), big = sym::integer(0);
    bool ok = true;
    for (ExprPtr t : sum->args()) {
      const int64_t tc = coefficient(t);
      if (tc % c == 0) {
        big = sym::add(big, divide_term(t, c));
      } else {
        small = sym::add(small, t);
        ok &= tc > 0;
      }
    }
    if (!ok || !below(small, sym::integer(c), ranges) || !nonneg_range(big, ranges)) continue;
    c_out = c;
    return std::make_pair(small, big);
  }
  return std::nullopt;
}

bool contains(ExprPtr e, ExprPtr v) {
  if (e == v) return true;
  for (ExprPtr a : e->args()) {
    if (contains(a, v)) return true;
  }
  return false;
}

}  // namespace

ExprPtr simplify_index(ExprPtr e, const VarRanges& ranges) {
  if (e->args().empty()) return e;
  std::vector<ExprPtr> args;
  args.reserve(e->args().size());
  bool changed = false;
  for (ExprPtr a : e->args()) {
    ExprPtr s = simplify_index(a, ranges);
    changed |= s != a;
    args.push_back(s);
  }
  ExprPtr r = changed ? rebuild(e, args) : e;
  switch (r->kind()) {
    case ExprKind::FloorDiv: {
      if (below(r->args()[0], r->args()[1], ranges)) return sym::integer(0);
      int64_t c = 0;
      // Note [Dividing a sum by a multiple of its stride]
      if (r->args()[1]->is_integer()) {
        const int64_t d = r->args()[1]->value();
        if (auto split = split_sum(r->args()[0], d, ranges, c))
          return simplify_index(sym::floordiv(split->second, sym::integer(d / c)), ranges);
      }
      break;
    }
    case ExprKind::Mod: {
      if (below(r->args()[0], r->args()[1], ranges)) return r->args()[0];
      int64_t c = 0;
      if (r->args()[1]->is_integer()) {
        const int64_t d = r->args()[1]->value();
        if (auto split = split_sum(r->args()[0], d, ranges, c))
          return simplify_index(
              sym::add(split->first,
                       sym::mul(sym::integer(c), sym::mod(split->second, sym::integer(d / c)))),
              ranges);
      }
      break;
    }
    case ExprKind::Add: {
      ExprPtr m = merge_div_mod(r);
      if (m != r) return simplify_index(m, ranges);
      break;
    }
    default:
      break;
  }
  return r;
}

bool is_nonnegative(ExprPtr e, const VarRanges& ranges) {
  return nonneg_range(e, ranges).has_value();
}

std::vector<ExprPtr> loop_vars(char prefix, size_t n) {
  std::vector<ExprPtr> vars;
  vars.reserve(n);
  for (size_t i = 0; i < n; ++i) vars.push_back(sym::symbol(fmt::format("{}{}", prefix, i)));
  return vars;
}

std::optional<ExprPtr> linear_coefficient(ExprPtr e, ExprPtr v) {
  if (e == v) return sym::integer(1);
  if (!contains(e, v)) return sym::integer(0);
  switch (e->kind()) {
    case ExprKind::Add: {
      ExprPtr c = sym::integer(0);
      for (ExprPtr t : e->args()) {
        auto tc = linear_coefficient(t, v);
        if (!tc) return std::nullopt;
        c = sym::add(c, *tc);
      }
      return c;
    }
    case ExprKind::Mul: {
      ExprPtr c = sym::integer(1);
      int occurrences = 0;
      for (ExprPtr f : e->args()) {
        if (f == v) {
          ++occurrences;
        } else if (contains(f, v)) {
          return std::nullopt;
        } else {
          c = sym::mul(c, f);
        }
      }
      if (occurrences != 1) return std::nullopt;
      return c;
    }
    default:
      return std::nullopt;
  }
}

ExprPtr drop_vars(ExprPtr e, const std::vector<ExprPtr>& vars) {
  return sym::substitute(e, [&](ExprPtr s) -> ExprPtr {
    for (ExprPtr v : vars) {
      if (s == v) return sym::integer(0);
    }
    return nullptr;
  });
}

}  // namespace kiln::lower
