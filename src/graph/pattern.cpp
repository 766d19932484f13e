// See Note [Graph patterns] in pattern.h.
#include "src/graph/pattern.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "src/graph/meta_inference.h"

namespace kiln::graph {
namespace {

// The bindings of one match attempt: pattern values/nodes to graph values/nodes.
struct Binding {
  std::unordered_map<const Value*, Value*> values;
  std::unordered_map<const Node*, Node*> nodes;
  std::unordered_set<const Node*> bound_targets;
};

class Matcher {
 public:
  Matcher(const Graph& pattern, const std::unordered_set<const Node*>& taken)
      : pattern_(pattern), taken_(taken) {}

  bool match_value(const Value* pv, Value* gv, Binding& b) const {
    auto it = b.values.find(pv);
    if (it != b.values.end()) return it->second == gv;
    const Node* pn = pv->producer();
    if (pn->kind() == NodeKind::Placeholder) {
      b.values[pv] = gv;
      return true;
    }
    Node* gn = gv->producer();
    if (gn->kind() != NodeKind::Call || gv->output_index() != pv->output_index()) return false;
    if (!match_node(pn, gn, b)) return false;
    b.values[pv] = gv;
    return true;
  }

  bool match_node(const Node* pn, Node* gn, Binding& b) const {
    auto it = b.nodes.find(pn);
    if (it != b.nodes.end()) return it->second == gn;
    if (taken_.count(gn) != 0 || b.bound_targets.count(gn) != 0) return false;
    if (pn->op() != gn->op() || pn->args().size() != gn->args().size() ||
        pn->outputs().size() != gn->outputs().size())
      return false;
    b.nodes[pn] = gn;
    b.bound_targets.insert(gn);
    for (size_t i = 0; i < pn->args().size(); ++i) {
      const Arg& pa = pn->args()[i];
      const Arg& ga = gn->args()[i];
      if (pa.kind() != ga.kind()) return false;
      if (pa.is_value()) {
        if (!match_value(pa.as_value(), ga.as_value(), b)) return false;
      } else if (pa.is_list()) {
        const std::vector<Value*>& pl = pa.as_list();
        const std::vector<Value*>& gl = ga.as_list();
        if (pl.size() != gl.size()) return false;
        for (size_t j = 0; j < pl.size(); ++j) {
          if ((pl[j] == nullptr) != (gl[j] == nullptr)) return false;
          if (pl[j] != nullptr && !match_value(pl[j], gl[j], b)) return false;
        }
      } else if (!constants_equal(pa.as_constant(), ga.as_constant())) {
        return false;
      }
    }
    return true;
  }

  // Matches pattern outputs [i, n) given the bindings so far, searching `candidates` for outputs
  // whose producer is not bound yet.
  bool match_outputs(size_t i, Binding& b, const std::vector<Node*>& candidates) const {
    const std::span<Value* const> outs = pattern_.outputs();
    if (i == outs.size()) return true;
    const Value* pv = outs[i];
    if (b.values.count(pv) != 0 || b.nodes.count(pv->producer()) != 0) {
      Value* gv = b.values.count(pv) != 0 ? b.values.at(pv)
                                          : b.nodes.at(pv->producer())->output(pv->output_index());
      Binding next = b;
      if (!match_value(pv, gv, next) || !match_outputs(i + 1, next, candidates)) return false;
      b = std::move(next);
      return true;
    }
    for (Node* gn : candidates) {
      if (static_cast<size_t>(pv->output_index()) >= gn->outputs().size()) continue;
      Binding next = b;
      if (match_value(pv, gn->output(pv->output_index()), next) &&
          match_outputs(i + 1, next, candidates)) {
        b = std::move(next);
        return true;
      }
    }
    return false;
  }

 private:
  const Graph& pattern_;
  const std::unordered_set<const Node*>& taken_;
};

void check_pattern(const Graph& pattern) {
  KILN_CHECK(!pattern.outputs().empty(), ValueError,
             "pattern: the pattern has no outputs; end it with `return (...)`");
  KILN_CHECK(pattern.outputs()[0]->producer()->kind() == NodeKind::Call, ValueError,
             "pattern: the first output {} must be computed by a call, not be a placeholder",
             pattern.outputs()[0]->name());
  // Every call must feed an output: a dead pattern node would match anything unchecked.
  std::unordered_set<const Node*> live;
  std::vector<const Node*> work;
  for (const Value* v : pattern.outputs()) work.push_back(v->producer());
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    if (!live.insert(n).second) continue;
    for (const Value* v : n->inputs()) work.push_back(v->producer());
  }
  for (const Node* n : pattern.calls())
    KILN_CHECK(live.count(n) != 0, ValueError,
               "pattern: `{}` does not contribute to the pattern's outputs; remove it or return it",
               to_string(*n));
}

}  // namespace

