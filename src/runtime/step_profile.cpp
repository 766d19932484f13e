// See Note [Step profile] in step_profile.h.
#include "src/runtime/step_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <string_view>
#include <vector>

#include "kiln/error.h"

namespace kiln::runtime {
namespace {

struct Registry {
  std::mutex mutex;
  std::deque<StepProfileEntry> entries;  // a deque: entries never move
  bool report_at_exit = false;
};

Registry& registry() {
  static Registry* r = new Registry;  // leaked: Executors may outlive static destruction order
  return *r;
}

std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> flag{step_profile_setting(std::getenv("KILN_PROFILE"))};
  return flag;
}

void print_report_at_exit() {
  const std::string report = step_profile_report();
  if (!report.empty()) std::fputs(report.c_str(), stderr);
}

}  // namespace

bool step_profile_setting(const char* value) {
  if (value == nullptr) return false;
  const std::string_view v(value);
  if (v.empty() || v == "0") return false;
  KILN_CHECK(v == "1", ValueError, "KILN_PROFILE='{}': set it to 1 (time every compiled step) or 0",
             v);
  return true;
}

bool step_profiling_enabled() { return enabled_flag().load(std::memory_order_relaxed); }
void set_step_profiling(bool on) { enabled_flag().store(on, std::memory_order_relaxed); }

StepProfileEntry* new_step_profile_entry(std::string name, std::string kind) {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  if (!r.report_at_exit) {
    r.report_at_exit = true;
    std::atexit(print_report_at_exit);
  }
  StepProfileEntry& e = r.entries.emplace_back();
  e.name = std::move(name);
  e.kind = std::move(kind);
  return &e;
}

std::string step_profile_report() {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  struct Row {
    std::string_view name;
    int64_t ns, calls;
  };
  std::vector<Row> rows;
  std::map<std::string_view, Row> by_kind;
  int64_t total = 0;
  for (const StepProfileEntry& e : r.entries) {
    const int64_t ns = e.nanoseconds.load(), calls = e.calls.load();
    if (calls == 0) continue;
    rows.push_back({e.name, ns, calls});
    Row& k = by_kind.try_emplace(e.kind, Row{e.kind, 0, 0}).first->second;
    k.ns += ns;
    k.calls += calls;
    total += ns;
  }
  if (rows.empty()) return {};
  const auto larger = [](const Row& a, const Row& b) { return a.ns > b.ns; };
  std::sort(rows.begin(), rows.end(), larger);
  std::vector<Row> kinds;
  for (const auto& [kind, row] : by_kind) kinds.push_back(row);
  std::sort(kinds.begin(), kinds.end(), larger);

  std::string out = "kiln step profile (KILN_PROFILE=1): time inside compiled programs\n";
  const auto line = [&](const Row& row) {
    out += fmt::format("{:>10.3f} ms {:>8} calls {:>10.4f} ms/call {:>6.1f}%  {}\n", row.ns * 1e-6,
                       row.calls, row.ns * 1e-6 / static_cast<double>(row.calls),
                       100.0 * static_cast<double>(row.ns) / static_cast<double>(total), row.name);
  };
  out += "by kind:\n";
  for (const Row& row : kinds) line(row);
  out += "by step:\n";
  for (const Row& row : rows) line(row);
  return out;
}

void reset_step_profile() {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  for (StepProfileEntry& e : r.entries) {
    e.nanoseconds = 0;
    e.calls = 0;
  }
}

}  // namespace kiln::runtime
