// Generic graph passes: dead code elimination and common subexpression elimination.
//
// Note [CSE and mutation]
// Two identical calls compute the same value only if nothing they read changed in between and
// neither result is changed afterwards. So CSE (1) forgets every earlier candidate when it passes
// a node that mutates (an in-place op, or an op whose schema marks an argument `!`): the inputs of
// the earlier calls may have changed; and (2) never merges a call whose output is mutated later,
// directly or through a view of it (a view's base is treated as mutated when the view is): merging
// `a = clone(x); b = clone(x); add_(b, 1)` would make `a` see the add. Views of the same base are
// still merged: they alias the same memory anyway. (3) Two calls that are both returned (or whose
// views are) are never merged: the caller would get one tensor twice where eager code gives two,
// and an in-place update of one would show in the other.
#include <unordered_map>
#include <unordered_set>

#include "src/graph/graph.h"
#include "src/graph/schema.h"

namespace kiln::graph {

int eliminate_dead_code(Graph& g) {
  int removed = 0;
  std::vector<Node*> calls = g.calls();
  for (auto it = calls.rbegin(); it != calls.rend(); ++it) {
    Node* node = *it;
    if (node->has_side_effects()) continue;
    bool used = false;
    for (const Value* v : node->outputs()) used |= !v->users().empty();
    if (used) continue;
    g.erase_node(node);
    ++removed;
  }
  return removed;
}

namespace {

// Values written by some node, closed over view bases (Note [CSE and mutation]).
std::unordered_set<const Value*> mutated_values(const Graph& g) {
  std::unordered_set<const Value*> mutated;
  const std::vector<Node*> calls = g.calls();
  for (const Node* node : calls) {
    if (!node->mutates()) continue;
    const Schema& schema = schema_of(node->op_def());
    for (size_t i = 0; i < node->args().size(); ++i) {
      const bool written = (i == 0 && node->op_def().has_tag(kTagInplace)) ||
                           (i < schema.args.size() && schema.args[i].mutated);
      if (written)
        for (const Value* v : node->args()[i].values()) mutated.insert(v);
    }
  }
  for (auto it = calls.rbegin(); it != calls.rend(); ++it) {
    const Node* node = *it;
    if (!node->op_def().has_tag(kTagView) || node->args().empty() || !node->args()[0].is_value())
      continue;
    for (const Value* out : node->outputs())
      if (mutated.count(out) != 0) mutated.insert(node->args()[0].as_value());
  }
  return mutated;
}

// Values the graph returns, closed over view bases: a view that is returned shares its base's
// memory with the caller (Note [CSE and mutation], rule 3).
std::unordered_set<const Value*> returned_values(const Graph& g) {
  std::unordered_set<const Value*> returned(g.outputs().begin(), g.outputs().end());
  const std::vector<Node*> calls = g.calls();
  for (auto it = calls.rbegin(); it != calls.rend(); ++it) {
    const Node* node = *it;
    if (!node->op_def().has_tag(kTagView) || node->args().empty() || !node->args()[0].is_value())
      continue;
    for (const Value* out : node->outputs())
      if (returned.count(out) != 0) returned.insert(node->args()[0].as_value());
  }
  return returned;
}

bool any_of_outputs_in(const Node& node, const std::unordered_set<const Value*>& set) {
  for (const Value* v : node.outputs())
    if (set.count(v) != 0) return true;
  return false;
}

// Equal calls hash equally: numbers hash by their value as the op sees it (constants_equal).
size_t call_hash(const Node& n) {
  size_t h = std::hash<OpId>()(n.op());
  auto mix = [&h](size_t x) { h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (const Arg& a : n.args()) {
    mix(static_cast<size_t>(a.kind()));
    if (a.is_value()) {
      mix(std::hash<const void*>()(a.as_value()));
    } else if (a.is_list()) {
      for (const Value* v : a.as_list()) mix(std::hash<const void*>()(v));
    } else {
      const IValue& c = a.as_constant();
      // A symbolic int hashes by its text: its value is not known here, and reading it as a
      // number would guard (specialize) it.
      const bool number = (c.is_int() && !c.to_sym_int().is_symbolic()) || c.is_double() ||
                          c.is_bool() || c.is_scalar();
      mix(number ? std::hash<double>()(c.scalar().to_double())
                 : std::hash<std::string>()(constant_to_string(c)));
    }
  }
  return h;
}

bool same_call(const Node& a, const Node& b) {
  if (a.op() != b.op() || a.args().size() != b.args().size() ||
      a.outputs().size() != b.outputs().size() || a.grad_mode() != b.grad_mode())
    return false;
  for (size_t i = 0; i < a.args().size(); ++i)
    if (!args_equal(a.args()[i], b.args()[i])) return false;
  // Two calls of a higher-order op on the same operands compute the same only with the same
  // bodies: the same subgraph objects (clones share them), not equal-looking ones.
  if (a.subgraphs().size() != b.subgraphs().size()) return false;
  for (size_t i = 0; i < a.subgraphs().size(); ++i)
    if (a.subgraphs()[i].graph != b.subgraphs()[i].graph) return false;
  return true;
}

}  // namespace

int eliminate_common_subexpressions(Graph& g) {
  const std::unordered_set<const Value*> mutated = mutated_values(g);
  const std::unordered_set<const Value*> returned = returned_values(g);
  std::unordered_map<size_t, std::vector<Node*>> seen;  // call_hash -> candidates
  int removed = 0;
  for (Node* node : g.calls()) {
    if (node->mutates()) {
      seen.clear();
      continue;
    }
    if (node->has_side_effects()) continue;
    bool output_mutated = false;
    for (const Value* v : node->outputs()) output_mutated |= mutated.count(v) != 0;
    if (output_mutated) continue;
    std::vector<Node*>& candidates = seen[call_hash(*node)];
    Node* match = nullptr;
    const bool node_returned = any_of_outputs_in(*node, returned);
    for (Node* c : candidates)
      if (same_call(*c, *node) && !(node_returned && any_of_outputs_in(*c, returned))) match = c;
    if (match == nullptr) {
      candidates.push_back(node);
      continue;
    }
    for (size_t i = 0; i < node->outputs().size(); ++i)
      g.replace_all_uses(node->outputs()[i], match->outputs()[i]);
    g.erase_node(node);
    ++removed;
  }
  return removed;
}

}  // namespace kiln::graph
