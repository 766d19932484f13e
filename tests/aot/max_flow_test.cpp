// Dinic's max-flow (src/aot/max_flow.h) on graphs whose maximum flow and minimum cut are known.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "kiln/error.h"
#include "src/aot/max_flow.h"

namespace kiln::aot {
namespace {

TEST(MaxFlow, ClassicSixVertexNetwork) {
  // CLRS figure 26.1: s=0, v1..v4 = 1..4, t=5; the maximum flow is 23.
  MaxFlow f(6);
  f.add_edge(0, 1, 16);
  f.add_edge(0, 2, 13);
  f.add_edge(2, 1, 4);
  f.add_edge(1, 3, 12);
  f.add_edge(3, 2, 9);
  f.add_edge(2, 4, 14);
  f.add_edge(4, 3, 7);
  f.add_edge(3, 5, 20);
  f.add_edge(4, 5, 4);
  EXPECT_EQ(f.solve(0, 5), 23);
  // The minimum cut is {s, v1, v2, v4} | {v3, t}: edges v1->v3 (12), v4->v3 (7), v4->t (4).
  const std::vector<bool>& side = f.source_side();
  EXPECT_EQ(side, (std::vector<bool>{true, true, true, false, true, false}));
  int64_t cut = 0;
  for (int e : f.cut_edges()) cut += f.flow_on(e);
  EXPECT_EQ(cut, 23);
  EXPECT_EQ(f.cut_edges().size(), 3u);
}

TEST(MaxFlow, InfiniteEdgesAreNeverCut) {
  // s -inf-> a -5-> b -inf-> t and s -inf-> c -3-> t: the cut takes the finite edges only.
  MaxFlow f(5);
  f.add_edge(0, 1, MaxFlow::kInfinite);
  const int ab = f.add_edge(1, 2, 5);
  f.add_edge(2, 4, MaxFlow::kInfinite);
  f.add_edge(0, 3, MaxFlow::kInfinite);
  const int ct = f.add_edge(3, 4, 3);
  EXPECT_EQ(f.solve(0, 4), 8);
  std::vector<int> cut = f.cut_edges();
  std::sort(cut.begin(), cut.end());
  EXPECT_EQ(cut, (std::vector<int>{ab, ct}));
}

TEST(MaxFlow, NoFiniteCutReportsInfinity) {
  MaxFlow f(3);
  f.add_edge(0, 1, MaxFlow::kInfinite);
  f.add_edge(1, 2, MaxFlow::kInfinite);
  EXPECT_GE(f.solve(0, 2), MaxFlow::kInfinite);
}

TEST(MaxFlow, DisconnectedSinkHasZeroFlow) {
  MaxFlow f(4);
  f.add_edge(0, 1, 7);
  f.add_edge(2, 3, 7);
  EXPECT_EQ(f.solve(0, 3), 0);
  EXPECT_TRUE(f.cut_edges().empty());
}

// On random graphs the flow equals the capacity of the cut it reports, and that cut is minimum
// among every cut of a brute-force enumeration (8 vertices: 2^6 source sides).
TEST(MaxFlow, RandomGraphsMatchBruteForceMinimumCut) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    const int n = 8;
    std::vector<std::array<int64_t, 3>> edges;
    MaxFlow f(n);
    for (int k = 0; k < 20; ++k) {
      const int a = static_cast<int>(rng() % n), b = static_cast<int>(rng() % n);
      if (a == b) continue;
      const int64_t c = static_cast<int64_t>(rng() % 20);
      edges.push_back({a, b, c});
      f.add_edge(a, b, c);
    }
    const int64_t flow = f.solve(0, n - 1);
    int64_t best = MaxFlow::kInfinite;
    for (int mask = 0; mask < (1 << (n - 2)); ++mask) {
      auto source_side = [&](int v) { return v == 0 || (v != n - 1 && (mask >> (v - 1)) & 1); };
      int64_t cut = 0;
      for (const auto& [a, b, c] : edges)
        if (source_side(static_cast<int>(a)) && !source_side(static_cast<int>(b))) cut += c;
      best = std::min(best, cut);
    }
    EXPECT_EQ(flow, best) << "trial " << trial;
    int64_t reported = 0;
    const std::vector<bool>& side = f.source_side();
    for (const auto& [a, b, c] : edges)
      if (side[a] && !side[b]) reported += c;
    EXPECT_EQ(reported, flow) << "trial " << trial;
  }
}

TEST(MaxFlow, BadInputsRaise) {
  MaxFlow f(2);
  EXPECT_THROW(f.add_edge(0, 2, 1), IndexError);
  EXPECT_THROW(f.add_edge(-1, 1, 1), IndexError);
  EXPECT_THROW(f.add_edge(0, 1, -3), ValueError);
  EXPECT_THROW(f.solve(1, 1), ValueError);
}

}  // namespace
}  // namespace kiln::aot
