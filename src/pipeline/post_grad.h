// The post-grad pass list (Note [Post-grad passes]).
#pragma once

#include <string>
#include <string_view>

#include "src/graph/graph.h"

namespace kiln::pipeline {

// What the `post_grad` pass makes: the rewritten graph, and one line per rewrite that changed it.
struct PostGradGraph {
  graph::Graph graph;
  std::string changes;
};

// Runs the post-grad list over `g`.
PostGradGraph run_post_grad_passes(graph::Graph g);

// Adds a rewrite to the list (after common subexpression elimination, before dead code
// elimination): every match of `pattern` is replaced by `replacement`, both in the graph text
// format (Note [Graph patterns]). The pattern's placeholders match any value whatever its dtype:
// a pattern must be exact for every dtype it can meet. ValueError for text that does not parse
// or a pattern the matcher rejects. Returns an id for unregister_post_grad_pattern.
int register_post_grad_pattern(std::string name, std::string_view pattern,
                               std::string_view replacement);
void unregister_post_grad_pattern(int id);
// The registered patterns, as text: part of the graph cache's key, so that a program made with
// other rewrites is not reused.
std::string post_grad_fingerprint();

}  // namespace kiln::pipeline
