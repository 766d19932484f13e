// Scheduling (DESIGN.md section 5, sched): turns the lowered buffers into an ordered list of
// kernels (fused loop nests) and extern calls, and plans buffer memory.
//
// Note [Fusion]
// Buffers are visited in creation order, which is a valid execution order. A kernel is a run of
// consecutive computed buffers that share an outer loop nest: a pointwise buffer over ranges
// (N, M) fits a kernel whose outer loops are (N) (its M loop runs inside) or (N, M); a reduction
// over output ranges (N) fits a kernel whose outer loops are exactly (N) (its reduction loop runs
// inside). So softmax's max, sum and normalize become one kernel with one outer loop over rows,
// and a pointwise chain that was realized in pieces still shares one loop. A buffer joins only
// when every read of a buffer written inside the kernel reads exactly what was written in the
// same outer iteration (same index expression, a reduction result at that outer index, or a
// reduction over exactly the writer's inner loops reading each element where it was written), and
// the same for writes into a buffer the kernel reads; otherwise a new kernel starts. Size-1 dims
// are dropped from loop nests first, so keepdim results line up with their consumers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "src/lower/graph_lowering.h"
#include "src/lower/handlers/dependency_handler.h"

namespace kiln::sched {

using lower::ExprPtr;

// One computed buffer as the scheduler sees it: its loop nest without size-1 dims.
struct SchedNode {
  const lower::ComputedBuffer* buffer = nullptr;
  std::vector<ExprPtr> ranges;            // output loop ranges (size-1 dims dropped)
  std::vector<ExprPtr> reduction_ranges;  // reduction loop ranges (size-1 dims dropped)
  // The body over loop variables: output index from the `ranges` vars, rindex from the
  // reduction vars (size-1 dims get index 0).
  lower::Index index_for(const std::vector<ExprPtr>& vars) const;
  lower::Index rindex_for(const std::vector<ExprPtr>& rvars) const;
  bool is_reduction() const { return buffer->is_reduction(); }
  // Where the node stores (its own buffer, or an input it mutates).
  const lower::Buffer& target() const;
  // Runs the body under `handler` with the given loop variables (stores included).
  void run_body(lower::OpsHandler& handler, const std::vector<ExprPtr>& vars,
                const std::vector<ExprPtr>& rvars) const;

  std::vector<int64_t> kept_dims;  // which dims of the buffer's ranges are loops
  std::vector<int64_t> kept_reduction_dims;
};

// A node's reads and writes over loop variables i0.. and r0.. (lower::loop_vars).
struct NodeAccesses {
  std::vector<lower::MemoryAccess> reads, writes;
};

// Groups of adjacent loops, outermost first, each printed as one loop (Note [Merging loops] in
// loop_plan.cpp): {{0}, {1, 2}} merges loops 1 and 2.
using LoopGroups = std::vector<std::vector<size_t>>;

// Nodes [first, end) of a kernel printed as one loop nest (several only for Note [Sibling
// reductions share their loops]), with the reduction loops merged as `reduction_loops` says
// (empty: not merged).
struct NodeGroup {
  size_t first = 0, end = 0;
  LoopGroups reduction_loops;
};

struct Kernel {
  std::string name;                    // the extern "C" symbol
  std::vector<ExprPtr> outer;          // the shared outer loop ranges
  std::vector<SchedNode> nodes;        // in execution order
  std::vector<NodeAccesses> accesses;  // of each node
  // Decided by the schedule, printed by codegen (loop_plan.h): a flat pointwise kernel's merged
  // outer loops; any other kernel's nodes as loop nests, in order.
  LoopGroups outer_loops;
  std::vector<NodeGroup> groups;
};

struct ExternCall {
  std::vector<const lower::ExternBuffer*> outputs;  // one call, all its outputs
};

using Step = std::variant<Kernel, ExternCall>;

// Storage of the intermediate buffers (Note [Buffer reuse] in memory_plan.cpp): each gets a slot;
// a slot's size is the largest of its buffers' (an expression when sizes are symbolic).
struct MemoryPlan {
  std::map<std::string, int> slot_of;
  std::vector<ExprPtr> slot_bytes;
};

// What codegen prints: the steps in order, which buffers are kernel-local arrays (Note [Local
// buffers] in memory_plan.cpp: name -> row size in elements), and where the others live.
struct Schedule {
  std::vector<Step> steps;
  std::map<std::string, int64_t> local_buffers;
  MemoryPlan memory;
  std::vector<std::string> fusion_log;  // one line per decision, for the structured trace
};

Schedule schedule(const lower::GraphLowering& lowering);
// The kernels (with their buffers and loop ranges), the extern calls and the fusion decisions:
// what `KILN_LOGS=passes` prints after `schedule`.
std::string to_string(const Schedule& schedule);

}  // namespace kiln::sched
