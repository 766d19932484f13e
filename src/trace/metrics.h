// Compile-time metrics, one {"compilation_metrics": {...}} trace record per compile.
#pragma once

#include <chrono>
#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/trace/trace.h"

namespace kiln::trace {

// Note [Compile metrics fields]
// The JSON uses PyTorch's CompilationMetrics names wherever the concept is the same (tlparse
// reads those into its metrics page; it ignores the others): co_name, co_filename,
// co_firstlineno, cache_size, guard_count, shape_env_guard_count, graph_op_count,
// graph_node_count, graph_input_count, start_time, entire_frame_compile_time_s,
// backend_compile_time_s, fail_type, fail_reason, fail_user_frame_filename,
// fail_user_frame_lineno, restart_reasons. Kiln's own: trace_time_s, guard_build_time_s,
// graph_count, graph_break_count, recompile_reasons. Times are seconds, as in PyTorch. tlparse
// reads counts as unsigned, so negative counts are written as 0; an empty fail_* is null.
struct CompileMetrics {
  CompileId id;
  // The compiled function: its name and where it is defined.
  std::string co_name;
  std::string co_filename;
  int co_firstlineno = 0;
  double start_time = 0;  // seconds since the Unix epoch when the compile started

  double entire_frame_compile_time_s = 0;  // the whole compile, tracing to cache entry
  double trace_time_s = 0;                 // running the function on fake tensors
  double guard_build_time_s = 0;           // building the guard check list
  double backend_compile_time_s = 0;       // the backend turning the graph into a callable

  int64_t cache_size = 0;             // cache entries of this function before this compile
  int64_t guard_count = 0;            // guards of the new entry
  int64_t shape_env_guard_count = 0;  // of which symbolic-shape guards
  int64_t graph_count = 0;            // graphs captured (1 + graph breaks)
  int64_t graph_break_count = 0;
  int64_t graph_op_count = 0;     // call nodes over all graphs
  int64_t graph_node_count = 0;   // all nodes (inputs and outputs too)
  int64_t graph_input_count = 0;  // placeholders

  std::vector<std::string> recompile_reasons;  // why the cache missed (empty for a first compile)
  std::vector<std::string> restart_reasons;    // why tracing restarted within this compile

  // When the compile failed: the exception's kind and message, and the user's code it names.
  std::string fail_type;
  std::string fail_reason;
  std::string fail_user_frame_filename;
  int fail_user_frame_lineno = 0;

  nlohmann::json to_json() const;
};

// Writes {"compilation_metrics": metrics.to_json()} for metrics.id. The builder runs only when
// tracing is on.
template <class MetricsBuilder>
requires std::invocable<MetricsBuilder&> &&
    std::is_same_v<detail::BuilderResult<MetricsBuilder>, CompileMetrics>
void log_compile_metrics(MetricsBuilder&& build,
                         std::source_location where = std::source_location::current()) {
  if (!enabled()) return;
  const CompileMetrics metrics = build();
  detail::write_record("compilation_metrics", metrics.id, metrics.to_json(), std::nullopt, where);
}

// Seconds since construction, for the *_time_s fields.
class Stopwatch {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace kiln::trace
