// The structured trace writer (Note [Structured trace format] in src/trace/trace.h).
#include "src/trace/trace.h"

#include <fcntl.h>
#include <sys/time.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>

#include "kiln/error.h"
#include "src/trace/md5.h"

namespace kiln::trace {

std::string CompileId::to_string() const {
  if (!has_value()) return "[-/-]";
  if (attempt != 0) return fmt::format("[{}/{}_{}]", frame_id, frame_compile_id, attempt);
  return fmt::format("[{}/{}]", frame_id, frame_compile_id);
}

namespace detail {
std::atomic<int> trace_state{-1};
}  // namespace detail

namespace {

// Envelope keys besides the kind; PyTorch's trace_structured refuses kinds with these names.
constexpr std::array<std::string_view, 9> kReservedKeys = {"rank",      "compiled_autograd_id",
                                                           "frame_id",  "frame_compile_id",
                                                           "attempt",   "severity",
                                                           "timestamp", "pathname",
                                                           "thread"};

struct Writer {
  std::mutex mutex;
  std::string directory;  // where the next file is created; "" when off
  std::optional<int> rank;
  int fd = -1;
  std::string path;
  std::unordered_map<std::string, int> interned_files;  // per file: each file carries its own
};

// Never destroyed: records may be written from static destructors of other objects.
Writer& writer() {
  static Writer* instance = new Writer;
  return *instance;
}

void close_file(Writer& w) {
  if (w.fd >= 0) ::close(w.fd);
  w.fd = -1;
  w.path.clear();
  w.interned_files.clear();
}

void write_all(Writer& w, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(w.fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    KILN_CHECK(n > 0, ValueError,
               "trace: writing the structured trace {} failed: {}; free space there, or unset "
               "KILN_TRACE",
               w.path, std::strerror(errno));
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// Creates the trace file at the first record (PyTorch's LazyTraceHandler does the same).
void open_file(Writer& w) {
  std::error_code error;
  std::filesystem::create_directories(w.directory, error);
  KILN_CHECK(!error, ValueError,
             "trace: cannot create the trace directory KILN_TRACE={}: {}; set KILN_TRACE to a "
             "writable directory or unset it",
             w.directory, error.message());
  const std::string stem = w.rank ? fmt::format("kiln_trace_rank_{}_{}", *w.rank, ::getpid())
                                  : fmt::format("kiln_trace_{}", ::getpid());
  for (int suffix = 0;; ++suffix) {
    std::string path = (std::filesystem::path(w.directory) /
                        (suffix == 0 ? stem + ".log" : fmt::format("{}_{}.log", stem, suffix)))
                           .string();
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      w.fd = fd;
      w.path = std::move(path);
      return;
    }
    KILN_CHECK(errno == EEXIST, ValueError,
               "trace: cannot create the trace file {}: {}; set KILN_TRACE to a writable "
               "directory or unset it",
               path, std::strerror(errno));
  }
}

// The repository root as this file was compiled ("/work/kiln/" for /work/kiln/src/trace/...),
// so that record prefixes name files relative to it.
std::string_view source_root() {
  static const std::string root = [] {
    std::string_view self = std::source_location::current().file_name();
    const size_t at = self.rfind("src/trace/trace.cpp");
    return std::string(at == std::string_view::npos ? std::string_view() : self.substr(0, at));
  }();
  return root;
}

// A source path for the prefix: relative to the repository root, without "./" or "../" in front
// (ccache's base_dir makes __FILE__ relative to the build directory), and without ':'.
std::string prefix_path(std::string_view file) {
  const std::string_view root = source_root();
  if (!root.empty() && root != "./" && file.starts_with(root)) file.remove_prefix(root.size());
  while (true) {
    if (file.starts_with("./")) {
      file.remove_prefix(2);
    } else if (file.starts_with("../")) {
      file.remove_prefix(3);
    } else {
      break;
    }
  }
  std::string path(file.empty() ? std::string_view("unknown") : file);
  for (char& c : path) {
    if (c == ':' || c == '\n' || c == ' ') c = '_';
  }
  return path;
}

std::string glog_prefix(const std::source_location& where) {
  timeval now{};
  ::gettimeofday(&now, nullptr);
  std::tm local{};
  ::localtime_r(&now.tv_sec, &local);
  char time_text[32];
  std::strftime(time_text, sizeof time_text, "%m%d %H:%M:%S", &local);
  return fmt::format("V{}.{:06d} {} {}:{}] ", time_text, static_cast<int>(now.tv_usec), ::gettid(),
                     prefix_path(where.file_name()), where.line());
}

std::string dump(const nlohmann::json& value) {
  // Invalid UTF-8 (a user's file name, say) becomes U+FFFD instead of an exception.
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A record formatted up to what needs the lock (the time and the rank).
struct FormattedRecord {
  std::string head;           // {"kind":metadata
  std::string ids;            // ,"frame_id":..,"frame_compile_id":..,"attempt":..
  std::string payload_tail;   // ,"has_payload":"<md5>" when there is a payload
  std::string payload_lines;  // \t-prefixed lines
};

FormattedRecord format_record(std::string_view kind, const CompileId& id,
                              const nlohmann::json& metadata,
                              const std::optional<std::string>& payload) {
  KILN_CHECK(!kind.empty(), ValueError, "trace::log: the record kind is empty");
  for (std::string_view reserved : kReservedKeys) {
    KILN_CHECK(kind != reserved, ValueError,
               "trace::log: '{}' is an envelope key, not a record kind; pick another kind", kind);
  }
  FormattedRecord record;
  // fmt rather than '+': GCC 12 warns falsely (-Wrestrict) on "{" + std::string.
  record.head = fmt::format("{{{}:{}", dump(nlohmann::json(kind)), dump(metadata));
  if (id.has_value()) {
    record.ids = fmt::format(",\"frame_id\":{},\"frame_compile_id\":{},\"attempt\":{}", id.frame_id,
                             id.frame_compile_id, id.attempt);
  }
  if (payload) {
    record.payload_tail = fmt::format(",\"has_payload\":\"{}\"", md5_hex(*payload));
    record.payload_lines.reserve(payload->size() + 16);
    size_t start = 0;
    while (true) {
      const size_t end = payload->find('\n', start);
      record.payload_lines += '\t';
      record.payload_lines.append(*payload, start,
                                  end == std::string::npos ? std::string::npos : end - start);
      record.payload_lines += '\n';
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  return record;
}

// Writes a formatted record; the caller holds w.mutex.
void emit_locked(Writer& w, const FormattedRecord& record, const std::source_location& where) {
  if (w.directory.empty()) return;  // switched off since enabled() was checked
  if (w.fd < 0) open_file(w);
  std::string line = glog_prefix(where) + record.head;
  if (w.rank) line += fmt::format(",\"rank\":{}", *w.rank);
  line += record.ids;
  line += record.payload_tail;
  line += "}\n";
  line += record.payload_lines;
  write_all(w, line);
}

}  // namespace

namespace detail {

bool read_trace_env() {
  Writer& w = writer();
  std::lock_guard lock(w.mutex);
  int state = trace_state.load();
  if (state < 0) {
    const char* directory = std::getenv("KILN_TRACE");
    w.directory = directory != nullptr ? directory : "";
    state = w.directory.empty() ? 0 : 1;
    trace_state.store(state);
  }
  return state != 0;
}

std::string json_payload_text(const nlohmann::json& payload) {
  const auto replace = nlohmann::json::error_handler_t::replace;
  if (!payload.is_array()) return payload.dump(0, ' ', false, replace);
  std::string text = "[\n";
  for (size_t i = 0; i < payload.size(); ++i) {
    if (i != 0) text += ",\n";
    text += dump(payload[i]);
  }
  return text + "\n]";
}

void write_record(std::string_view kind, const CompileId& id, const nlohmann::json& metadata,
                  const std::optional<std::string>& payload, const std::source_location& where) {
  // Everything but the time is formatted before taking the lock.
  const FormattedRecord record = format_record(kind, id, metadata, payload);
  Writer& w = writer();
  std::lock_guard lock(w.mutex);
  emit_locked(w, record, where);
}

}  // namespace detail

nlohmann::json stack_frame(std::string_view filename, int line, std::string_view function) {
  const std::string name(filename);
  Writer& w = writer();
  std::lock_guard lock(w.mutex);
  auto [it, inserted] =
      w.interned_files.try_emplace(name, static_cast<int>(w.interned_files.size()));
  if (inserted) {
    // Written under the same lock, so no record can use the id before its intern record.
    // PyTorch writes intern records without compile ids (suppress_context=True).
    emit_locked(
        w,
        format_record("str", CompileId{}, nlohmann::json::array({name, it->second}), std::nullopt),
        std::source_location::current());
  }
  return {{"filename", it->second}, {"line", line}, {"name", function}};
}

nlohmann::json stack_frame(const std::source_location& where) {
  return stack_frame(prefix_path(where.file_name()), static_cast<int>(where.line()),
                     where.function_name());
}

namespace {
thread_local CompileId current_compile;
}  // namespace

const CompileId& current_compile_id() { return current_compile; }
CompileIdScope::CompileIdScope(CompileId id) : previous_(current_compile) { current_compile = id; }
CompileIdScope::~CompileIdScope() { current_compile = previous_; }

void set_rank(std::optional<int> rank) {
  KILN_CHECK(!rank || *rank >= 0, ValueError, "trace::set_rank: rank {} is negative", *rank);
  Writer& w = writer();
  std::lock_guard lock(w.mutex);
  w.rank = rank;
}

std::string current_log_path() {
  Writer& w = writer();
  std::lock_guard lock(w.mutex);
  return w.path;
}

void set_directory_for_testing(std::optional<std::string> directory) {
  Writer& w = writer();
  std::lock_guard lock(w.mutex);
  close_file(w);
  w.directory = directory.value_or("");
  detail::trace_state.store(w.directory.empty() ? 0 : 1);
}

void reset_for_testing() {
  Writer& w = writer();
  std::lock_guard lock(w.mutex);
  close_file(w);
  w.directory.clear();
  w.rank.reset();
  detail::trace_state.store(-1);
}

}  // namespace kiln::trace
