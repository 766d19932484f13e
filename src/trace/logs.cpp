// KILN_LOGS (Note [KILN_LOGS] in src/trace/logs.h).
#include "src/trace/logs.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/error.h"

namespace kiln::trace {

namespace detail {
std::atomic<int64_t> log_mask{-1};
}  // namespace detail

namespace {

constexpr uint32_t kAllCategories = (1u << kNumLogCategories) - 1;

std::string_view trim(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\n");
  if (begin == std::string_view::npos) return {};
  const size_t end = text.find_last_not_of(" \t\n");
  return text.substr(begin, end - begin + 1);
}

std::mutex& stderr_mutex() {
  static std::mutex* mutex = new std::mutex;
  return *mutex;
}

}  // namespace

std::string_view log_category_name(LogCategory category) {
  return log_category_names().at(static_cast<size_t>(category));
}

const std::vector<std::string_view>& log_category_names() {
  static const std::vector<std::string_view> names = {
      "graph", "guards", "recompiles", "graph_breaks", "dynamic", "output_code", "aot", "passes"};
  return names;
}

uint32_t parse_log_spec(const std::string_view spec) {
  uint32_t mask = 0;
  std::string_view rest = spec;
  while (true) {
    const size_t comma = rest.find(',');
    std::string_view entry = trim(rest.substr(0, comma));
    if (entry.starts_with('+')) entry = trim(entry.substr(1));
    if (entry == "all") {
      mask |= kAllCategories;
    } else if (!entry.empty()) {
      const auto& names = log_category_names();
      size_t index = 0;
      while (index < names.size() && names[index] != entry) ++index;
      KILN_CHECK(index < names.size(), ValueError,
                 "KILN_LOGS: unknown log name '{}' in '{}'; valid names: all, {}", entry, spec,
                 fmt::join(names, ", "));
      mask |= 1u << index;
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return mask;
}

namespace detail {

uint32_t read_logs_env() {
  const char* spec = std::getenv("KILN_LOGS");
  const uint32_t mask = spec == nullptr ? 0 : parse_log_spec(spec);  // throws before storing
  log_mask.store(mask);
  return mask;
}

void write_readable(LogCategory category, std::string_view text, const CompileId& id) {
  const std::string prefix =
      id.has_value() ? fmt::format("[kiln {}] {} ", log_category_name(category), id.to_string())
                     : fmt::format("[kiln {}] ", log_category_name(category));
  std::string out;
  out.reserve(text.size() + prefix.size() + 1);
  while (true) {
    const size_t newline = text.find('\n');
    out += prefix;
    out += text.substr(0, newline);
    out += '\n';
    if (newline == std::string_view::npos || newline + 1 == text.size()) break;
    text.remove_prefix(newline + 1);
  }
  std::lock_guard lock(stderr_mutex());  // whole messages, never interleaved lines
  std::fwrite(out.data(), 1, out.size(), stderr);
  std::fflush(stderr);
}

}  // namespace detail

void set_logs_for_testing(std::optional<std::string_view> spec) {
  // Both arms int64_t: with a uint32_t arm, -1 would become 0xffffffff (every category on).
  detail::log_mask.store(spec ? int64_t{parse_log_spec(*spec)} : int64_t{-1});
}

}  // namespace kiln::trace
