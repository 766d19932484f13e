// See Note [Replacements reach the backend] in replacements.h.
#include "src/capture/replacements.h"

namespace kiln::capture {
namespace {

SymInt simplified(SymInt s, const sym::ShapeEnv& env) {
  return s.is_symbolic() ? SymInt::from_expr(env.simplify(s.expr())) : s;
}

void simplify_all(SymDimVector& v, const sym::ShapeEnv& env) {
  for (SymInt& s : v) s = simplified(s, env);
}

// A constant argument with its symbolic ints simplified, or nullopt when it has none.
std::optional<IValue> simplified_constant(const IValue& c, const sym::ShapeEnv& env) {
  if (c.is_int() && c.to_sym_int().is_symbolic()) return IValue(simplified(c.to_sym_int(), env));
  if (c.is_int_list()) {
    SymDimVector list(c.sym_int_list().begin(), c.sym_int_list().end());
    bool symbolic = false;
    for (SymInt s : list) symbolic |= s.is_symbolic();
    if (!symbolic) return std::nullopt;
    simplify_all(list, env);
    return IValue(std::move(list));
  }
  return std::nullopt;
}

}  // namespace

graph::Graph simplified_for_backend(const graph::Graph& graph, const sym::ShapeEnv& env) {
  graph::Graph g = graph.clone();
  for (graph::Node* node : g.nodes()) {
    for (graph::Value* v : node->outputs()) {
      graph::TensorMeta& m = v->mutable_meta();
      simplify_all(m.sizes, env);
      simplify_all(m.strides, env);
      m.offset = simplified(m.offset, env);
    }
    if (node->kind() != graph::NodeKind::Call) continue;
    // Bodies are simplified alike, so that their metas still match the call's (Note [Subgraphs
    // of a higher-order op]: immutable, so new ones replace them).
    if (!node->subgraphs().empty()) {
      std::vector<graph::Subgraph> bodies;
      for (const graph::Subgraph& sub : node->subgraphs())
        bodies.push_back({sub.name, std::make_shared<const graph::Graph>(
                                        simplified_for_backend(*sub.graph, env))});
      node->set_subgraphs(std::move(bodies));
    }
    for (size_t i = 0; i < node->args().size(); ++i) {
      const graph::Arg& arg = node->args()[i];
      if (!arg.is_constant()) continue;
      if (std::optional<IValue> c = simplified_constant(arg.as_constant(), env))
        node->set_arg(i, graph::Arg::constant(std::move(*c)));
    }
  }
  return g;
}

}  // namespace kiln::capture
