#include "src/aot/max_flow.h"

#include <algorithm>
#include <queue>

#include "kiln/error.h"

namespace kiln::aot {

MaxFlow::MaxFlow(int num_vertices) : adjacency_(num_vertices) {}

int MaxFlow::add_vertex() {
  adjacency_.emplace_back();
  return num_vertices() - 1;
}

int MaxFlow::add_edge(int from, int to, int64_t capacity) {
  KILN_CHECK(from >= 0 && from < num_vertices() && to >= 0 && to < num_vertices(), IndexError,
             "MaxFlow::add_edge: vertex {} or {} is out of range [0, {})", from, to,
             num_vertices());
  KILN_CHECK(capacity >= 0, ValueError, "MaxFlow::add_edge: capacity {} is negative", capacity);
  const int id = static_cast<int>(edges_.size());
  edges_.push_back({to, std::min(capacity, kInfinite)});
  edges_.push_back({from, 0});
  adjacency_[from].push_back(id);
  adjacency_[to].push_back(id + 1);
  return id;
}

bool MaxFlow::label_levels(int source, int sink) {
  level_.assign(adjacency_.size(), -1);
  std::queue<int> frontier;
  level_[source] = 0;
  frontier.push(source);
  while (!frontier.empty()) {
    const int v = frontier.front();
    frontier.pop();
    for (int e : adjacency_[v]) {
      const Edge& edge = edges_[e];
      if (edge.capacity > 0 && level_[edge.to] < 0) {
        level_[edge.to] = level_[v] + 1;
        frontier.push(edge.to);
      }
    }
  }
  return level_[sink] >= 0;
}

// Pushes up to `limit` from `vertex` towards the sink along edges one level further; returns what
// it pushed. Explicit recursion depth is bounded by the BFS distance (at most V).
int64_t MaxFlow::push(int vertex, int sink, int64_t limit) {
  if (vertex == sink) return limit;
  for (size_t& i = next_[vertex]; i < adjacency_[vertex].size(); ++i) {
    const int e = adjacency_[vertex][i];
    Edge& edge = edges_[e];
    if (edge.capacity <= 0 || level_[edge.to] != level_[vertex] + 1) continue;
    const int64_t pushed = push(edge.to, sink, std::min(limit, edge.capacity));
    if (pushed > 0) {
      edge.capacity -= pushed;
      edges_[e ^ 1].capacity += pushed;
      return pushed;
    }
  }
  return 0;
}

int64_t MaxFlow::solve(int source, int sink) {
  KILN_CHECK(source != sink, ValueError, "MaxFlow::solve: source and sink are both vertex {}",
             source);
  int64_t flow = 0;
  while (flow < kInfinite && label_levels(source, sink)) {
    next_.assign(adjacency_.size(), 0);
    while (int64_t pushed = push(source, sink, kInfinite)) {
      flow += pushed;
      if (flow >= kInfinite) break;
    }
  }
  // The source side of the cut: what the last (failed) search reached.
  reachable_.assign(adjacency_.size(), false);
  std::queue<int> frontier;
  reachable_[source] = true;
  frontier.push(source);
  while (!frontier.empty()) {
    const int v = frontier.front();
    frontier.pop();
    for (int e : adjacency_[v]) {
      if (edges_[e].capacity > 0 && !reachable_[edges_[e].to]) {
        reachable_[edges_[e].to] = true;
        frontier.push(edges_[e].to);
      }
    }
  }
  return flow;
}

std::vector<int> MaxFlow::cut_edges() const {
  std::vector<int> cut;
  for (size_t e = 0; e < edges_.size(); e += 2) {
    if (reachable_[edges_[e ^ 1].to] && !reachable_[edges_[e].to])
      cut.push_back(static_cast<int>(e));
  }
  return cut;
}

}  // namespace kiln::aot
