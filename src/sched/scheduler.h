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

struct Kernel {
  std::string name;              // the extern "C" symbol
  std::vector<ExprPtr> outer;    // the shared outer loop ranges
  std::vector<SchedNode> nodes;  // in execution order
};

struct ExternCall {
  std::vector<const lower::ExternBuffer*> outputs;  // one call, all its outputs
};

using Step = std::variant<Kernel, ExternCall>;

struct Schedule {
  std::vector<Step> steps;
  std::vector<std::string> fusion_log;  // one line per decision, for the structured trace
};

Schedule schedule(const lower::GraphLowering& lowering);
// The kernels (with their buffers and loop ranges), the extern calls and the fusion decisions:
// what `KILN_LOGS=passes` prints after `schedule`.
std::string to_string(const Schedule& schedule);

}  // namespace kiln::sched
