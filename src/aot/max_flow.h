// Maximum flow and minimum cut on a directed graph with integer capacities (Dinic's algorithm),
// written for the min-cut partitioner (src/aot/partition.cpp).
//
// Dinic's algorithm alternates a breadth-first search that labels every vertex with its distance
// from the source in the residual graph with a depth-first search that pushes a blocking flow
// along edges that go one level further. Each phase strictly increases the source-sink distance,
// so there are at most V phases, each O(VE): O(V^2 E) in all, far less on the joint graphs of a
// model (a few thousand vertices, mostly unit-depth paths).
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::aot {

class MaxFlow {
 public:
  // Capacities are bytes, so int64; kInfinite is an edge the cut may never take.
  static constexpr int64_t kInfinite = int64_t{1} << 60;

  explicit MaxFlow(int num_vertices);

  int add_vertex();
  int num_vertices() const { return static_cast<int>(adjacency_.size()); }
  // Adds the edge from -> to with `capacity` (>= 0); returns its id.
  int add_edge(int from, int to, int64_t capacity);

  // Runs the algorithm; returns the value of the maximum flow (kInfinite or more: no finite cut
  // separates the two). Call once.
  int64_t solve(int source, int sink);

  // After solve: vertices reachable from the source in the residual graph (the source side of a
  // minimum cut).
  const std::vector<bool>& source_side() const { return reachable_; }
  // After solve: ids of the edges that cross the minimum cut (source side -> sink side). Their
  // capacities sum to the flow.
  std::vector<int> cut_edges() const;
  int edge_from(int edge) const { return edges_[edge ^ 1].to; }
  int edge_to(int edge) const { return edges_[edge].to; }
  int64_t flow_on(int edge) const { return edges_[edge ^ 1].capacity; }

 private:
  struct Edge {
    int to;
    int64_t capacity;  // residual capacity
  };
  bool label_levels(int source, int sink);
  int64_t push(int vertex, int sink, int64_t limit);

  std::vector<Edge> edges_;  // edge 2k is an edge, 2k+1 its reverse
  std::vector<std::vector<int>> adjacency_;
  std::vector<int> level_;
  std::vector<size_t> next_;  // per vertex, the first adjacency entry not yet saturated
  std::vector<bool> reachable_;
};

}  // namespace kiln::aot
