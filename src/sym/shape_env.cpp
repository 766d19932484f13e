// ShapeEnv: symbols, hints, value ranges, guards, replacements and runtime asserts of one trace.
//
// Note [Size symbols]
// Sizes 0 and 1 are specialized to constants by default, so broadcasting and "is this dim empty"
// decisions stay static; a backed size symbol then ranges over [2, inf) and that range is part of
// what check_guards() verifies. Duck sizing gives input sizes with equal hints one symbol (an
// input of 8x8 has one symbol for both dims); the caller that binds symbol values from sources
// must then check that every source of a symbol has the same value.
#include "src/sym/shape_env.h"

#include <algorithm>

#include "kiln/error.h"
#include "src/sym/intern.h"

namespace kiln::sym {
namespace {

thread_local ShapeEnv* current_env = nullptr;

// "s0 = 4, s1 = 5" for the symbols of `e`.
std::string symbol_values(ExprPtr e, const std::function<std::optional<int64_t>(ExprPtr)>& value) {
  std::string out;
  for (ExprPtr s : free_symbols(e)) {
    std::optional<int64_t> v = value(s);
    if (!out.empty()) out += ", ";
    out += v ? fmt::format("{} = {}", s->name(), *v) : fmt::format("{} = unknown", s->name());
  }
  return out;
}

}  // namespace

std::string origin_of(std::source_location loc) {
  std::string_view file = loc.file_name();
  if (size_t slash = file.rfind('/'); slash != std::string_view::npos) {
    file.remove_prefix(slash + 1);
  }
  return fmt::format("{}:{}", file, loc.line());
}

ShapeEnv::ShapeEnv(ShapeEnvOptions options) : options_(options) {}

ShapeEnv* ShapeEnv::current() { return current_env; }

std::shared_ptr<ShapeEnv> ShapeEnv::frozen_copy(std::string who) const {
  auto copy = std::make_shared<ShapeEnv>(*this);
  copy->handler_ = nullptr;
  copy->int_handler_ = nullptr;
  copy->frozen_for_ = who.empty() ? std::string("code run after the trace") : std::move(who);
  return copy;
}
ShapeEnv::Scope::Scope(ShapeEnv* env) : saved_(current_env) { current_env = env; }
ShapeEnv::Scope::~Scope() { current_env = saved_; }

SymInt ShapeEnv::create_size_symbol(int64_t hint, std::string source, bool dynamic) {
  KILN_CHECK(hint >= 0, ValueError, "ShapeEnv::create_size_symbol: size {} of {} is negative", hint,
             source);
  if (!dynamic || (options_.specialize_zero_one && hint <= 1)) return SymInt(hint);
  if (options_.duck_shape) {
    if (auto it = duck_.find(hint); it != duck_.end()) return SymInt::from_expr(it->second);
  }
  ExprPtr s = symbol(fmt::format("s{}", next_backed_++));
  symbol_index_.emplace(s, symbols_.size());
  ValueRange range = ValueRange::at_least(options_.specialize_zero_one ? 2 : 0);
  symbols_.push_back({s, hint, range, std::move(source), false});
  if (options_.duck_shape) duck_.emplace(hint, s);
  return SymInt::from_expr(s);
}

SymInt ShapeEnv::create_unbacked_symbol(std::string source, ValueRange range) {
  ExprPtr s = symbol(fmt::format("u{}", next_unbacked_++));
  symbol_index_.emplace(s, symbols_.size());
  symbols_.push_back({s, std::nullopt, range, std::move(source), true});
  return SymInt::from_expr(s);
}

const SymbolInfo* ShapeEnv::info(ExprPtr symbol) const {
  auto it = symbol_index_.find(symbol);
  return it == symbol_index_.end() ? nullptr : &symbols_[it->second];
}

ExprPtr ShapeEnv::apply_replacements(ExprPtr e) const {
  if (replacements_.empty()) return e;
  return substitute(e, [&](ExprPtr s) -> ExprPtr {
    auto it = replacements_.find(s);
    return it == replacements_.end() ? nullptr : it->second;
  });
}

std::optional<bool> ShapeEnv::decide_by_ranges(ExprPtr condition) const {
  ValueRange r = range_of(condition);
  if (!r.is_singleton()) return std::nullopt;
  return r.lower != 0;
}

std::optional<bool> ShapeEnv::decide_size_oblivious(ExprPtr condition) const {
  const ValueRange r = bound(simplify(condition), [&](ExprPtr s) {
    const SymbolInfo* i = info(s);
    if (i == nullptr) return ValueRange::unbounded();
    ValueRange range = i->range;
    if (i->unbacked && range.lower >= 0 && range.upper >= 2)
      range.lower = std::max<int64_t>(range.lower, 2);
    return range;
  });
  if (!r.is_singleton()) return std::nullopt;
  return r.lower != 0;
}

ValueRange ShapeEnv::range_of(ExprPtr e) const {
  return bound(e, [&](ExprPtr s) {
    const SymbolInfo* i = info(s);
    return i ? i->range : ValueRange::unbounded();
  });
}

// Bottom-up rewrites that the value ranges justify: Max(s0, 1) is s0 when s0 >= 2; s0//8 is 0 and
// s0 % 8 is s0 when 0 <= s0 < 8; a comparison the ranges decide is a constant.
ExprPtr ShapeEnv::simplify_with_ranges(ExprPtr e) const {
  std::unordered_map<ExprPtr, ExprPtr> memo;
  auto go = [&](auto& self, ExprPtr x) -> ExprPtr {
    if (x->args().empty()) return x;
    if (auto it = memo.find(x); it != memo.end()) return it->second;
    std::vector<ExprPtr> args;
    for (ExprPtr a : x->args()) args.push_back(self(self, a));
    ExprPtr r = std::equal(args.begin(), args.end(), x->args().begin())
                    ? x
                    : detail::rebuild(x->kind(), args);
    if (r->kind() == ExprKind::Min || r->kind() == ExprKind::Max) {
      ExprPtr a = r->args()[0], b = r->args()[1];
      ValueRange ra = range_of(a), rb = range_of(b);
      bool is_min = r->kind() == ExprKind::Min;
      if (ra.upper <= rb.lower)
        r = is_min ? a : b;
      else if (rb.upper <= ra.lower)
        r = is_min ? b : a;
    } else if (r->kind() == ExprKind::FloorDiv || r->kind() == ExprKind::Mod) {
      ExprPtr divisor = r->args()[1];
      ValueRange rx = range_of(r->args()[0]);
      if (divisor->is_integer() && rx.lower >= 0 && rx.upper < divisor->value()) {
        r = r->kind() == ExprKind::Mod ? r->args()[0] : integer(0);
      }
    } else if (r->is_bool()) {
      if (std::optional<bool> known = decide_by_ranges(r)) r = boolean(*known);
    }
    memo.emplace(x, r);
    return r;
  };
  return go(go, e);
}

ExprPtr ShapeEnv::simplify(ExprPtr e) const { return simplify_with_ranges(apply_replacements(e)); }

std::optional<bool> ShapeEnv::statically_known(ExprPtr condition) const {
  ExprPtr c = simplify(condition);
  if (c->kind() == ExprKind::True || c->kind() == ExprKind::False) {
    return c->kind() == ExprKind::True;
  }
  return std::nullopt;
}

std::optional<int64_t> ShapeEnv::hint(ExprPtr e) const {
  return evaluate(e, [&](ExprPtr s) -> std::optional<int64_t> {
    const SymbolInfo* i = info(s);
    return i ? i->hint : std::nullopt;
  });
}

bool ShapeEnv::uses_unbacked(ExprPtr e) const {
  for (ExprPtr s : free_symbols(e)) {
    const SymbolInfo* i = info(s);
    if (i && i->unbacked) return true;
  }
  return false;
}

bool ShapeEnv::guard_bool(ExprPtr condition, std::source_location loc) {
  ExprPtr c = simplify(condition);
  if (c->kind() == ExprKind::True || c->kind() == ExprKind::False) {
    return c->kind() == ExprKind::True;
  }
  if (uses_unbacked(c)) {
    if (handler_) return handler_(c, loc);
    std::string origin = origin_of(loc);
    std::string names;
    for (ExprPtr s : free_symbols(c)) {
      const SymbolInfo* i = info(s);
      if (!i || !i->unbacked) continue;
      names += fmt::format("{}{} ({})", names.empty() ? "" : ", ", s->name(), i->source);
    }
    throw DataDependentError(
        c, origin,
        fmt::format("data-dependent condition `{}` at {}: it depends on {}, known only when the "
                    "graph runs; assert facts about it with kiln::check() or avoid branching on it",
                    to_string(c), origin, names));
  }
  std::optional<int64_t> value = hint(c);
  KILN_CHECK(value.has_value(), Error,
             "ShapeEnv::guard_bool: `{}` at {} uses a symbol this ShapeEnv did not create",
             to_string(c), origin_of(loc));
  bool holds = *value != 0;
  ExprPtr fact = holds ? c : logical_not(c);
  KILN_CHECK(!frozen() || guarded_.count(fact) != 0, Error,
             "{}: needs to know whether `{}` (at {}), which the trace neither decided nor guarded, "
             "and its guards can no longer change (Note [A frozen ShapeEnv]). Compile with "
             "dynamic=false, or mark fewer dims dynamic",
             frozen_for_, to_string(c), origin_of(loc));
  if (guarded_.insert(fact).second) guards_.push_back({fact, origin_of(loc)});
  if (fact->kind() == ExprKind::Eq) add_replacement(fact);
  return holds;
}

int64_t ShapeEnv::guard_int(ExprPtr value, std::source_location loc) {
  ExprPtr v = simplify(value);
  if (v->is_integer()) return v->value();
  if (uses_unbacked(v)) {
    if (int_handler_) int_handler_(v, loc);
    throw DataDependentError(
        v, origin_of(loc),
        fmt::format("data-dependent value `{}` at {} is needed as an integer; it is known only "
                    "when the graph runs",
                    to_string(v), origin_of(loc)));
  }
  std::optional<int64_t> h = hint(v);
  KILN_CHECK(h.has_value(), Error,
             "ShapeEnv::guard_int: `{}` at {} uses a symbol this ShapeEnv did not create",
             to_string(v), origin_of(loc));
  guard_bool(eq(v, integer(*h)), loc);
  return *h;
}

// From `coeff*s + rest == k` with coeff = +-1, replaces the newest such symbol s by
// coeff*(k - rest), so later expressions use the older symbols (or the constant).
void ShapeEnv::add_replacement(ExprPtr equality) {
  ExprPtr lhs = equality->args()[0];
  int64_t k = equality->args()[1]->value();
  auto terms = lhs->kind() == ExprKind::Add ? lhs->args() : std::span<const ExprPtr>(&lhs, 1);
  ExprPtr best = nullptr;
  int64_t best_coeff = 0;
  for (ExprPtr t : terms) {
    int64_t coeff = 1;
    if (t->kind() == ExprKind::Mul && t->args().size() == 2 && t->args()[0]->is_integer()) {
      coeff = t->args()[0]->value();
      t = t->args()[1];
    }
    if (!t->is_symbol() || (coeff != 1 && coeff != -1) || !info(t)) continue;
    if (!best || symbol_index_.at(t) > symbol_index_.at(best)) best = t, best_coeff = coeff;
  }
  if (!best) return;
  ExprPtr rest = sub(lhs, mul(integer(best_coeff), best));
  ExprPtr target = apply_replacements(mul(integer(best_coeff), sub(integer(k), rest)));
  auto uses = free_symbols(target);
  if (std::find(uses.begin(), uses.end(), best) != uses.end()) return;
  for (auto& [s, t] : replacements_) {
    t = substitute(t, [&](ExprPtr x) { return x == best ? target : nullptr; });
  }
  replacements_[best] = target;
  if (target->is_symbol() && info(target)) {  // the older symbol inherits both ranges
    SymbolInfo& older = symbols_[symbol_index_.at(target)];
    older.range = older.range.intersect(info(best)->range);
  }
}

void ShapeEnv::narrow_range(ExprPtr fact) {
  if (fact->kind() == ExprKind::And) {
    for (ExprPtr a : fact->args()) narrow_range(a);
    return;
  }
  if (fact->kind() < ExprKind::Eq || fact->kind() > ExprKind::Le) return;
  ExprPtr a = fact->args()[0], b = fact->args()[1];
  bool constant_left = a->is_integer();
  ExprPtr s = constant_left ? b : a;
  int64_t k = (constant_left ? a : b)->value();
  // Only unbacked ranges narrow: a backed symbol's range is part of what check_guards() checks,
  // and a runtime assert on it is checked when the graph runs instead.
  if (!s->is_symbol() || !info(s) || !info(s)->unbacked) return;
  ValueRange r = ValueRange::unbounded();
  switch (fact->kind()) {
    case ExprKind::Eq:
      r = ValueRange::exactly(k);
      break;
    case ExprKind::Lt:
      r = constant_left ? ValueRange::at_least(k + 1) : ValueRange{r.lower, k - 1};
      break;
    case ExprKind::Le:
      r = constant_left ? ValueRange::at_least(k) : ValueRange{r.lower, k};
      break;
    default:
      return;  // Ne does not narrow an interval
  }
  SymbolInfo& i = symbols_[symbol_index_.at(s)];
  ValueRange narrowed = i.range.intersect(r);
  KILN_CHECK(!narrowed.is_empty(), ValueError,
             "kiln::check: `{}` contradicts the range {} known for {} ({})", to_string(fact),
             i.range.to_string(), s->name(), i.source);
  i.range = narrowed;
}

void ShapeEnv::add_runtime_assert(ExprPtr condition, std::source_location loc) {
  ExprPtr c = simplify(condition);
  std::string origin = origin_of(loc);
  KILN_CHECK(c->kind() != ExprKind::False, ValueError, "check failed at {}: `{}` is always false",
             origin, to_string(condition));
  if (c->kind() == ExprKind::True) return;
  if (!uses_unbacked(c)) {
    std::optional<int64_t> h = hint(c);
    KILN_CHECK(!h || *h != 0, ValueError, "check failed at {}: `{}` is false for these inputs ({})",
               origin, to_string(c), symbol_values(c, [&](ExprPtr s) { return hint(s); }));
  }
  if (!asserted_.insert(c).second) return;
  runtime_asserts_.push_back({c, origin});
  narrow_range(c);
}

ExprPtr ShapeEnv::range_condition(const SymbolInfo& i) {
  ExprPtr in_range = boolean(true);
  if (i.range.lower != ValueRange::kNegInf) in_range = le(integer(i.range.lower), i.symbol);
  if (i.range.upper != ValueRange::kPosInf) {
    in_range = logical_and(in_range, le(i.symbol, integer(i.range.upper)));
  }
  return in_range;
}

ExprPtr ShapeEnv::all_guards() const {
  ExprPtr all = boolean(true);
  for (const SymbolInfo& i : symbols_) {
    if (!i.unbacked) all = logical_and(all, range_condition(i));
  }
  for (const ShapeGuard& g : guards_) all = logical_and(all, g.condition);
  return all;
}

bool ShapeEnv::check_guards(const std::function<std::optional<int64_t>(ExprPtr)>& value,
                            std::string* failed) const {
  auto fail = [&](ExprPtr condition, const std::string& origin, const char* what) {
    if (failed) {
      *failed = fmt::format("{} (from {}) {}: {}", to_string(condition), origin, what,
                            symbol_values(condition, value));
    }
    return false;
  };
  for (const SymbolInfo& i : symbols_) {
    if (i.unbacked) continue;
    ExprPtr in_range = range_condition(i);
    std::optional<int64_t> v = value(i.symbol);
    if (!v) return fail(in_range, i.source, "cannot be checked");
    if (!i.range.contains(*v)) return fail(in_range, i.source, "is false");
  }
  for (const ShapeGuard& g : guards_) {
    std::optional<int64_t> v = evaluate(g.condition, value);
    if (!v) return fail(g.condition, g.origin, "cannot be checked");
    if (*v == 0) return fail(g.condition, g.origin, "is false");
  }
  return true;
}

}  // namespace kiln::sym
