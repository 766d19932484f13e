// The structured compile trace: `KILN_TRACE=dir` writes one log file per process in PyTorch's
// TORCH_TRACE format, which tlparse and `kiln trace-report` read (DESIGN.md section 6).
//
// Typical use from capture code (nothing is built, formatted or hashed when tracing is off):
//
//   trace::log("dynamo_output_graph", id,
//              [&] { return nlohmann::json{{"sizes", sizes_of(graph)}}; },
//              [&] { return graph.to_string(); });
//   trace::log_artifact("recompile_reasons", id, [&] { return nlohmann::json(reasons); });
//
// Readable stderr logs (KILN_LOGS) are in src/trace/logs.h, compile metrics in
// src/trace/metrics.h, and the reader for tests and reports in src/trace/reader.h.
#pragma once

#include <atomic>
#include <concepts>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace kiln::trace {

// Note [Structured trace format]
// Kiln writes what PyTorch's TORCH_TRACE writes (torch/_logging/_internal.py: trace_structured
// and TorchLogsFormatter(trace=True)) so that tlparse reads Kiln traces. A record is
//
//   V1130 01:23:45.678901 4242 src/capture/compile.cpp:88] {"dynamo_output_graph": {...}, ...}
//   \t<payload line 1>
//   \t<payload line 2>
//
// - The prefix is glog's: level letter (always V, as PyTorch's DEBUG records), local time as
//   MMDD HH:MM:SS.microseconds, a number, and the source file:line of the log call, then "] ".
//   PyTorch puts the process id in the number; glog (and tlparse, which calls it `thread`) means
//   the thread id, and Kiln writes the thread id: the file is already per process, and the
//   thread tells concurrent compiles apart. The path is relative to the repository root and never
//   contains ':' (tlparse's pattern is `(?<pathname>[^:]+):(?<line>\d+)\] `).
// - The JSON object is on the same line. Its first key is the record's kind and holds the
//   metadata ({"dynamo_start": {...}}, {"artifact": {"name": ..., "encoding": "string"}}). Then
//   "rank" (only when set_rank() gave one, as PyTorch does only under torch.distributed), then
//   "frame_id", "frame_compile_id", "attempt" (only when the record has a compile id), then
//   "has_payload" (only when there is a payload).
// - The payload is split at '\n' and each piece is written on its own line after a tab, so a
//   payload of N newlines gives N+1 lines (an empty payload gives one line holding only a tab).
//   `has_payload` is the lowercase hex MD5 of the payload's UTF-8 bytes, which equals the MD5 of
//   the payload lines with their leading tab removed, joined with '\n': PyTorch hashes the payload
//   string before splitting it, and tlparse checks it by joining the lines back. A '\r' before a
//   '\n' in a payload would be lost by readers that strip "\r\n" (tlparse does), so payloads use
//   plain '\n' line ends.
// - A payload built as JSON is laid out like PyTorch's: one element per line for a list
//   ("[\n" + ",\n".join(items) + "\n]"), json.dumps(indent=0) layout for anything else. The
//   separators are nlohmann's compact ones ("," and ":" where Python writes ", " and ": "), so a
//   JSON payload's bytes and MD5 differ from PyTorch's for the same value; readers parse it.
// - Files are named kiln_trace_<pid>.log, or kiln_trace_rank_<r>_<pid>.log when a rank is set
//   (PyTorch: dedicated_log_torch_trace_[rank_<r>_]<random>.log); a name already taken gets
//   _1, _2... The file is created at the first record, like PyTorch's LazyTraceHandler.
// - Each record is formatted whole and written with one write(2) under a mutex, so records from
//   concurrent threads never interleave and a crash loses at most the record being written.
//
// Kinds and artifact names follow PyTorch where the concept matches, so tlparse renders them:
//   dynamo_start {"stack": [frame...]}        a compile of a function starts
//   dynamo_output_graph {"sizes": {...}}      the captured graph (payload: its text)
//   dynamo_guards {}                          guards, payload a JSON list of {"code": "..."}
//   dynamo_cpp_guards_str {}                  the compiled guard check list as text
//   guard_added {"expr": ...}, create_symbol {"symbol", "val", "vr", "source"},
//   create_unbacked_symbol, symbolic_shape_specialization     shape-env events
//   compilation_metrics {...}                 src/trace/metrics.h
//   artifact "recompile_reasons" (json), "dynamo_graph_break_reason" (string)
// `frame` in a stack is what stack_frame() returns (interned file names, as PyTorch's
// {"str": [filename, id]} records).

// Identifies one compile: the function (frame_id), which compile of it (frame_compile_id), and
// the restart after a graph break within that compile (attempt). A default CompileId means "no
// compile": the record carries no ids.
struct CompileId {
  int frame_id = -1;
  int frame_compile_id = -1;
  int attempt = 0;

