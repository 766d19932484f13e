// What the schedule decides about memory: which buffers live only inside one kernel (Note [Local
// buffers]) and which intermediate buffers share storage (Note [Buffer reuse]). Codegen prints
// these decisions; it does not make them.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "src/lower/graph_lowering.h"
#include "src/sched/scheduler.h"

namespace kiln::sched {

// Buffer name -> row size in elements of the kernel-local array it becomes (Note [Local buffers]).
std::map<std::string, int64_t> find_local_buffers(const lower::GraphLowering& lowering,
                                                  const Schedule& schedule);
// Slots for the intermediate buffers (Note [Buffer reuse]); needs schedule.local_buffers.
MemoryPlan plan_memory(const lower::GraphLowering& lowering, const Schedule& schedule);

}  // namespace kiln::sched
