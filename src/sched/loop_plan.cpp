#include "src/sched/loop_plan.h"

#include <algorithm>
#include <optional>
#include <set>

#include "src/lower/handlers/dependency_handler.h"
#include "src/lower/index_simplify.h"

namespace kiln::sched {
namespace {

std::vector<ExprPtr> concat(std::vector<ExprPtr> a, const std::vector<ExprPtr>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Every index a node reads or writes with the given loop variables.
void collect_indices(const SchedNode& n, const std::vector<ExprPtr>& vars,
                     const std::vector<ExprPtr>& rvars, std::vector<ExprPtr>& out) {
  lower::DependencyHandler deps;
  n.run_body(deps, vars, rvars);
  for (const auto& a : deps.reads()) out.push_back(a.index);
  for (const auto& a : deps.writes()) out.push_back(a.index);
}

// Whether reduction `n` reads the producer's store (else a producer is not worth the fusion).
bool reads_producer(const SchedNode& n, const std::vector<ExprPtr>& ivars,
                    const std::vector<ExprPtr>& rvars, const lower::MemoryAccess& store) {
  lower::DependencyHandler deps;
  n.run_body(deps, ivars, rvars);
  for (const auto& a : deps.reads())
    if (a.buffer == store.buffer) return true;
  return false;
}

// Note [Sibling reductions share their loops]
// Reductions of one kernel over the same output and reduction loops, none reading another's
// result (a batch norm backward's sums of g and of g * x-hat per channel), run in one loop nest
// whose body updates every accumulator: one pass over the data instead of one per reduction.
// Returns one past the last node of such a run starting at `first` (first + 1: none).
//
// Note [A row's producer shares its reductions' loop]
// The run may also start with a pointwise node over the outer loops and exactly the reductions'
// loops, which the reductions read at the element it writes in the same iteration (softmax's
// exp(x - max), which its sum reads): its store comes first in the shared body, so the row is
// computed and summed in one pass instead of being written and read back by a second loop.
size_t sibling_reductions(const Kernel& k, size_t first, size_t outer,
                          const std::map<std::string, int64_t>& local_buffers) {
  const bool producer = !k.nodes[first].is_reduction();
  const size_t lead = producer ? first + 1 : first;  // the first reduction
  if (lead >= k.nodes.size()) return first + 1;
  const SchedNode& head = k.nodes[lead];
  auto eligible = [&](const SchedNode& n) {
    if (!n.is_reduction() || n.ranges.size() != outer || n.ranges != head.ranges ||
        n.reduction_ranges != head.reduction_ranges || local_buffers.count(n.buffer->name()))
      return false;
    for (ExprPtr r : n.reduction_ranges)
      if (r == sym::integer(0)) return false;
    return true;
  };
  if (!eligible(head)) return first + 1;
  const std::vector<ExprPtr> ivars = lower::loop_vars('i', outer);
  const std::vector<ExprPtr> rvars = lower::loop_vars('r', head.reduction_ranges.size());
  std::set<std::string> written;
  std::optional<lower::MemoryAccess> produced;  // the producer's store
  if (producer) {
    const SchedNode& p = k.nodes[first];
    if (p.ranges != concat(head.ranges, head.reduction_ranges)) return first + 1;
    lower::DependencyHandler deps;
    p.run_body(deps, concat(ivars, rvars), {});
    if (deps.writes().size() != 1) return first + 1;
    produced = deps.writes().front();
  }
  // A reduction may read the producer's element of this iteration, and nothing else any node
  // before it in the run writes.
  auto reads_only_allowed = [&](const SchedNode& n) {
    lower::DependencyHandler deps;
    n.run_body(deps, ivars, rvars);
    for (const auto& a : deps.reads()) {
      if (written.contains(a.buffer)) return false;
      if (produced && a.buffer == produced->buffer && a.index != produced->index) return false;
    }
    return true;
  };
  if (!reads_only_allowed(head)) return first + 1;
  written.insert(head.buffer->name());
  size_t end = lead + 1;
  for (; end < k.nodes.size() && eligible(k.nodes[end]); ++end) {
    if (!reads_only_allowed(k.nodes[end])) break;
    written.insert(k.nodes[end].buffer->name());
  }
  return producer && end == lead + 1 && !reads_producer(k.nodes[lead], ivars, rvars, *produced)
             ? first + 1
             : end;
}

}  // namespace

// Note [Merging loops]
// Adjacent loops d and d+1 merge into one loop over size(d)*size(d+1) when every access moves by
// coefficient(d) == coefficient(d+1) * size(d+1) (contiguous across the two dims, or broadcast
// along both): a (128, 32, 26, 26) pointwise kernel is then one loop of 2.7M elements that
// vectorizes without a tail per row, and a batch norm's statistics over (N, H, W) read H*W
// contiguous elements per (channel, image) in one vector loop instead of H short rows. Codegen
// recovers each original index as (v // inner) % size, which index simplification folds back
// into the linear access. The outer loops of a flat pointwise kernel merge, and the reduction
// loops of each reduction (or run of sibling reductions); an empty reduction does not (merging
// would divide by its zero size).
LoopGroups merge_groups(const std::vector<ExprPtr>& accesses, const std::vector<ExprPtr>& vars,
                        const std::vector<ExprPtr>& sizes) {
  auto mergeable = [&](size_t d) {
    for (ExprPtr e : accesses) {
      auto outer = lower::linear_coefficient(e, vars[d]);
      auto inner = lower::linear_coefficient(e, vars[d + 1]);
      if (!outer || !inner || *outer != sym::mul(*inner, sizes[d + 1])) return false;
    }
    return true;
  };
  LoopGroups groups;
  for (size_t d = vars.size(); d-- > 0;) {
    if (!groups.empty() && mergeable(d)) {
      groups.back().insert(groups.back().begin(), d);
    } else {
      groups.push_back({d});
    }
  }
  std::reverse(groups.begin(), groups.end());
  return groups;
}

void plan_loops(Kernel& k, const std::map<std::string, int64_t>& local_buffers) {
  const size_t outer = k.outer.size();
  const std::vector<ExprPtr> ivars = lower::loop_vars('i', outer);
  bool flat = true;
  for (const SchedNode& n : k.nodes) flat &= !n.is_reduction() && n.ranges.size() == outer;
  if (flat) {
    std::vector<ExprPtr> accesses;
    for (const SchedNode& n : k.nodes) collect_indices(n, ivars, {}, accesses);
    k.outer_loops = merge_groups(accesses, ivars, k.outer);
  }
  // Only a kernel that is not flat pointwise prints node by node.
  k.groups.clear();
  for (size_t n = 0; n < k.nodes.size() && !(flat && outer > 0);) {
    const SchedNode& node = k.nodes[n];
    NodeGroup group{n, n + 1, {}};
    if (std::find(node.ranges.begin(), node.ranges.end(), sym::integer(0)) != node.ranges.end()) {
      k.groups.push_back(group);  // a node with an empty loop runs nothing
      ++n;
      continue;
    }
    group.end = sibling_reductions(k, n, outer, local_buffers);
    const SchedNode& lead = k.nodes[group.end > n + 1 && !node.is_reduction() ? n + 1 : n];
    if (lead.is_reduction()) {
      const std::vector<ExprPtr> rvars = lower::loop_vars('r', lead.reduction_ranges.size());
      std::vector<ExprPtr> accesses;
      for (size_t m = group.first; m < group.end; ++m) {
        const SchedNode& member = k.nodes[m];
        if (member.is_reduction()) {
          const std::vector<ExprPtr> jvars = lower::loop_vars('j', member.ranges.size() - outer);
          collect_indices(member, concat(ivars, jvars), rvars, accesses);
        } else {
          collect_indices(member, concat(ivars, rvars), {}, accesses);  // the row's producer
        }
      }
      bool empty = false;
      for (ExprPtr size : lead.reduction_ranges) empty |= size == sym::integer(0);
      LoopGroups merged = merge_groups(accesses, rvars, lead.reduction_ranges);
      if (merged.size() < rvars.size() && !empty) group.reduction_loops = std::move(merged);
    }
    n = group.end;
    k.groups.push_back(std::move(group));
  }
}

}  // namespace kiln::sched