std::vector<Match> match(const Graph& pattern, Graph& g) {
  check_pattern(pattern);
  const std::vector<Node*> calls = g.calls();
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < calls.size(); ++i) position[calls[i]] = i;
  const Node* anchor = pattern.outputs()[0]->producer();
  const std::vector<Node*> pattern_calls = pattern.calls();
  const std::unordered_set<const Value*> pattern_outputs(pattern.outputs().begin(),
                                                         pattern.outputs().end());

  std::unordered_set<const Node*> taken;
  std::vector<Match> matches;
  Matcher matcher(pattern, taken);
  for (Node* candidate : calls) {
    Binding b;
    if (!matcher.match_node(anchor, candidate, b) || !matcher.match_outputs(0, b, calls)) continue;
    Match m;
    for (Value* p : pattern.placeholders()) {
      auto it = b.values.find(p);
      m.wildcards.push_back(it == b.values.end() ? nullptr : it->second);
    }
    for (const Value* v : pattern.outputs()) m.outputs.push_back(b.values.at(v));
    for (const Node* pn : pattern_calls) m.nodes.push_back(b.nodes.at(pn));
    std::sort(m.nodes.begin(), m.nodes.end(),
              [&](Node* x, Node* y) { return position.at(x) < position.at(y); });
    const std::unordered_set<const Node*> inside(m.nodes.begin(), m.nodes.end());
    const size_t last = position.at(m.nodes.back());
    bool ok = true;
    for (const Node* pn : pattern_calls) {
      const Node* gn = b.nodes.at(pn);
      for (size_t i = 0; i < pn->outputs().size(); ++i) {
        for (const Node* user : gn->outputs()[i]->users()) {
          if (inside.count(user) != 0) continue;
          // An intermediate value read outside the match, or an output read before the point
          // where its replacement will be defined.
          if (pattern_outputs.count(pn->outputs()[i]) == 0) ok = false;
          if (user->kind() == NodeKind::Call && position.at(user) < last) ok = false;
        }
      }
    }
    if (!ok) continue;
    taken.insert(m.nodes.begin(), m.nodes.end());
    matches.push_back(std::move(m));
  }
  return matches;
}

int replace(Graph& g, const Graph& pattern, const ReplacementBuilder& build) {
  std::vector<Match> matches = match(pattern, g);
  // A later match may read an earlier match's output (mul(mul(x, 2), 2)): follow replacements.
  std::unordered_map<const Value*, Value*> replaced;
  auto current = [&](Value* v) {
    for (auto it = replaced.find(v); it != replaced.end(); it = replaced.find(v)) v = it->second;
    return v;
  };
  for (Match& m : matches) {
    for (Value*& w : m.wildcards)
      if (w != nullptr) w = current(w);
    std::vector<Value*> news;
    {
      Graph::InsertPoint at(g, m.nodes.back());
      news = build(g, m);
    }
    KILN_CHECK(news.size() == m.outputs.size(), ValueError,
               "replace: the replacement gives {} values for a pattern with {} outputs",
               news.size(), m.outputs.size());
    for (size_t i = 0; i < news.size(); ++i) {
      g.replace_all_uses(m.outputs[i], news[i]);
      if (news[i] != m.outputs[i]) replaced[m.outputs[i]] = news[i];
    }
    for (auto it = m.nodes.rbegin(); it != m.nodes.rend(); ++it) {
      bool unused = true;
      for (const Value* v : (*it)->outputs()) unused &= v->users().empty();
      if (unused) g.erase_node(*it);
    }
  }
  return static_cast<int>(matches.size());
}

int replace(Graph& g, const Graph& pattern, const Graph& replacement) {
  KILN_CHECK(
      replacement.placeholders().size() == pattern.placeholders().size() &&
          replacement.outputs().size() == pattern.outputs().size(),
      ValueError,
      "replace: the replacement has {} placeholders and {} outputs but the pattern has {} and "
      "{}; they must agree (placeholders are bound by position)",
      replacement.placeholders().size(), replacement.outputs().size(),
      pattern.placeholders().size(), pattern.outputs().size());
  return replace(g, pattern, [&](Graph& target, const Match& m) {
    std::unordered_map<const Value*, Value*> map;
    for (size_t i = 0; i < m.wildcards.size(); ++i) {
      KILN_CHECK(m.wildcards[i] != nullptr || replacement.placeholders()[i]->users().empty(),
                 ValueError, "replace: replacement placeholder {} is not bound by the pattern",
                 replacement.placeholders()[i]->name());
      map[replacement.placeholders()[i]] = m.wildcards[i];
    }
    auto remap = [&](const Arg& a) {
      if (a.is_value()) return Arg::value(map.at(a.as_value()));
      if (a.is_list()) {
        std::vector<Value*> list;
        for (Value* v : a.as_list()) list.push_back(v == nullptr ? nullptr : map.at(v));
        return Arg::list(std::move(list));
      }
      return a;
    };
    for (const Node* n : replacement.calls()) {
      std::vector<Arg> args;
      for (const Arg& a : n->args()) args.push_back(remap(a));
      std::vector<TensorMeta> metas;
      if (auto inferred = infer_output_metas(n->op(), args);
          inferred && inferred->size() == n->outputs().size()) {
        metas = std::move(*inferred);
      } else {
        for (const Value* v : n->outputs()) metas.push_back(v->meta());
      }
      for (size_t i = 0; i < n->outputs().size(); ++i) {
        const std::span<Value* const> outs = replacement.outputs();
        auto it = std::find(outs.begin(), outs.end(), n->outputs()[i]);
        if (it != outs.end()) metas[i] = m.outputs[static_cast<size_t>(it - outs.begin())]->meta();
      }
      std::vector<Value*> created = target.add_call(n->op(), std::move(args), std::move(metas));
      for (size_t i = 0; i < created.size(); ++i) map[n->outputs()[i]] = created[i];
    }
    std::vector<Value*> outs;
    for (const Value* v : replacement.outputs()) outs.push_back(map.at(v));
    return outs;
  });
}

}  // namespace kiln::graph
