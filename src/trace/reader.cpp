#include "src/trace/reader.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "kiln/error.h"
#include "src/trace/md5.h"
#include "src/util/json_parse.h"

namespace kiln::trace {

namespace {

// Keys of the envelope that are not the record's kind (PyTorch's trace_structured adds "stack"
// to records logged outside a compile).
constexpr std::array<std::string_view, 7> kEnvelopeKeys = {
    "rank",    "compiled_autograd_id", "frame_id", "frame_compile_id",
    "attempt", "has_payload",          "stack"};

// Metadata of real records is shallow; the bound only stops hostile files (Note [Bounded JSON
// nesting] in src/util/json_parse.cpp).
constexpr int kMaxJsonDepth = 64;

bool is_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

template <class Int>
std::optional<Int> to_int(std::string_view text) {
  Int value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

struct Prefix {
  char level;
  std::string timestamp;
  int64_t thread;
  std::string pathname;
  int source_line;
  std::string_view json;
};

// tlparse's pattern: [VIWEC]MMDD HH:MM:SS.uuuuuu <number> <path without ':'>:<line>] <json>
std::optional<Prefix> parse_prefix(std::string_view line) {
  // "V1130 01:23:45.678901 " is 22 characters.
  if (line.size() < 22 || std::string_view("VIWEC").find(line[0]) == std::string_view::npos) {
    return std::nullopt;
  }
  const std::string_view time = line.substr(1, 20);
  const bool time_ok = is_digits(time.substr(0, 4)) && time[4] == ' ' &&
                       is_digits(time.substr(5, 2)) && time[7] == ':' &&
                       is_digits(time.substr(8, 2)) && time[10] == ':' &&
                       is_digits(time.substr(11, 2)) && time[13] == '.' &&
                       is_digits(time.substr(14, 6)) && line[21] == ' ';
  if (!time_ok) return std::nullopt;
  std::string_view rest = line.substr(22);
  const size_t space = rest.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const auto thread = to_int<int64_t>(rest.substr(0, space));
  if (!thread) return std::nullopt;
  rest.remove_prefix(space + 1);
  const size_t colon = rest.find(':');
  const size_t bracket = rest.find("] ");
  if (colon == 0 || colon == std::string_view::npos || bracket == std::string_view::npos ||
      bracket < colon) {
    return std::nullopt;
  }
  const auto source_line = to_int<int>(rest.substr(colon + 1, bracket - colon - 1));
  if (!source_line || bracket + 2 >= rest.size()) return std::nullopt;
  return Prefix{line[0],      std::string(time),       *thread, std::string(rest.substr(0, colon)),
                *source_line, rest.substr(bracket + 2)};
}

bool is_md5_hex(const std::string& text) {
  return text.size() == 32 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::optional<int> optional_int(const nlohmann::json& envelope, const char* key,
                                const std::string& where) {
  const auto it = envelope.find(key);
  if (it == envelope.end()) return std::nullopt;
  KILN_CHECK(it->is_number_integer() && it->get<int64_t>() >= 0 &&
                 it->get<int64_t>() <= std::numeric_limits<int>::max(),
             ValueError, "{}: \"{}\" is {}, not a non-negative integer", where, key, it->dump());
  return it->get<int>();
}

}  // namespace

std::string Record::artifact_name() const {
  if (kind != "artifact" || !metadata.is_object()) return "";
  const auto it = metadata.find("name");
  return it != metadata.end() && it->is_string() ? it->get<std::string>() : "";
}

std::vector<Record> read_trace(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  KILN_CHECK(file, ValueError, "read_trace: cannot open the trace file {}", path);
  std::stringstream buffer;
  buffer << file.rdbuf();
  const std::string text = buffer.str();
  KILN_CHECK(text.empty() || text.back() == '\n', ValueError,
             "read_trace: {}:{}: the last line does not end with a newline; the file is "
             "truncated (a process stopped while writing a record)",
             path, std::count(text.begin(), text.end(), '\n') + 1);

  std::vector<std::string_view> lines;
  for (size_t start = 0; start < text.size();) {
    const size_t end = text.find('\n', start);
    lines.push_back(std::string_view(text).substr(start, end - start));
    start = end + 1;
  }

  std::vector<Record> records;
  for (size_t i = 0; i < lines.size();) {
    const int line_number = static_cast<int>(i) + 1;
    const std::string where = fmt::format("read_trace: {}:{}", path, line_number);
    const std::string_view line = lines[i++];
    if (line.empty()) continue;  // tlparse skips blank lines; a blank payload line is "\t"
    KILN_CHECK(!line.starts_with('\t'), ValueError,
               "{}: a payload line follows a record without has_payload; the file is corrupt",
               where);
    const std::optional<Prefix> prefix = parse_prefix(line);
    KILN_CHECK(prefix, ValueError,
               "{}: the line does not start with a glog prefix like 'V1130 01:23:45.678901 123 "
               "file.cpp:45] '; the file is corrupt or not a trace",
               where);
    Record record;
    record.line = line_number;
    record.level = prefix->level;
    record.timestamp = prefix->timestamp;
    record.thread = prefix->thread;
    record.pathname = prefix->pathname;
    record.source_line = prefix->source_line;
    try {
      record.envelope = util::parse_json_bounded(prefix->json, kMaxJsonDepth);
    } catch (const ValueError& e) {
      throw ValueError(fmt::format("{}: the record's JSON {}; the file is corrupt or truncated",
                                   where, e.what()));
    }
    KILN_CHECK(record.envelope.is_object(), ValueError, "{}: the record's JSON is not an object",
               where);
    for (const auto& [key, value] : record.envelope.items()) {
      if (std::find(kEnvelopeKeys.begin(), kEnvelopeKeys.end(), key) != kEnvelopeKeys.end()) {
        continue;
      }
      KILN_CHECK(record.kind.empty(), ValueError,
                 "{}: the record has two kinds, '{}' and '{}'; a record has exactly one", where,
                 record.kind, key);
      record.kind = key;
      record.metadata = value;
    }
    KILN_CHECK(!record.kind.empty(), ValueError, "{}: the record has no kind key", where);

    const std::optional<int> frame_id = optional_int(record.envelope, "frame_id", where);
    const std::optional<int> frame_compile_id =
        optional_int(record.envelope, "frame_compile_id", where);
    const std::optional<int> attempt = optional_int(record.envelope, "attempt", where);
    if (frame_id && frame_compile_id) {
      record.id = CompileId{*frame_id, *frame_compile_id, attempt.value_or(0)};
    }
    record.rank = optional_int(record.envelope, "rank", where);

    const auto has_payload = record.envelope.find("has_payload");
    if (has_payload != record.envelope.end()) {
      KILN_CHECK(has_payload->is_string() && is_md5_hex(has_payload->get<std::string>()),
                 ValueError, "{}: has_payload is {}, not a 32-digit lowercase hex MD5", where,
                 has_payload->dump());
      KILN_CHECK(i < lines.size() && lines[i].starts_with('\t'), ValueError,
                 "{}: the record has a payload (has_payload) but no payload lines follow; the "
                 "file is truncated",
                 where);
      std::string payload;
      for (bool first = true; i < lines.size() && lines[i].starts_with('\t'); ++i) {
        if (!first) payload += '\n';
        first = false;
        payload.append(lines[i].substr(1));
      }
      const std::string digest = md5_hex(payload);
      KILN_CHECK(digest == has_payload->get<std::string>(), ValueError,
                 "{}: the payload's MD5 is {} but has_payload says {}; the payload (lines {} to "
                 "{}) is corrupt or truncated",
                 where, digest, has_payload->get<std::string>(), line_number + 1, i);
      record.payload = std::move(payload);
    }
    records.push_back(std::move(record));
  }
  return records;
}

std::vector<std::string> trace_files(const std::string& directory) {
  std::error_code error;
  std::filesystem::directory_iterator it(directory, error);
  KILN_CHECK(!error, ValueError, "trace_files: cannot read the trace directory {}: {}", directory,
             error.message());
  std::vector<std::string> files;
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.starts_with("kiln_trace_") && name.ends_with(".log")) {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace kiln::trace
