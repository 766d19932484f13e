// The derivative table's storage and the Autograd key's installation.
#include "src/autograd/derivatives.h"
#include "src/autograd/op_backward.h"

namespace kiln::autograd {
namespace {

std::vector<std::unique_ptr<DerivativeDef>>& table() {
  static std::vector<std::unique_ptr<DerivativeDef>> t;
  return t;
}

}  // namespace

void autograd_handler(const OpDef& op, Stack& args, Stack& outputs, DispatchKeySet keys);

const DerivativeDef* find_derivative(OpId id) {
  const auto& t = table();
  return id < t.size() ? t[id].get() : nullptr;
}

void add_derivatives(OpRegistry& ops, std::vector<DerivativeDef> defs) {
  auto& t = table();
  for (DerivativeDef& def : defs) {
    const OpDef* found = ops.find(def.op);
    KILN_CHECK(found != nullptr, Error, "derivative table: no op named '{}'", def.op);
    KILN_CHECK(def.backward != nullptr, Error, "derivative table: '{}' has no formula", def.op);
    OpDef& op = ops.get_mutable(found->id);
    KILN_CHECK(!op.has_derivative, Error, "derivative table: '{}' has two formulas", def.op);
    KILN_CHECK(op.composite == nullptr, Error,
               "derivative table: '{}' is a composite op; autograd differentiates the ops it "
               "calls, so it needs no formula",
               def.op);
    op.has_derivative = true;
    if (t.size() <= op.id) t.resize(op.id + 1);
    t[op.id] = std::make_unique<DerivativeDef>(std::move(def));
  }
}

// Runs once every op family is in the table (Note [Extending the op table]).
void register_autograd(OpRegistry& ops) {
  dispatch::set_fallback(DispatchKey::Autograd, autograd_handler);
  register_unary_derivatives(ops);
  register_binary_derivatives(ops);
  register_ternary_derivatives(ops);
  register_reduce_derivatives(ops);
  register_linalg_derivatives(ops);
  register_nn_derivatives(ops);
  register_shape_derivatives(ops);
  register_index_derivatives(ops);
  register_view_derivatives(ops);
  register_copy_derivatives(ops);
}

namespace {
const bool registered = [] {
  OpRegistry::add_extension(register_autograd);
  return true;
}();
}  // namespace

}  // namespace kiln::autograd