  bool has_value() const { return frame_id >= 0 && frame_compile_id >= 0; }
  // "[0/1]", "[0/1_2]" for attempt 2 (tlparse's spelling), "[-/-]" without a compile.
  std::string to_string() const;
  friend bool operator==(const CompileId&, const CompileId&) = default;
};

namespace detail {
// -1 until KILN_TRACE has been read, then 0 (off) or 1 (on).
extern std::atomic<int> trace_state;
bool read_trace_env();
// Writes one record (Note [Structured trace format]); payload nullopt means no payload.
void write_record(std::string_view kind, const CompileId& id, const nlohmann::json& metadata,
                  const std::optional<std::string>& payload, const std::source_location& where);
// A JSON payload as text, as PyTorch's trace_structured formats non-string payloads.
std::string json_payload_text(const nlohmann::json& payload);

template <class F>
using BuilderResult = std::remove_cvref_t<std::invoke_result_t<F&>>;
template <class F>
std::string build_payload(F& payload) {
  if constexpr (std::is_same_v<BuilderResult<F>, nlohmann::json>) {
    return json_payload_text(payload());
  } else {
    return std::string(payload());
  }
}
}  // namespace detail

// A function that builds a record's metadata (a JSON object) when the record is written.
template <class F>
concept MetadataBuilder =
    std::invocable<F&> && std::is_same_v<detail::BuilderResult<F>, nlohmann::json>;
// A function that builds a payload: text, or JSON (written as Note [Structured trace format]).
template <class F>
concept PayloadBuilder = std::invocable<F&> &&
    (std::is_same_v<detail::BuilderResult<F>, nlohmann::json> ||
     std::is_convertible_v<detail::BuilderResult<F>, std::string_view>);

// True when structured tracing is on: KILN_TRACE names a directory (read once, at the first call),
// or a test redirected the trace. After the first call this is one relaxed atomic load.
inline bool enabled() {
  const int state = detail::trace_state.load(std::memory_order_relaxed);
  if (state < 0) [[unlikely]] {
    return detail::read_trace_env();
  }
  return state != 0;
}

// Writes a record of `kind` without a payload. The builders run only when tracing is on.
template <MetadataBuilder Metadata>
void log(std::string_view kind, const CompileId& id, Metadata&& metadata,
         std::source_location where = std::source_location::current()) {
  if (!enabled()) return;
  detail::write_record(kind, id, metadata(), std::nullopt, where);
}

// Writes a record of `kind` with a payload. The builders run only when tracing is on.
template <MetadataBuilder Metadata, PayloadBuilder Payload>
void log(std::string_view kind, const CompileId& id, Metadata&& metadata, Payload&& payload,
         std::source_location where = std::source_location::current()) {
  if (!enabled()) return;
  detail::write_record(kind, id, metadata(), detail::build_payload(payload), where);
}

// {"artifact": {"name": name, "encoding": "string"}} with a text payload, or "encoding": "json"
// when the payload builder returns nlohmann::json.
template <PayloadBuilder Payload>
void log_artifact(std::string_view name, const CompileId& id, Payload&& payload,
                  std::source_location where = std::source_location::current()) {
  if (!enabled()) return;
  const bool is_json = std::is_same_v<detail::BuilderResult<Payload>, nlohmann::json>;
  nlohmann::json metadata = {{"name", name}, {"encoding", is_json ? "json" : "string"}};
  detail::write_record("artifact", id, metadata, detail::build_payload(payload), where);
}

// One frame of a stack in a record's metadata, the shape tlparse reads ({"filename": <interned
// id>, "line": ..., "name": ...}). The first use of a file name in a trace file writes PyTorch's
// {"str": [filename, id]} intern record. Call it only inside a builder (it writes when tracing).
nlohmann::json stack_frame(std::string_view filename, int line, std::string_view function);
nlohmann::json stack_frame(const std::source_location& where);

// Adds "rank": r to every later record and names the next file kiln_trace_rank_<r>_<pid>.log.
void set_rank(std::optional<int> rank);

// The compile in progress on this thread (empty when none), so that a backend, which only sees a
// graph, tags its artifacts (loop IR, generated code) with the compile they belong to.
const CompileId& current_compile_id();
class CompileIdScope {
 public:
  explicit CompileIdScope(CompileId id);
  ~CompileIdScope();
  CompileIdScope(const CompileIdScope&) = delete;
  CompileIdScope& operator=(const CompileIdScope&) = delete;

 private:
  CompileId previous_;
};

// The file records go to: "" before the first record (or when tracing is off).
std::string current_log_path();

// Tests: trace into `directory` (on) or nowhere (nullopt: off), ignoring KILN_TRACE; the next
// record opens a new file. reset_for_testing() forgets all that and reads KILN_TRACE again.
void set_directory_for_testing(std::optional<std::string> directory);
void reset_for_testing();

}  // namespace kiln::trace
