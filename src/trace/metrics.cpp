#include "src/trace/metrics.h"

#include <algorithm>

namespace kiln::trace {

namespace {

nlohmann::json string_or_null(const std::string& text) {
  return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
}

}  // namespace

// Field names: Note [Compile metrics fields].
nlohmann::json CompileMetrics::to_json() const {
  const auto count = [](int64_t n) { return std::max<int64_t>(n, 0); };
  return {
      {"co_name", co_name},
      {"co_filename", co_filename},
      {"co_firstlineno", co_firstlineno},
      {"start_time", start_time},
      {"entire_frame_compile_time_s", entire_frame_compile_time_s},
      {"trace_time_s", trace_time_s},
      {"guard_build_time_s", guard_build_time_s},
      {"backend_compile_time_s", backend_compile_time_s},
      {"cache_size", count(cache_size)},
      {"guard_count", count(guard_count)},
      {"shape_env_guard_count", count(shape_env_guard_count)},
      {"graph_count", count(graph_count)},
      {"graph_break_count", count(graph_break_count)},
      {"graph_op_count", count(graph_op_count)},
      {"graph_node_count", count(graph_node_count)},
      {"graph_input_count", count(graph_input_count)},
      {"recompile_reasons", recompile_reasons},
      {"restart_reasons", restart_reasons},
      {"fail_type", string_or_null(fail_type)},
      {"fail_reason", string_or_null(fail_reason)},
      {"fail_user_frame_filename", string_or_null(fail_user_frame_filename)},
      {"fail_user_frame_lineno", fail_type.empty()
                                     ? nlohmann::json(nullptr)
                                     : nlohmann::json(std::max(fail_user_frame_lineno, 0))},
  };
}

}  // namespace kiln::trace
