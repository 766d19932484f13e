// Reads structured trace files back (Note [Structured trace format] in src/trace/trace.h): for
// tests and `kiln trace-report`. Checks every record the way tlparse does and refuses a corrupt
// or truncated file with a ValueError naming the file and line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/trace/trace.h"

namespace kiln::trace {

struct Record {
  int line = 0;             // 1-based line of the record's JSON line in its file
  char level = 'V';         // glog level letter
  std::string timestamp;    // "1130 01:23:45.678901"
  int64_t thread = 0;       // the number after the time (the writer's thread id)
  std::string pathname;     // source file of the log call, as written
  int source_line = 0;      // its line
  std::string kind;         // the envelope's kind key: "dynamo_start", "artifact", "str", ...
  nlohmann::json metadata;  // envelope[kind]
  nlohmann::json envelope;  // the whole JSON object of the line
  CompileId id;             // default (no compile) when the record has no frame_id
  std::optional<int> rank;
  std::optional<std::string> payload;  // present iff the record has has_payload (md5 checked)

  // metadata["name"] for "artifact" records, "" otherwise.
  std::string artifact_name() const;
};

// Every record of one trace file, in order. Throws ValueError ("<path>:<line>: ...") for a line
// without the glog prefix, JSON that does not parse or has no single kind, a has_payload that is
// not an MD5 or does not match the payload, payload lines without has_payload, a record that
// promises a payload and has none, or a file that does not end with a newline (a partial write).
std::vector<Record> read_trace(const std::string& path);

// The trace files (kiln_trace_*.log) in `directory`, sorted by name; throws ValueError when the
// directory cannot be read.
std::vector<std::string> trace_files(const std::string& directory);

}  // namespace kiln::trace
