#include "src/graph/sym_bindings.h"

namespace kiln::graph {

void SymBindings::bind_or_check(SymInt expected, int64_t actual, const std::string& where) {
  if (!expected.is_symbolic()) {
    KILN_CHECK(expected.raw() == actual, ValueError, "{} is {} but the graph was traced with {}",
               where, actual, expected.raw());
    return;
  }
  const sym::ExprPtr e = expected.expr();
  if (!e->is_symbol()) {
    deferred_.push_back({e, actual, where});
    return;
  }
  auto [it, inserted] = values_.emplace(e, actual);
  KILN_CHECK(inserted || it->second == actual, ValueError,
             "{} is {} but the graph's symbol {} is {} from an earlier input; these sizes must be "
             "equal",
             where, actual, e->name(), it->second);
}

void SymBindings::bind_if_unbound(SymInt expected, int64_t actual) {
  if (expected.is_symbolic() && expected.expr()->is_symbol())
    values_.emplace(expected.expr(), actual);
}

void SymBindings::check_deferred() {
  for (const Deferred& d : deferred_) {
    const std::optional<int64_t> v = evaluate(SymInt::from_expr(d.expr));
    if (!v) continue;  // uses a symbol no input binds: nothing to check against
    KILN_CHECK(*v == d.actual, ValueError, "{} is {} but the graph says {} = {}", d.where, d.actual,
               sym::to_string(d.expr), *v);
  }
}

std::optional<int64_t> SymBindings::evaluate(SymInt s) const {
  if (!s.is_symbolic()) return s.raw();
  return sym::evaluate(s.expr(), [&](sym::ExprPtr symbol) -> std::optional<int64_t> {
    auto it = values_.find(symbol);
    if (it == values_.end()) return std::nullopt;
    return it->second;
  });
}

int64_t SymBindings::value_or_throw(SymInt s, const Node& node) const {
  const std::optional<int64_t> v = evaluate(s);
  if (v) return *v;
  std::string unbound;
  for (sym::ExprPtr symbol : sym::free_symbols(s.expr()))
    if (values_.count(symbol) == 0) unbound += (unbound.empty() ? "" : ", ") + symbol->name();
  throw ValueError(fmt::format(
      "interpret: `{}`: the argument {} uses {} which no input size and no earlier output binds",
      to_string(node), sym::to_string(s.expr()), unbound));
}

IValue SymBindings::concretize(const IValue& c, const Node& node) const {
  if (c.is_int() && c.to_sym_int().is_symbolic())
    return IValue(value_or_throw(c.to_sym_int(), node));
  if (c.is_int_list()) {
    const IntArrayRef words = raw_words(c);
    bool symbolic = false;
    for (int64_t w : words) symbolic |= SymInt::from_raw(w).is_symbolic();
    if (!symbolic) return c;
    DimVector values;
    for (int64_t w : words) values.push_back(value_or_throw(SymInt::from_raw(w), node));
    return IValue(std::move(values));
  }
  return c;
}

}  // namespace kiln::graph
