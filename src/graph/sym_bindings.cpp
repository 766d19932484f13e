#include "src/graph/sym_bindings.h"

namespace kiln::graph {

void SymBindings::bind_or_check(SymInt expected, int64_t actual, const std::string& where) {
  if (!expected.is_symbolic()) {
    KILN_CHECK(expected.raw() == actual, ValueError, "{} is {} but the graph was traced with {}",
               where, actual, expected.raw());
    return;
  }
  throw NotImplementedError(where + ": symbolic sizes need src/sym (not merged yet)");
}

void SymBindings::bind_unbacked(const SymDimVector& meta_sizes, IntArrayRef actual) {}

std::optional<int64_t> SymBindings::evaluate(SymInt s) const {
  if (!s.is_symbolic()) return s.raw();
  return std::nullopt;
}

IValue SymBindings::concretize(const IValue& c, const Node& node) const { return c; }

}  // namespace kiln::graph
