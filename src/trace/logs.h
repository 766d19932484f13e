// Readable compile logs on stderr: `KILN_LOGS=graph,guards,recompiles,graph_breaks` (PyTorch's
// TORCH_LOGS artifacts) prints what the structured trace records, in words, as it happens.
//
//   if (trace::log_enabled(trace::LogCategory::graph)) ...
//   trace::log_readable(trace::LogCategory::recompiles, [&] { return describe(failure); }, id);
#pragma once

#include <atomic>
#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/trace/trace.h"

namespace kiln::trace {

// Note [KILN_LOGS]
// KILN_LOGS is a comma-separated list of category names; "all" (or "+all") turns on every
// category. Names are trimmed, empty entries ignored, and a leading '+' is accepted and ignored
// (TORCH_LOGS uses it for DEBUG level; Kiln's categories have one level). An unknown name raises
// ValueError listing the valid names, at the first log_enabled() call, so a typo never silently
// prints nothing. Every line printed starts with "[kiln <category>] " and, for compile events,
// the compile id ("[kiln recompiles] [0/1] ..."), so the output greps well.
enum class LogCategory : uint8_t {
  graph,         // captured graphs, printed as code
  guards,        // the guards of each compiled entry
  recompiles,    // why a cache entry missed and the function was traced again
  graph_breaks,  // where and why capture split a graph
  dynamic,       // shape env: symbols created, guards added, specializations
  output_code,   // generated code (the code-generating backend)
  aot,           // joint / forward / backward graphs (AOT autograd)
  passes,        // each compiler pass's output, in pipeline order (src/pipeline/pass.h)
};
inline constexpr int kNumLogCategories = 8;

// "graph", "guards", ... (the names KILN_LOGS takes).
std::string_view log_category_name(LogCategory category);
// Every category name, in declaration order.
const std::vector<std::string_view>& log_category_names();

// The set of categories `spec` turns on, as a bit mask (bit i = category i). Throws ValueError
// naming the bad entry and listing the valid names.
uint32_t parse_log_spec(std::string_view spec);

namespace detail {
// -1 until KILN_LOGS has been read, then the mask of enabled categories.
extern std::atomic<int64_t> log_mask;
uint32_t read_logs_env();
void write_readable(LogCategory category, std::string_view text, const CompileId& id);
}  // namespace detail

// True when KILN_LOGS turns `category` on. The first call reads KILN_LOGS (and may throw
// ValueError for a bad value); later calls are one relaxed atomic load.
inline bool log_enabled(LogCategory category) {
  int64_t mask = detail::log_mask.load(std::memory_order_relaxed);
  if (mask < 0) [[unlikely]] {
    mask = detail::read_logs_env();
  }
  return (mask >> static_cast<int>(category)) & 1;
}

// Prints `text` to stderr, each line prefixed with "[kiln <category>] " and the compile id when
// `id` has one, when the category is on.
inline void log_readable(LogCategory category, std::string_view text, const CompileId& id = {}) {
  if (log_enabled(category)) detail::write_readable(category, text, id);
}
// The same with the text built only when the category is on.
template <class TextBuilder>
requires std::invocable<TextBuilder&> &&
    std::is_convertible_v<std::invoke_result_t<TextBuilder&>, std::string_view>
void log_readable(LogCategory category, TextBuilder&& text, const CompileId& id = {}) {
  if (log_enabled(category)) {
    const std::string built(text());
    detail::write_readable(category, built, id);
  }
}

// Tests: use `spec` instead of KILN_LOGS (nullopt: read KILN_LOGS again at the next use).
void set_logs_for_testing(std::optional<std::string_view> spec);

}  // namespace kiln::trace
