// The decomposition pass (Note [What a decomposition keeps] in decompose.h) and its table.
#include "src/graph/decompose.h"

#include <algorithm>
#include <unordered_set>

#include <mutex>

#include "src/sym/shape_env.h"

namespace kiln::graph {

void DecompositionTable::add(std::string_view op, DecompositionFn fn) {
  const OpId id = op_id(op);
  if (by_id_.size() <= id) by_id_.resize(id + 1, nullptr);
  KILN_CHECK(by_id_[id] == nullptr, ValueError, "decompose: {} has two decompositions", op);
  by_id_[id] = fn;
  entries_.emplace_back(id, fn);
}

DecompositionFn DecompositionTable::find(OpId op) const {
  return op < by_id_.size() ? by_id_[op] : nullptr;
}

namespace {

struct Fillers {
  std::mutex mutex;
  std::vector<void (*)(DecompositionTable&)> fill;
  bool built = false;
};
Fillers& fillers() {
  static Fillers f;
  return f;
}

// Built on first use from every registered filler; marks each decomposed op in the op table
// (OpDef::has_decomposition), so `kiln ops` and the op harness can list them.
const DecompositionTable& table() {
  static const DecompositionTable t = [] {
    DecompositionTable t;
    Fillers& f = fillers();
    std::lock_guard lock(f.mutex);
    for (auto* fill : f.fill) fill(t);
    f.built = true;
    for (const auto& [id, fn] : t.entries())
      OpRegistry::instance().get_mutable(id).has_decomposition = true;
    return t;
  }();
  return t;
}

// A replacement must be a value the decomposition created, with the output's exact meta.
void check_replacement(const Node& node, size_t i, const Value* v, const NodeRewriter& b) {
  const std::vector<Node*>& emitted = b.emitted();
  KILN_CHECK(v != nullptr && v->producer() != nullptr &&
                 std::find(emitted.begin(), emitted.end(), v->producer()) != emitted.end(),
             Error,
             "decompose: internal error: the decomposition of `{}` returned {} for output {}, "
             "which it did not create",
             to_string(node), v == nullptr ? std::string("null") : v->name(), i);
  TensorMeta expected = node.output(i)->meta();
  expected.requires_grad = v->meta().requires_grad;
  // Strides carry no information for a size-1 dim or an empty tensor (an empty output whose
  // symbolic row stride became 0 once the trace's replacements applied is still [1, 0]).
  const auto strides_that_matter = [](TensorMeta m) {
    const auto is = [](SymInt s, int64_t v) { return !s.is_symbolic() && s.raw() == v; };
    const bool empty =
        std::any_of(m.sizes.begin(), m.sizes.end(), [&](SymInt s) { return is(s, 0); });
    for (size_t d = 0; d < m.sizes.size(); ++d)
      if (empty || is(m.sizes[d], 1)) m.strides[d] = 0;
    return m;
  };
  KILN_CHECK(strides_that_matter(expected) == strides_that_matter(v->meta()), Error,
             "decompose: internal error: the decomposition of `{}` gives output {} the meta {}, "
             "but the op's is {}",
             to_string(node), i, to_string(v->meta()), to_string(node.output(i)->meta()));
}

// Removes what a failed decomposition emitted (nothing outside it uses those nodes yet), so an
// error leaves the graph as it was.
void undo(Graph& g, const NodeRewriter& b) {
  const std::vector<Node*>& emitted = b.emitted();
  for (auto it = emitted.rbegin(); it != emitted.rend(); ++it) g.erase_node(*it);
}

// Rewrites one call; returns the nodes it created.
std::vector<Node*> decompose_node(Graph& g, Node* node, DecompositionFn fn) {
  NodeRewriter b(g, *node);
  std::vector<Value*> replacements;
  try {
    replacements = fn(b);
    KILN_CHECK(replacements.size() == node->outputs().size(), Error,
               "decompose: internal error: the decomposition of `{}` returned {} values for {} "
               "outputs",
               to_string(*node), replacements.size(), node->outputs().size());
    for (size_t i = 0; i < replacements.size(); ++i)
      check_replacement(*node, i, replacements[i], b);
  } catch (...) {
    undo(g, b);
    throw;
  }
  for (size_t i = 0; i < replacements.size(); ++i)
    replacements[i]->mutable_meta().requires_grad = node->output(i)->meta().requires_grad;
  for (size_t i = 0; i < replacements.size(); ++i)
    g.replace_all_uses(node->output(i), replacements[i]);
  g.erase_node(node);
  return b.emitted();
}

// Decompositions call other decomposed ops (layer_norm -> native_layer_norm -> mean ...); the
// deepest chain is a few levels. A cycle would be a bug in the table.
constexpr int kMaxRounds = 16;

}  // namespace

void add_decompositions(void (*fill)(DecompositionTable& table)) {
  Fillers& f = fillers();
  std::lock_guard lock(f.mutex);
  KILN_CHECK(!f.built, ValueError,
             "add_decompositions: the decomposition table is already in use; register "
             "decompositions from a static initializer");
  f.fill.push_back(fill);
}

bool has_decomposition(OpId op) { return table().find(op) != nullptr; }

std::vector<std::string> decomposed_op_names() {
  std::vector<std::string> names;
  for (const auto& [id, fn] : table().entries())
    names.push_back(OpRegistry::instance().get(id).name);
  std::sort(names.begin(), names.end());
  return names;
}

void decompose(Graph& g) { decompose(g, {}); }

void decompose(Graph& g, std::span<const std::string_view> keep) {
  const DecompositionTable& t = table();
  std::unordered_set<OpId> kept;
  for (std::string_view name : keep) kept.insert(op_id(name));
  // Note [Decompositions never guard]
  // The graph was traced under guards that are already final (the tracer hands them to the
  // compile cache before the backend runs), so a guard recorded now would be lost and the compiled
  // code reused where it is wrong. The meta functions of the emitted ops therefore run with no
  // ShapeEnv: one that would have to guard on a symbolic size raises instead (decompositions are
  // written to stay symbolic; a group_norm whose channel count is symbolic is the known case).
  //
  // So a decomposition of a node with symbolic sizes can fail where the traced op did not need a
  // guard: masked_fill accepts a mask that broadcasts to self, while the where it decomposes into
  // broadcasts both ways and asks whether `-s0 + 9` equals 8. Such a node is kept whole: it runs
  // as an extern call of its eager kernel, which is always right (kiln-fuzz --dynamic: seed 3
  // index 71, seed 5 index 10). A failure on a node with static sizes is a bug and still raises.
  sym::ShapeEnv::Scope no_guards(nullptr);
  std::unordered_set<Node*> created, whole;
  auto symbolic = [](const Node& node) {
    for (const Value* v : node.inputs())
      if (v->meta().is_symbolic()) return true;
    for (const Value* v : node.outputs())
      if (v->meta().is_symbolic()) return true;
    return false;
  };
  for (int round = 0;; ++round) {
    bool changed = false;
    for (Node* node : g.calls()) {
      const DecompositionFn fn = kept.count(node->op()) ? nullptr : t.find(node->op());
      if (fn == nullptr || whole.count(node)) continue;
      KILN_CHECK(round < kMaxRounds, Error,
                 "decompose: internal error: `{}` is still decomposable after {} rounds (a cycle "
                 "in the decomposition table?)",
                 to_string(*node), kMaxRounds);
      try {
        for (Node* n : decompose_node(g, node, fn)) created.insert(n);
      } catch (const Error&) {
        if (!symbolic(*node)) throw;
        whole.insert(node);
        continue;
      }
      changed = true;
    }
    if (!changed) break;
  }
  // Parts of a decomposition nobody reads (the mean of a layer_norm whose statistics are
  // unused): removed in reverse program order, so their own inputs become unused in turn.
  const std::vector<Node*> calls = g.calls();
  for (auto it = calls.rbegin(); it != calls.rend(); ++it) {
    Node* node = *it;
    if (created.count(node) == 0 || node->has_side_effects()) continue;
    bool used = false;
    for (const Value* v : node->outputs()) used |= !v->users().empty();
    if (!used) g.erase_node(node);
  }
}

}  // namespace kiln::graph
