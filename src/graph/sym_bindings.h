// Symbol values while interpreting a graph (Note [Binding symbols when interpreting] in
// interpreter.cpp).
#pragma once

#include <optional>
#include <string>
#include <unordered_map>

#include "src/graph/graph.h"

namespace kiln::graph {

class SymBindings {
 public:
  // `expected` is a placeholder's size or stride: a symbol gets `actual` on its first occurrence;
  // a concrete value or an already-bound symbol must equal it (ValueError starting with `where`).
  void bind_or_check(SymInt expected, int64_t actual, const std::string& where);
  // Binds unbacked symbols that are whole sizes in `meta_sizes` and have no value yet.
  void bind_unbacked(const SymDimVector& meta_sizes, IntArrayRef actual);
  // The value of `s` under the bindings; nullopt when it uses an unbound symbol.
  std::optional<int64_t> evaluate(SymInt s) const;
  // A constant with every symbolic int word replaced by its value; throws naming `node` when a
  // symbol has no value.
  IValue concretize(const IValue& c, const Node& node) const;

 private:
  std::unordered_map<const void*, int64_t> values_;  // symbol Expr -> value
};

}  // namespace kiln::graph
