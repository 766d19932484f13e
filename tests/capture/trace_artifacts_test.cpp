// The structured trace of kiln::compile (KILN_TRACE): each artifact the issue lists is present,
// with the function's ids, and every payload's md5 matches has_payload.
#include <gtest/gtest.h>
#include <md5.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "src/trace/logs.h"
#include "src/trace/reader.h"
#include "src/trace/trace.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

class TraceDir {
 public:
  TraceDir()
      : path_(fs::temp_directory_path() / ("kiln_capture_trace_" + std::to_string(getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
    trace::set_directory_for_testing(path_.string());
  }
  ~TraceDir() {
    trace::reset_for_testing();
    fs::remove_all(path_);
  }
  std::vector<trace::Record> records() const {
    std::vector<trace::Record> all;
    for (const std::string& file : trace::trace_files(path_.string()))
      for (trace::Record& r : trace::read_trace(file)) all.push_back(std::move(r));
    return all;
  }
  // Every record's payload (its tab-prefixed lines, joined with '\n') hashed here.
  void check_md5_independently() const {
    for (const std::string& file : trace::trace_files(path_.string())) {
      std::ifstream in(file);
      std::vector<std::pair<std::string, std::vector<std::string>>> parsed;  // md5, lines
      for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line[0] == '\t') {
          ASSERT_FALSE(parsed.empty());
          parsed.back().second.push_back(line.substr(1));
          continue;
        }
        const size_t brace = line.find("] {");
        ASSERT_NE(brace, std::string::npos) << line;
        const nlohmann::json j = nlohmann::json::parse(line.substr(brace + 2));
        parsed.emplace_back(j.value("has_payload", std::string()), std::vector<std::string>{});
      }
      int with_payload = 0;
      for (const auto& [md5, lines] : parsed) {
        if (md5.empty()) {
          EXPECT_TRUE(lines.empty());
          continue;
        }
        std::string joined;
        for (size_t i = 0; i < lines.size(); ++i) joined += (i ? "\n" : "") + lines[i];
        char digest[MD5_DIGEST_STRING_LENGTH];
        MD5Data(reinterpret_cast<const uint8_t*>(joined.data()), joined.size(), digest);
        EXPECT_EQ(std::string(digest), md5);
        ++with_payload;
      }
      EXPECT_GT(with_payload, 0);
    }
  }

 private:
  fs::path path_;
};

TEST(CaptureTrace, EveryArtifactIsWrittenWithIdsAndPayloadMd5) {
  TraceDir dir;
  auto f = compile(
      [](const Tensor& x) {
        Tensor y = (x * 2).relu();
        if (x.size(0) > 4) y = y + 1;                 // a shape guard on s0 (second compile)
        if (y.sum().item<double>() > 1e9) y = y * 0;  // a graph break
        return y;
      },
      {.name = "traced_fn"});
  f(randn({8, 3}));
  f(randn({16, 3}));  // recompile: dim 0 becomes dynamic

  const std::vector<trace::Record> records = dir.records();
  std::map<std::string, std::vector<const trace::Record*>> by_kind;
  for (const trace::Record& r : records)
    by_kind[r.kind == "artifact" ? "artifact:" + r.artifact_name() : r.kind].push_back(&r);
  for (const char* kind : {"dynamo_start", "dynamo_output_graph", "dynamo_guards",
                           "compilation_metrics", "artifact:recompile_reasons",
                           "artifact:dynamo_graph_break_reason", "guard_added", "create_symbol"})
    EXPECT_FALSE(by_kind[kind].empty()) << "no " << kind << " record";

  // Two compiles of one function: one frame id, compile ids 0 and 1.
  std::set<int> frames, compiles;
  for (const trace::Record* r : by_kind["dynamo_start"]) {
    frames.insert(r->id.frame_id);
    compiles.insert(r->id.frame_compile_id);
  }
  EXPECT_EQ(frames.size(), 1u);
  EXPECT_EQ(compiles, (std::set<int>{0, 1}));
  // Each compile has two graph segments (the break); the graphs are the payloads.
  EXPECT_EQ(by_kind["dynamo_output_graph"].size(), 4u);
  for (const trace::Record* r : by_kind["dynamo_output_graph"]) {
    ASSERT_TRUE(r->payload.has_value());
    EXPECT_NE(r->payload->find("return"), std::string::npos) << *r->payload;
  }
  // The first segment reads x; the second returns segment 0's y as it is (no graph input needed).
  EXPECT_NE(by_kind["dynamo_output_graph"][0]->payload->find("placeholder(\"arg0\")"),
            std::string::npos)
      << *by_kind["dynamo_output_graph"][0]->payload;
  const trace::Record* reasons = by_kind["artifact:recompile_reasons"].at(0);
  EXPECT_EQ(reasons->id.frame_compile_id, 1);
  EXPECT_NE(reasons->payload->find("size of arg0 dim 0 changed from 8 to 16"), std::string::npos)
      << *reasons->payload;
  const trace::Record* brk = by_kind["artifact:dynamo_graph_break_reason"].at(0);
  EXPECT_NE(brk->payload->find("trace_artifacts_test.cpp:"), std::string::npos) << *brk->payload;
  EXPECT_NE(brk->payload->find("item()"), std::string::npos) << *brk->payload;
  bool shape_guard_seen = false;
  for (const trace::Record* r : by_kind["guard_added"])
    shape_guard_seen |= r->metadata["expr"].get<std::string>().find("s0 > 4") != std::string::npos;
  EXPECT_TRUE(shape_guard_seen);
  const trace::Record* metrics = by_kind["compilation_metrics"].back();
  EXPECT_EQ(metrics->metadata["co_name"], "traced_fn");
  EXPECT_EQ(metrics->metadata["graph_break_count"], 1);
  EXPECT_GE(metrics->metadata["trace_time_s"].get<double>(), 0.0);
  dir.check_md5_independently();
}

TEST(CaptureTrace, KilnLogsPrintsReadableLines) {
  trace::set_logs_for_testing("graph,guards,recompiles,graph_breaks");
  ::testing::internal::CaptureStderr();
  auto f = compile([](const Tensor& x) { return x + 1; }, {.name = "logged_fn"});
  f(ones({2}));
  f(ones({3}));
  const std::string err = ::testing::internal::GetCapturedStderr();
  trace::set_logs_for_testing(std::nullopt);
  EXPECT_NE(err.find("[kiln graph]"), std::string::npos) << err;
  EXPECT_NE(err.find("add.Scalar"), std::string::npos) << err;
  EXPECT_NE(err.find("[kiln guards]"), std::string::npos) << err;
  EXPECT_NE(err.find("[kiln recompiles]"), std::string::npos) << err;
  EXPECT_NE(err.find("size of arg0 dim 0 changed from 2 to 3"), std::string::npos) << err;
}

}  // namespace
}  // namespace kiln
