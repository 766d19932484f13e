// Interning, ordering and the generic traversals of sym::Expr (free symbols, substitution,
// evaluation). The simplifying factories live in simplify.cpp.
#include <charconv>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "kiln/error.h"
#include "kiln/sym_int.h"
#include "src/sym/intern.h"

namespace kiln::sym {

bool Expr::is_bool() const { return kind_ >= ExprKind::True; }

namespace detail {
namespace {

size_t combine(size_t seed, size_t v) {
  return seed ^ (v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

struct NodeHash {
  size_t operator()(const Expr* e) const { return e->hash(); }
};
struct NodeEqual {
  bool operator()(const Expr* a, const Expr* b) const {
    if (a->kind() != b->kind() || a->value() != b->value() || a->name() != b->name()) return false;
    auto x = a->args(), y = b->args();
    return std::equal(x.begin(), x.end(), y.begin(), y.end());  // arguments are interned
  }
};

// Note [Interned expressions]: the table owns every node for the life of the process. It is
// allocated once and never destroyed, so nodes stay valid during static destruction.
struct InternTable {
  std::mutex mutex;
  std::unordered_set<const Expr*, NodeHash, NodeEqual> nodes;
};
InternTable& table() {
  static InternTable* t = new InternTable;
  return *t;
}

}  // namespace

ExprPtr intern(ExprKind kind, int64_t value, std::string_view name, std::vector<ExprPtr> args) {
  size_t h = combine(static_cast<size_t>(kind), std::hash<int64_t>()(value));
  h = combine(h, std::hash<std::string_view>()(name));
  for (ExprPtr a : args) h = combine(h, a->hash());
  Expr probe(kind, value, std::string(name), std::move(args), h);
  InternTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.nodes.find(&probe);
  if (it != t.nodes.end()) return *it;
  const Expr* node = new Expr(std::move(probe));
  t.nodes.insert(node);
  return node;
}

ExprPtr rebuild(ExprKind kind, std::span<const ExprPtr> args) {
  using Binary = ExprPtr (*)(ExprPtr, ExprPtr);
  auto fold = [&](Binary f) {
    ExprPtr r = args[0];
    for (size_t i = 1; i < args.size(); ++i) r = f(r, args[i]);
    return r;
  };
  switch (kind) {
    case ExprKind::Add:
      return fold(&sym::add);
    case ExprKind::Mul:
      return fold(&sym::mul);
    case ExprKind::FloorDiv:
      return sym::floordiv(args[0], args[1]);
    case ExprKind::Mod:
      return sym::mod(args[0], args[1]);
    case ExprKind::Min:
      return fold(&sym::min);
    case ExprKind::Max:
      return fold(&sym::max);
    case ExprKind::Eq:
      return sym::eq(args[0], args[1]);
    case ExprKind::Ne:
      return sym::ne(args[0], args[1]);
    case ExprKind::Lt:
      return sym::lt(args[0], args[1]);
    case ExprKind::Le:
      return sym::le(args[0], args[1]);
    case ExprKind::And:
      return fold(&sym::logical_and);
    case ExprKind::Or:
      return fold(&sym::logical_or);
    case ExprKind::Not:
      return sym::logical_not(args[0]);
    default:
      break;
  }
  throw Error(fmt::format("sym::rebuild: kind {} has no arguments", static_cast<int>(kind)));
}

}  // namespace detail

ExprPtr integer(int64_t v) { return detail::intern(ExprKind::Integer, v, {}, {}); }

ExprPtr symbol(std::string_view name) {
  KILN_CHECK(!name.empty(), ValueError, "sym::symbol: a symbol needs a name");
  return detail::intern(ExprKind::Symbol, 0, name, {});
}

ExprPtr boolean(bool v) {
  static const ExprPtr t = detail::intern(ExprKind::True, 0, {}, {});
  static const ExprPtr f = detail::intern(ExprKind::False, 0, {}, {});
  return v ? t : f;
}

namespace {

// Names compare as (letters, number): s2 < s10 < u0.
int compare_names(const std::string& a, const std::string& b) {
  auto split = [](const std::string& s) {
    size_t i = s.size();
    while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') --i;
    uint64_t n = 0;
    bool numeric = i < s.size() && s.size() - i <= 18;
    if (numeric) std::from_chars(s.data() + i, s.data() + s.size(), n);
    return std::tuple(std::string_view(s).substr(0, numeric ? i : s.size()), numeric ? n : 0);
  };
  auto x = split(a), y = split(b);
  if (x != y) return x < y ? -1 : 1;
  return a.compare(b) < 0 ? -1 : (a == b ? 0 : 1);
}

std::span<const ExprPtr> factors(const ExprPtr& e) {
  if (e->kind() == ExprKind::Mul) return e->args();
  return {&e, 1};
}

int compare_lists(std::span<const ExprPtr> x, std::span<const ExprPtr> y) {
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (int c = compare(x[i], y[i])) return c;
  }
  return x.size() == y.size() ? 0 : (x.size() < y.size() ? -1 : 1);
}

}  // namespace

int compare(ExprPtr a, ExprPtr b) {
  if (a == b) return 0;
  if (a->kind() == ExprKind::Mul || b->kind() == ExprKind::Mul) {
    return compare_lists(factors(a), factors(b));
  }
  if (a->kind() != b->kind()) return a->kind() < b->kind() ? -1 : 1;
  switch (a->kind()) {
    case ExprKind::Integer:
      return a->value() < b->value() ? -1 : 1;
    case ExprKind::Symbol:
      return compare_names(a->name(), b->name());
    default:
      return compare_lists(a->args(), b->args());
  }
}

std::vector<ExprPtr> free_symbols(ExprPtr e) {
  std::vector<ExprPtr> out;
  std::unordered_set<ExprPtr> seen;
  auto visit = [&](auto& self, ExprPtr x) -> void {
    if (!seen.insert(x).second) return;
    if (x->is_symbol()) out.push_back(x);
    for (ExprPtr a : x->args()) self(self, a);
  };
  visit(visit, e);
  return out;
}

ExprPtr substitute(ExprPtr e, const std::function<ExprPtr(ExprPtr symbol)>& lookup) {
  std::unordered_map<ExprPtr, ExprPtr> memo;
  auto go = [&](auto& self, ExprPtr x) -> ExprPtr {
    if (x->is_symbol()) {
      ExprPtr r = lookup(x);
      return r ? r : x;
    }
    if (x->args().empty()) return x;
    if (auto it = memo.find(x); it != memo.end()) return it->second;
    std::vector<ExprPtr> args;
    bool changed = false;
    for (ExprPtr a : x->args()) {
      args.push_back(self(self, a));
      changed |= args.back() != a;
    }
    ExprPtr r = changed ? detail::rebuild(x->kind(), args) : x;
    memo.emplace(x, r);
    return r;
  };
  return go(go, e);
}

std::optional<int64_t> evaluate(ExprPtr e,
                                const std::function<std::optional<int64_t>(ExprPtr)>& value) {
  auto go = [&](auto& self, ExprPtr x) -> std::optional<int64_t> {
    auto args = x->args();
    std::vector<int64_t> v;
    v.reserve(args.size());
    for (ExprPtr a : args) {
      auto r = self(self, a);
      if (!r) return std::nullopt;
      v.push_back(*r);
    }
    auto all = [&](auto pred) { return std::all_of(v.begin(), v.end(), pred); };
    auto any = [&](auto pred) { return std::any_of(v.begin(), v.end(), pred); };
    int64_t acc = 0;
    switch (x->kind()) {
      case ExprKind::Integer:
        return x->value();
      case ExprKind::Symbol:
        return value(x);
      case ExprKind::True:
        return 1;
      case ExprKind::False:
        return 0;
      case ExprKind::Add:
        for (int64_t a : v) acc = static_cast<int64_t>(uint64_t(acc) + uint64_t(a));  // wraps
        return acc;
      case ExprKind::Mul:
        acc = 1;
        for (int64_t a : v) acc = static_cast<int64_t>(uint64_t(acc) * uint64_t(a));
        return acc;
      case ExprKind::FloorDiv:
      case ExprKind::Mod:
        KILN_CHECK(v[1] != 0, ValueError, "sym::evaluate: division by zero in {}", to_string(x));
        return x->kind() == ExprKind::Mod ? sym_detail::mod_int(v[0], v[1])
                                          : sym_detail::floordiv_int(v[0], v[1]);
      case ExprKind::Min:
        return *std::min_element(v.begin(), v.end());
      case ExprKind::Max:
        return *std::max_element(v.begin(), v.end());
      case ExprKind::Eq:
        return v[0] == v[1];
      case ExprKind::Ne:
        return v[0] != v[1];
      case ExprKind::Lt:
        return v[0] < v[1];
      case ExprKind::Le:
        return v[0] <= v[1];
      case ExprKind::And:
        return all([](int64_t a) { return a != 0; });
      case ExprKind::Or:
        return any([](int64_t a) { return a != 0; });
      case ExprKind::Not:
        return v[0] == 0;
    }
    return std::nullopt;
  };
  return go(go, e);
}

}  // namespace kiln::sym
