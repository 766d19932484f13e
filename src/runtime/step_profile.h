// Per-step timing of compiled programs (KILN_PROFILE=1).
//
// Note [Step profile]
// A compiled step's time is the sum of its program steps (generated kernels and extern calls such
// as matmul) plus the eager glue around them (autograd, the optimizer's Python-free loop). A
// sampling profiler spreads a 2-core run over OpenBLAS packing, futexes and anonymous kernel
// symbols; what a person tuning a model wants is "which step of which program costs what". With
// KILN_PROFILE=1 (or set_step_profiling(true)) every Executor built afterwards times each of its
// steps with a steady clock and adds the time to one entry per (program, step); the table is
// printed to stderr at exit, largest first, and step_profile_report() returns it. Timing costs two
// clock reads per step, so it is off by default; an Executor decides once, when it is built.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace kiln::runtime {

struct StepProfileEntry {
  std::string name;  // "<program> kernel3" or "<program> mm -> f32[2048, 256]"
  std::string kind;  // what the totals group by: "generated kernels", the extern op's name, "copy"
  std::atomic<int64_t> nanoseconds{0};
  std::atomic<int64_t> calls{0};
};

// Whether Executors built from now on time their steps. Starts as KILN_PROFILE says ("1"/"0";
// any other value raises ValueError naming the variable).
bool step_profiling_enabled();
// What a KILN_PROFILE value means: "1" on; "0", empty or unset (nullptr) off; else ValueError.
bool step_profile_setting(const char* value);
void set_step_profiling(bool on);

// A new entry that lives until the process ends (so an Executor may be destroyed before the
// report); thread-safe.
StepProfileEntry* new_step_profile_entry(std::string name, std::string kind);

// The table: one line per entry with calls, total ms, ms per call and share of the profiled time,
// largest first, then totals by kind (generated kernels, each extern op). Empty entries are left
// out. reset_step_profile() zeroes every entry.
std::string step_profile_report();
void reset_step_profile();

}  // namespace kiln::runtime
