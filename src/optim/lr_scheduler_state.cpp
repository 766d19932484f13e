#include "src/optim/lr_scheduler_state.h"

#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/error.h"

namespace kiln::optim::detail {
namespace {

std::string trim(const std::string& s) {
  size_t begin = s.find_first_not_of(" \t\n");
  if (begin == std::string::npos) return "";
  size_t end = s.find_last_not_of(" \t\n");
  return s.substr(begin, end - begin + 1);
}

// The items of "[a, b, c]"; nullopt if `text` is not a bracketed list.
std::optional<std::vector<std::string>> split_list(const std::string& text) {
  std::string s = trim(text);
  if (s.size() < 2 || s.front() != '[' || s.back() != ']') return std::nullopt;
  std::vector<std::string> items;
  std::string body = trim(s.substr(1, s.size() - 2));
  if (body.empty()) return items;
  size_t start = 0;
  while (true) {
    size_t comma = body.find(',', start);
    items.push_back(trim(body.substr(start, comma == std::string::npos ? comma : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

std::optional<double> parse_real(const std::string& text) {
  std::string s = trim(text);
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return value;
}

std::optional<int64_t> parse_integer(const std::string& text) {
  std::string s = trim(text);
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(s.c_str(), &end, 10);
  if (end != s.c_str() + s.size() || errno == ERANGE) return std::nullopt;
  return static_cast<int64_t>(value);
}

}  // namespace

void SchedulerStateWriter::put(const std::string& key, double value) {
  dict_.values[prefix_ + key] = fmt::format("{}", value);
}
void SchedulerStateWriter::put(const std::string& key, int64_t value) {
  dict_.values[prefix_ + key] = fmt::format("{}", value);
}
void SchedulerStateWriter::put(const std::string& key, bool value) {
  dict_.values[prefix_ + key] = value ? "true" : "false";
}
void SchedulerStateWriter::put(const std::string& key, const std::string& value) {
  dict_.values[prefix_ + key] = value;
}
void SchedulerStateWriter::put(const std::string& key, const std::vector<double>& values) {
  dict_.values[prefix_ + key] = fmt::format("[{}]", fmt::join(values, ", "));
}
void SchedulerStateWriter::put(const std::string& key, const std::vector<int64_t>& values) {
  dict_.values[prefix_ + key] = fmt::format("[{}]", fmt::join(values, ", "));
}

bool SchedulerStateReader::has(const std::string& key) const {
  return dict_.values.count(prefix_ + key) > 0;
}

std::string SchedulerStateReader::text(const std::string& key) const {
  auto it = dict_.values.find(prefix_ + key);
  KILN_CHECK(it != dict_.values.end(), ValueError,
             "{}.load_state_dict: the state has no '{}'; pass a dict made by {}.state_dict()",
             scheduler_, prefix_ + key, scheduler_);
  return it->second;
}

double SchedulerStateReader::real(const std::string& key) const {
  std::string value = text(key);
  std::optional<double> parsed = parse_real(value);
  KILN_CHECK(parsed.has_value(), ValueError, "{}.load_state_dict: '{}' is not a number: '{}'",
             scheduler_, prefix_ + key, value);
  return *parsed;
}

int64_t SchedulerStateReader::integer(const std::string& key) const {
  std::string value = text(key);
  std::optional<int64_t> parsed = parse_integer(value);
  KILN_CHECK(parsed.has_value(), ValueError, "{}.load_state_dict: '{}' is not an integer: '{}'",
             scheduler_, prefix_ + key, value);
  return *parsed;
}

bool SchedulerStateReader::flag(const std::string& key) const {
  std::string value = trim(text(key));
  KILN_CHECK(value == "true" || value == "false", ValueError,
             "{}.load_state_dict: '{}' must be true or false, got '{}'", scheduler_, prefix_ + key,
             value);
  return value == "true";
}

std::vector<double> SchedulerStateReader::reals(const std::string& key,
                                                std::optional<size_t> expected) const {
  std::string value = text(key);
  std::optional<std::vector<std::string>> items = split_list(value);
  KILN_CHECK(items.has_value(), ValueError,
             "{}.load_state_dict: '{}' is not a list like [0.1, 0.2]: '{}'", scheduler_,
             prefix_ + key, value);
  std::vector<double> out;
  for (const std::string& item : *items) {
    std::optional<double> parsed = parse_real(item);
    KILN_CHECK(parsed.has_value(), ValueError,
               "{}.load_state_dict: '{}' holds '{}', which is not a number", scheduler_,
               prefix_ + key, item);
    out.push_back(*parsed);
  }
  KILN_CHECK(!expected || out.size() == *expected, ValueError,
             "{}.load_state_dict: '{}' has {} values but the optimizer has {} parameter groups; "
             "load a state saved with the same parameter groups",
             scheduler_, prefix_ + key, out.size(), expected.value_or(0));
  return out;
}

std::vector<int64_t> SchedulerStateReader::integers(const std::string& key) const {
  std::string value = text(key);
  std::optional<std::vector<std::string>> items = split_list(value);
  KILN_CHECK(items.has_value(), ValueError,
             "{}.load_state_dict: '{}' is not a list like [3, 8]: '{}'", scheduler_, prefix_ + key,
             value);
  std::vector<int64_t> out;
  for (const std::string& item : *items) {
    std::optional<int64_t> parsed = parse_integer(item);
    KILN_CHECK(parsed.has_value(), ValueError,
               "{}.load_state_dict: '{}' holds '{}', which is not an integer", scheduler_,
               prefix_ + key, item);
    out.push_back(*parsed);
  }
  return out;
}

std::string SchedulerStateReader::choice(const std::string& key,
                                         const std::vector<std::string>& allowed) const {
  std::string value = text(key);
  for (const std::string& a : allowed)
    if (a == value) return value;
  throw ValueError(fmt::format("{}.load_state_dict: '{}' must be one of '{}', got '{}'", scheduler_,
                               prefix_ + key, fmt::join(allowed, "', '"), value));
}

}  // namespace kiln::optim::detail
