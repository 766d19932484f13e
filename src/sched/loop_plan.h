// What the schedule decides about a kernel's loops: which adjacent loops merge into one (Note
// [Merging loops]) and which nodes share one loop nest (Note [Sibling reductions share their
// loops], Note [A row's producer shares its reductions' loop]). Codegen prints these decisions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "src/sched/scheduler.h"

namespace kiln::sched {

// The groups of adjacent loops (outermost first) among `vars` (sizes `sizes`) that every index in
// `accesses` walks contiguously.
LoopGroups merge_groups(const std::vector<ExprPtr>& accesses, const std::vector<ExprPtr>& vars,
                        const std::vector<ExprPtr>& sizes);

// Fills kernel.outer_loops and kernel.groups; needs the schedule's local buffers.
void plan_loops(Kernel& kernel, const std::map<std::string, int64_t>& local_buffers);

}  // namespace kiln::sched
