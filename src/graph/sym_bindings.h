// Symbol values while interpreting a graph (Note [Binding symbols when interpreting] in
// interpreter.cpp).
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/graph/graph.h"
#include "src/sym/expr.h"

namespace kiln::graph {

class SymBindings {
 public:
  // `expected` is a placeholder's size: a symbol gets `actual` on its first occurrence; a concrete
  // value or an already-bound symbol must equal it (ValueError starting with `where`). A compound
  // expression is checked by check_deferred(), once every input is bound.
  void bind_or_check(SymInt expected, int64_t actual, const std::string& where);
  // Binds `expected` when it is a symbol with no value yet (placeholder strides, unbacked sizes).
  void bind_if_unbound(SymInt expected, int64_t actual);
  void check_deferred();
  // The value of `s` under the bindings; nullopt when it uses an unbound symbol.
  std::optional<int64_t> evaluate(SymInt s) const;
  // A constant with every symbolic int word replaced by its value; throws naming `node` when a
  // symbol has no value.
  IValue concretize(const IValue& c, const Node& node) const;

 private:
  struct Deferred {
    sym::ExprPtr expr;
    int64_t actual;
    std::string where;
  };
  int64_t value_or_throw(SymInt s, const Node& node) const;
  std::unordered_map<sym::ExprPtr, int64_t> values_;
  std::vector<Deferred> deferred_;
};

}  // namespace kiln::graph
