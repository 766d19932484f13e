// In-place pointwise ops (relu_, add_, clamp_, masked_fill_, lerp_, ...) as their out-of-place op
// followed by `copy_` into self: the lowering then sees one form of mutation (copy_ into a value,
// Note [What a decomposition keeps]) and the out-of-place op decomposes further if it has a
// decomposition. Eager in-place ops compute in the result dtype and convert into self, which is
// what copy_ does; their trace-time checks (castable result, no self-overlap, self's shape) have
// already passed when the node was recorded.
#include "src/lower/decomp/table.h"

namespace kiln::lower {
namespace {

// The out-of-place name of an in-place op: "add_.Scalar" -> "add.Scalar", "relu_" -> "relu".
std::string out_of_place_name(std::string_view name) {
  const size_t dot = name.find('.');
  const std::string_view base = name.substr(0, dot);
  if (base.empty() || base.back() != '_') return {};
  std::string out(base.substr(0, base.size() - 1));
  if (dot != std::string_view::npos) out += name.substr(dot);
  return out;
}

std::vector<Value*> inplace_pointwise(DecompBuilder& b) {
  const std::string op = out_of_place_name(b.op_name());
  std::vector<graph::Arg> args(b.node().args().begin(), b.node().args().end());
  Value* result = b.call1(op, std::move(args));
  return {b.copy_into(b.input(0), result)};
}

}  // namespace

void register_inplace_decompositions(DecompositionTable& t) {
  for (const auto& def : OpRegistry::instance().ops()) {
    if (!def->has_tag(kTagInplace) || !def->has_tag(kTagPointwise)) continue;
    const std::string op = out_of_place_name(def->name);
    if (op.empty() || OpRegistry::instance().find(op) == nullptr) continue;
    t.add(def->name, inplace_pointwise);
  }
}

}  // namespace kiln::lower
