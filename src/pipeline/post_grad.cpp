// Note [Post-grad passes]
// After autograd and decomposition and before lowering, a graph is functional (but for the
// copy-backs at its end, Note [Copy-back inside the graph]) and made of primitives: the place for
// graph rewrites, as Inductor's post-grad passes are. The list, in order:
//   1. common subexpression elimination (Note [CSE and mutation] in src/graph/passes.cpp): random
//      ops, mutated values and values returned twice are never merged;
//   2. the registered patterns, in registration order (Note [Graph patterns]); there are no
//      built-in ones yet, custom passes register theirs;
//   3. dead code elimination (calls with side effects stay: mutation, random ops).
// The pass's output lists what each rewrite changed, then the graph.
#include "src/pipeline/post_grad.h"

#include <fmt/format.h>

#include <mutex>
#include <vector>

#include "kiln/error.h"
#include "src/graph/pattern.h"

namespace kiln::pipeline {
namespace {

struct Pattern {
  int id = 0;
  std::string name;
  graph::Graph pattern;
  graph::Graph replacement;
};

struct Registry {
  std::mutex mutex;
  std::vector<Pattern> patterns;
  int next_id = 0;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

int register_post_grad_pattern(std::string name, std::string_view pattern,
                               std::string_view replacement) {
  Pattern p{0, std::move(name), graph::parse_graph(pattern), graph::parse_graph(replacement)};
  KILN_CHECK(p.pattern.placeholders().size() == p.replacement.placeholders().size() &&
                 p.pattern.outputs().size() == p.replacement.outputs().size(),
             ValueError,
             "register_post_grad_pattern: '{}': the pattern has {} inputs and {} outputs, the "
             "replacement {} and {}; they must agree",
             p.name, p.pattern.placeholders().size(), p.pattern.outputs().size(),
             p.replacement.placeholders().size(), p.replacement.outputs().size());
  graph::Graph probe = p.pattern.clone();
  graph::match(p.pattern, probe);  // rejects a malformed pattern now, not at the first compile
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  p.id = r.next_id++;
  r.patterns.push_back(std::move(p));
  return r.patterns.back().id;
}

void unregister_post_grad_pattern(int id) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::erase_if(r.patterns, [id](const Pattern& p) { return p.id == id; });
}

std::string post_grad_fingerprint() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::string text;
  for (const Pattern& p : r.patterns)
    text += fmt::format("pattern {}\n{}{}", p.name, graph::to_string(p.pattern),
                        graph::to_string(p.replacement));
  return text;
}

PostGradGraph run_post_grad_passes(graph::Graph g) {
  std::string changes;
  const auto note = [&changes](std::string_view what, int count) {
    if (count > 0) changes += fmt::format("# {}: {} changed\n", what, count);
  };
  note("common subexpression elimination", graph::eliminate_common_subexpressions(g));
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    for (const Pattern& p : r.patterns)
      note(fmt::format("pattern '{}'", p.name), graph::replace(g, p.pattern, p.replacement));
  }
  note("dead code elimination", graph::eliminate_dead_code(g));
  return {std::move(g), std::move(changes)};
}

}  // namespace kiln::pipeline
