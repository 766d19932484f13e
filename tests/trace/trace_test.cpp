// The structured trace (src/trace): the TORCH_TRACE line format, its reader, KILN_LOGS and the
// compile metrics. Reference records come from tests/data/gen_trace_reference.py, which restates
// PyTorch's formatter with Python's json and hashlib.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <md5.h>  // libmd, to check digests independently of src/trace/md5.cpp
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/error.h"
#include "src/trace/logs.h"
#include "src/trace/md5.h"
#include "src/trace/metrics.h"
#include "src/trace/reader.h"
#include "src/trace/trace.h"

namespace kiln::trace {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;
namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Each test traces into its own fresh directory, with KILN_TRACE and KILN_LOGS out of the way.
class TraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("KILN_TRACE");
    ::unsetenv("KILN_LOGS");
    static std::atomic<int> counter{0};
    dir_ = (fs::temp_directory_path() /
            ("kiln_trace_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++)))
               .string();
    fs::remove_all(dir_);
    set_directory_for_testing(dir_);
    set_logs_for_testing(std::nullopt);
  }
  void TearDown() override {
    reset_for_testing();
    set_logs_for_testing(std::nullopt);
    ::unsetenv("KILN_TRACE");
    ::unsetenv("KILN_LOGS");
    fs::remove_all(dir_);
  }
  // The one trace file of this test's directory.
  std::string only_file() {
    const std::vector<std::string> files = trace_files(dir_);
    EXPECT_EQ(files.size(), 1u);
    return files.empty() ? "" : files[0];
  }

  std::string dir_;
};

json empty_metadata() { return json::object(); }

TEST(CompileIdTest, SpellsIdsAsTlparse) {
  EXPECT_EQ((CompileId{0, 1}).to_string(), "[0/1]");
  EXPECT_EQ((CompileId{3, 0, 2}).to_string(), "[3/0_2]");
  EXPECT_EQ(CompileId{}.to_string(), "[-/-]");
  EXPECT_FALSE(CompileId{}.has_value());
}

// RFC 1321, appendix A.5.
TEST(Md5Test, MatchesRfc1321TestSuite) {
  EXPECT_EQ(md5_hex(""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(md5_hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
  EXPECT_EQ(md5_hex("message digest"), "f96b697d7cb7938d525a2f31aaf161d0");
  EXPECT_EQ(
      md5_hex("12345678901234567890123456789012345678901234567890123456789012345678901234567890"),
      "57edf4a22be3c955ac49da2e2107b67a");
}

// The reference file is what PyTorch writes; the reader accepts it and checks its MD5s (made by
// Python's hashlib).
TEST_F(TraceTest, ReadsPyTorchShapedReference) {
  const std::vector<Record> records = read_trace(KILN_TEST_DATA_DIR "/trace_reference.log");
  ASSERT_EQ(records.size(), 8u);
  EXPECT_EQ(records[0].kind, "str");
  EXPECT_EQ(records[0].metadata, json::array({"examples/mlp.cpp", 0}));
  EXPECT_FALSE(records[0].id.has_value());
  EXPECT_EQ(records[1].kind, "dynamo_start");
  EXPECT_EQ(records[1].id, (CompileId{0, 0, 0}));
  EXPECT_EQ(records[1].line, 2);
  EXPECT_EQ(records[1].thread, 4242);
  EXPECT_EQ(records[1].pathname, "src/capture/compile.cpp");
  EXPECT_EQ(records[1].source_line, 2);
  EXPECT_EQ(records[1].timestamp, "1130 01:23:45.678903");
  EXPECT_FALSE(records[1].payload.has_value());
  EXPECT_EQ(records[2].kind, "dynamo_output_graph");
  EXPECT_EQ(records[2].line, 3);
  ASSERT_TRUE(records[2].payload.has_value());
  EXPECT_EQ(*records[2].payload,
            "graph(%0 : f32[s0, 128], %1 : f32[128, 64]):\n"
            "  %2 : f32[s0, 64] = matmul(%0, %1)\n"
            "\n"
            "  %3 : f32[s0, 64] = relu(%2)\n"
            "  return (%3)\n");
  EXPECT_EQ(records[3].kind, "dynamo_guards");
  EXPECT_EQ(records[3].line, 10);  // after the graph's six payload lines
  EXPECT_EQ(json::parse(*records[3].payload)[1]["code"], "arg0.size(1) == 128");
  EXPECT_EQ(records[4].artifact_name(), "recompile_reasons");
  EXPECT_EQ(records[4].id, (CompileId{0, 1, 0}));
  EXPECT_EQ(records[5].artifact_name(), "dynamo_graph_break_reason");
  EXPECT_EQ(records[5].id, (CompileId{0, 1, 2}));
  EXPECT_EQ(*records[5].payload, "item() at examples/mlp.cpp:30 \u2014 \u00b5s");
  EXPECT_EQ(records[6].payload, std::optional<std::string>(""));
  EXPECT_EQ(records[7].kind, "compilation_metrics");
  EXPECT_EQ(records[7].rank, std::optional<int>(3));
  EXPECT_FALSE(records[6].rank.has_value());
}

// Kiln's writer produces the reference records: same kinds, metadata, ids, payloads and MD5s.
TEST_F(TraceTest, WriterReproducesPyTorchReference) {
  const CompileId first{0, 0, 0};
  log("dynamo_start", first, [] {
    return json{{"stack", json::array({stack_frame("examples/mlp.cpp", 12, "forward")})}};
  });
  log(
      "dynamo_output_graph", first,
      [] {
        return json{{"sizes", {{"arg0", json::array({"s0", 128})}, {"arg1", {128, 64}}}}};
      },
      [] {
        return std::string(
            "graph(%0 : f32[s0, 128], %1 : f32[128, 64]):\n"
            "  %2 : f32[s0, 64] = matmul(%0, %1)\n"
            "\n"
            "  %3 : f32[s0, 64] = relu(%2)\n"
            "  return (%3)\n");
      });
  log("dynamo_guards", first, empty_metadata, [] {
    return json::array({{{"code", "arg0.dtype == float32"}}, {{"code", "arg0.size(1) == 128"}}});
  });
  log_artifact("recompile_reasons", CompileId{0, 1, 0},
               [] { return json::array({"size of arg0 dim 0 changed from 8 to 16"}); });
  log_artifact("dynamo_graph_break_reason", CompileId{0, 1, 2},
               [] { return "item() at examples/mlp.cpp:30 \u2014 \u00b5s"; });
  log_artifact("empty_payload", CompileId{1, 0, 0}, [] { return std::string(); });
  set_rank(3);
  log("compilation_metrics", CompileId{0, 1, 2}, [] {
    return json{{"co_name", "forward"},
                {"graph_op_count", 2},
                {"entire_frame_compile_time_s", 0.25},
                {"fail_type", nullptr}};
  });
  set_rank(std::nullopt);

  const std::vector<Record> expected = read_trace(KILN_TEST_DATA_DIR "/trace_reference.log");
  const std::vector<Record> actual = read_trace(only_file());
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    SCOPED_TRACE("record " + std::to_string(i) + " (" + expected[i].kind + ")");
    EXPECT_EQ(actual[i].line, expected[i].line);  // same payload line counts
    EXPECT_EQ(actual[i].id, expected[i].id);
    EXPECT_EQ(actual[i].rank, expected[i].rank);
    const bool json_payload =
        expected[i].kind == "dynamo_guards" ||
        (expected[i].kind == "artifact" && expected[i].metadata["encoding"] == "json");
    if (!json_payload) {
      // Byte for byte, has_payload included (hashlib's MD5).
      EXPECT_EQ(actual[i].envelope, expected[i].envelope);
      EXPECT_EQ(actual[i].payload, expected[i].payload);
      continue;
    }
    // JSON payloads: the same value, one element per line; the separators differ from Python's
    // (Note [Structured trace format]), so the bytes and MD5 do too.
    json actual_envelope = actual[i].envelope;
    json expected_envelope = expected[i].envelope;
    actual_envelope.erase("has_payload");
    expected_envelope.erase("has_payload");
    EXPECT_EQ(actual_envelope, expected_envelope);
    ASSERT_TRUE(actual[i].payload.has_value());
    EXPECT_EQ(json::parse(*actual[i].payload), json::parse(*expected[i].payload));
    EXPECT_EQ(actual[i].envelope["has_payload"], md5_hex(*actual[i].payload));
  }
  // The envelope's keys come in PyTorch's order: kind, rank, ids, has_payload.
  const std::string text = read_file(only_file());
  EXPECT_THAT(text, HasSubstr("{\"compilation_metrics\":{"));
  EXPECT_THAT(text,
              HasSubstr("},\"rank\":3,\"frame_id\":0,\"frame_compile_id\":1,\"attempt\":2}\n"));
  EXPECT_THAT(
      text,
      HasSubstr(",\"attempt\":0,\"has_payload\":\"d41d8cd98f00b204e9800998ecf8427e\"}\n\t\n"));
}

// Parses a written file without src/trace/reader: tlparse's prefix pattern, the JSON, the payload
// lines, and libmd's MD5Data on the joined payload.
TEST_F(TraceTest, IndependentParseOfWrittenRecords) {
  const int line_graph = __LINE__ + 1;
  log(
      "dynamo_output_graph", CompileId{2, 5, 1},
      [] {
        return json{{"sizes", json::object()}};
      },
      [] { return std::string("a\n\tb\n\nc\n"); });
  const int line_metrics = __LINE__ + 1;
  log("compilation_metrics", CompileId{2, 5, 1}, [] { return json{{"graph_op_count", 7}}; });

  std::vector<std::string> lines;
  std::istringstream in(read_file(only_file()));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 7u);  // record, 5 payload lines ("a", "\tb", "", "c", ""), record

  const std::regex glog(
      R"(^([VIWEC])(\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2}).(\d{6}) (\d+)([^:]+):(\d+)\] (.*)$)");
  std::smatch match;
  ASSERT_TRUE(std::regex_match(lines[0], match, glog)) << lines[0];
  EXPECT_EQ(match[1], "V");
  EXPECT_EQ(std::stol(match[8]), static_cast<long>(::gettid()));
  EXPECT_EQ(match[9], " tests/trace/trace_test.cpp");  // tlparse's pathname includes the space
  EXPECT_EQ(std::stoi(match[10]), line_graph);
  EXPECT_TRUE(match[11].str().starts_with("{\"dynamo_output_graph\":{"));  // the kind first
  const json envelope = json::parse(match[11].str());
  EXPECT_EQ(envelope["frame_id"], 2);
  EXPECT_EQ(envelope["frame_compile_id"], 5);
  EXPECT_EQ(envelope["attempt"], 1);
  EXPECT_FALSE(envelope.contains("rank"));

  std::string payload;
  for (size_t i = 1; i <= 5; ++i) {
    ASSERT_TRUE(lines[i].starts_with('\t')) << i;
    payload += (i > 1 ? "\n" : "") + lines[i].substr(1);
  }
  EXPECT_EQ(payload, "a\n\tb\n\nc\n");
  char digest[MD5_DIGEST_STRING_LENGTH];
  MD5Data(reinterpret_cast<const uint8_t*>(payload.data()), payload.size(), digest);
  EXPECT_EQ(envelope["has_payload"], std::string(digest));

  ASSERT_TRUE(std::regex_match(lines[6], match, glog)) << lines[6];
  EXPECT_EQ(std::stoi(match[10]), line_metrics);
  const json metrics = json::parse(match[11].str());
  EXPECT_FALSE(metrics.contains("has_payload"));
  EXPECT_EQ(metrics["compilation_metrics"]["graph_op_count"], 7);
}

TEST_F(TraceTest, RecordsWithoutCompileIdCarryNoIds) {
  log("kiln_note", CompileId{}, [] { return json{{"what", "outside a compile"}}; });
  const std::vector<Record> records = read_trace(only_file());
  ASSERT_EQ(records.size(), 1u);
  EXPECT_FALSE(records[0].envelope.contains("frame_id"));
  EXPECT_FALSE(records[0].envelope.contains("attempt"));
  EXPECT_FALSE(records[0].id.has_value());
}

TEST_F(TraceTest, DisabledTracingBuildsNothing) {
  set_directory_for_testing(std::nullopt);
  EXPECT_FALSE(enabled());
  int built = 0;
  const auto metadata = [&] {
    ++built;
    return json::object();
  };
  const auto payload = [&] {
    ++built;
    return std::string("x");
  };
  log("dynamo_start", CompileId{0, 0}, metadata);
  log("dynamo_output_graph", CompileId{0, 0}, metadata, payload);
  log_artifact("recompile_reasons", CompileId{0, 0}, payload);
  log_compile_metrics([&] {
    ++built;
    return CompileMetrics{};
  });
  EXPECT_EQ(built, 0);
  EXPECT_EQ(current_log_path(), "");
  EXPECT_FALSE(fs::exists(dir_));

  set_directory_for_testing(dir_);
  EXPECT_TRUE(enabled());
  log("dynamo_output_graph", CompileId{0, 0}, metadata, payload);
  EXPECT_EQ(built, 2);
}

TEST_F(TraceTest, KilnTraceEnvironmentVariable) {
  reset_for_testing();
  EXPECT_FALSE(enabled());  // KILN_TRACE unset
  reset_for_testing();
  ::setenv("KILN_TRACE", dir_.c_str(), 1);
  EXPECT_TRUE(enabled());
  log("dynamo_start", CompileId{0, 0}, empty_metadata);
  EXPECT_EQ(fs::path(current_log_path()).parent_path(), fs::path(dir_));
  EXPECT_EQ(fs::path(current_log_path()).filename(),
            "kiln_trace_" + std::to_string(::getpid()) + ".log");
  EXPECT_EQ(read_trace(only_file()).size(), 1u);
  reset_for_testing();
  ::setenv("KILN_TRACE", "", 1);
  EXPECT_FALSE(enabled());  // empty means off
}

TEST_F(TraceTest, RankNamesTheFileAndTagsRecords) {
  set_rank(2);
  log("dynamo_start", CompileId{0, 0}, empty_metadata);
  const std::string expected_name = "kiln_trace_rank_2_" + std::to_string(::getpid()) + ".log";
  EXPECT_EQ(fs::path(current_log_path()).filename(), expected_name);
  EXPECT_EQ(read_trace(current_log_path())[0].rank, std::optional<int>(2));
  // Reopening in the same directory never overwrites: the next file gets a suffix.
  set_directory_for_testing(dir_);
  log("dynamo_start", CompileId{0, 1}, empty_metadata);
  EXPECT_EQ(fs::path(current_log_path()).filename(),
            "kiln_trace_rank_2_" + std::to_string(::getpid()) + "_1.log");
  EXPECT_EQ(trace_files(dir_).size(), 2u);
  EXPECT_THROW(set_rank(-1), ValueError);
}

TEST_F(TraceTest, ConcurrentThreadsWriteWholeRecords) {
  constexpr int kThreads = 8;
  constexpr int kRecords = 150;
  const auto payload_for = [](int thread, int i) {
    std::string text;
    for (int line = 0; line < 1 + (i % 5); ++line) {
      text += "thread " + std::to_string(thread) + " record " + std::to_string(i) + " line " +
              std::to_string(line) + "\n";
    }
    return text;
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRecords; ++i) {
        log(
            "dynamo_output_graph", CompileId{t, i},
            [&] {
              return json{{"thread", t}};
            },
            [&] { return payload_for(t, i); });
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  const std::vector<Record> records = read_trace(only_file());  // checks every MD5
  ASSERT_EQ(records.size(), static_cast<size_t>(kThreads * kRecords));
  std::vector<int> next(kThreads, 0);  // each thread's records appear in its order
  for (const Record& record : records) {
    const int t = record.id.frame_id;
    ASSERT_GE(t, 0);
    ASSERT_LT(t, kThreads);
    EXPECT_EQ(record.metadata["thread"], t);
    EXPECT_EQ(record.id.frame_compile_id, next[t]);
    EXPECT_EQ(record.payload, payload_for(t, next[t]));
    ++next[t];
  }
  EXPECT_EQ(next, std::vector<int>(kThreads, kRecords));
}

TEST_F(TraceTest, StackFramesInternFileNamesOncePerFile) {
  log("dynamo_start", CompileId{0, 0}, [] {
    return json{{"stack", json::array({stack_frame("a.cpp", 1, "f"), stack_frame("b.cpp", 2, "g"),
                                       stack_frame("a.cpp", 3, "h")})}};
  });
  std::vector<Record> records = read_trace(only_file());
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].metadata, json::array({"a.cpp", 0}));
  EXPECT_EQ(records[1].metadata, json::array({"b.cpp", 1}));
  EXPECT_EQ(records[2].metadata["stack"][2], (json{{"filename", 0}, {"line", 3}, {"name", "h"}}));
  // A new file carries its own intern records.
  fs::remove_all(dir_);
  set_directory_for_testing(dir_);
  const std::source_location here = std::source_location::current();
  log("dynamo_start", CompileId{0, 1}, [&] {
    return json{{"stack", json::array({stack_frame(here)})}};
  });
  records = read_trace(only_file());
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].metadata, json::array({"tests/trace/trace_test.cpp", 0}));
  EXPECT_EQ(records[1].metadata["stack"][0]["line"], here.line());
}

TEST_F(TraceTest, RefusesReservedAndEmptyKinds) {
  EXPECT_THAT(
      [] {
        log("frame_id", CompileId{0, 0}, empty_metadata);
      },
      ::testing::ThrowsMessage<ValueError>(HasSubstr("envelope key")));
  EXPECT_THROW(log("", CompileId{0, 0}, empty_metadata), ValueError);
}

TEST_F(TraceTest, InvalidUtf8IsReplacedNotThrown) {
  log("artifact_note", CompileId{0, 0}, [] { return json{{"file", std::string("a\xff.cpp")}}; });
  const std::vector<Record> records = read_trace(only_file());
  EXPECT_EQ(records[0].metadata["file"], "a\xEF\xBF\xBD.cpp");
}

TEST_F(TraceTest, UnwritableDirectoryIsAValueError) {
  fs::create_directories(dir_);
  const std::string file = dir_ + "/plain_file";
  write_file(file, "x");
  set_directory_for_testing(file + "/sub");
  EXPECT_THAT(
      [] {
        log("dynamo_start", CompileId{0, 0}, empty_metadata);
      },
      ::testing::ThrowsMessage<ValueError>(HasSubstr("KILN_TRACE")));
}

TEST_F(TraceTest, TraceFilesListsOnlyTraces) {
  log("dynamo_start", CompileId{0, 0}, empty_metadata);
  write_file(dir_ + "/notes.txt", "x");
  EXPECT_EQ(trace_files(dir_).size(), 1u);
  EXPECT_THROW(trace_files(dir_ + "/missing"), ValueError);
}

// A trace written by Kiln, then damaged in one way; the reader names the line.
class CorruptTraceTest : public TraceTest {
 protected:
  // Line 1: a record with a two-line payload (lines 2-3); line 4: a record without payload.
  std::string write_sample() {
    log("dynamo_output_graph", CompileId{0, 0}, empty_metadata,
        [] { return std::string("first\nsecond"); });
    log("compilation_metrics", CompileId{0, 0}, empty_metadata);
    return only_file();
  }
  std::vector<std::string> lines_of(const std::string& path) {
    std::vector<std::string> lines;
    std::istringstream in(read_file(path));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
  std::string join(const std::vector<std::string>& lines) {
    std::string text;
    for (const std::string& line : lines) text += line + "\n";
    return text;
  }
  void expect_error(const std::string& path, const std::string& fragment) {
    EXPECT_THAT([&] { read_trace(path); },
                ::testing::ThrowsMessage<ValueError>(HasSubstr(fragment)));
  }
};

TEST_F(CorruptTraceTest, IntactSampleReads) {
  const std::string path = write_sample();
  ASSERT_EQ(lines_of(path).size(), 4u);
  EXPECT_EQ(read_trace(path).size(), 2u);
}

TEST_F(CorruptTraceTest, TruncatedMidRecord) {
  const std::string path = write_sample();
  const std::string text = read_file(path);
  write_file(path, text.substr(0, text.size() - 10));  // cuts line 4 short, no newline
  expect_error(path, path + ":4: the last line does not end with a newline");
}

TEST_F(CorruptTraceTest, TruncatedJsonLine) {
  const std::string path = write_sample();
  std::vector<std::string> lines = lines_of(path);
  lines[3].resize(lines[3].size() - 5);
  write_file(path, join(lines));
  expect_error(path, path + ":4: the record's JSON is not valid JSON");
}

TEST_F(CorruptTraceTest, PayloadMissing) {
  const std::string path = write_sample();
  std::vector<std::string> lines = lines_of(path);
  write_file(path, lines[0] + "\n");
  expect_error(path, path + ":1: the record has a payload (has_payload) but no payload lines");
}

TEST_F(CorruptTraceTest, PayloadLineLost) {
  const std::string path = write_sample();
  std::vector<std::string> lines = lines_of(path);
  lines.erase(lines.begin() + 2);
  write_file(path, join(lines));
  expect_error(path, path + ":1: the payload's MD5 is " + md5_hex("first") + " but has_payload");
}

TEST_F(CorruptTraceTest, PayloadByteChanged) {
  const std::string path = write_sample();
  std::vector<std::string> lines = lines_of(path);
  lines[2][1] = 'S';
  write_file(path, join(lines));
  expect_error(path, path + ":1: the payload's MD5");
}

TEST_F(CorruptTraceTest, BadDigest) {
  const std::string path = write_sample();
  std::vector<std::string> lines = lines_of(path);
  const size_t at = lines[0].find("\"has_payload\":\"");
  lines[0].replace(at + 15, 32, std::string(31, 'z'));
  write_file(path, join(lines));
  expect_error(path, path + ":1: has_payload is");
}

TEST_F(CorruptTraceTest, PayloadLineWithoutRecord) {
  const std::string path = write_sample();
  std::vector<std::string> lines = lines_of(path);
  lines.push_back("\tstray");
  write_file(path, join(lines));
  expect_error(path, path + ":5: a payload line follows a record without has_payload");
}

TEST_F(CorruptTraceTest, GarbageLine) {
  const std::string path = write_sample();
  std::vector<std::string> lines = lines_of(path);
  lines.insert(lines.begin() + 3, "V1130 oops");
  write_file(path, join(lines));
  expect_error(path, path + ":4: the line does not start with a glog prefix");
}

TEST_F(CorruptTraceTest, TwoKindsOrNone) {
  const std::string path = write_sample();
  std::vector<std::string> lines = lines_of(path);
  const size_t brace = lines[3].find("] {");
  lines[3] = lines[3].substr(0, brace + 2) + R"({"a": {}, "b": {}})";
  write_file(path, join(lines));
  expect_error(path, path + ":4: the record has two kinds");
  lines[3] = lines[3].substr(0, brace + 2) + R"({"frame_id": 0})";
  write_file(path, join(lines));
  expect_error(path, path + ":4: the record has no kind");
  lines[3] = lines[3].substr(0, brace + 2) + R"({"k": {}, "frame_id": -1})";
  write_file(path, join(lines));
  expect_error(path, path + ":4: \"frame_id\" is -1");
}

TEST_F(CorruptTraceTest, MissingFile) {
  expect_error(dir_ + "/none.log", "cannot open the trace file");
}

// KILN_LOGS (Note [KILN_LOGS]).
uint32_t bit(LogCategory category) { return 1u << static_cast<int>(category); }

TEST_F(TraceTest, ParsesLogSpecs) {
  EXPECT_EQ(parse_log_spec(""), 0u);
  EXPECT_EQ(parse_log_spec("graph"), bit(LogCategory::graph));
  EXPECT_EQ(
      parse_log_spec(" graph , recompiles,,graph_breaks"),
      bit(LogCategory::graph) | bit(LogCategory::recompiles) | bit(LogCategory::graph_breaks));
  EXPECT_EQ(parse_log_spec("+guards"), bit(LogCategory::guards));
  uint32_t all = 0;
  for (size_t i = 0; i < log_category_names().size(); ++i) {
    all |= bit(static_cast<LogCategory>(i));
    EXPECT_EQ(parse_log_spec(log_category_names()[i]), bit(static_cast<LogCategory>(i)));
  }
  EXPECT_EQ(log_category_names().size(), static_cast<size_t>(kNumLogCategories));
  EXPECT_EQ(parse_log_spec("all"), all);
  EXPECT_EQ(parse_log_spec("+all"), all);
  EXPECT_EQ(log_category_name(LogCategory::output_code), "output_code");
}

TEST_F(TraceTest, UnknownLogNameListsValidNames) {
  EXPECT_THAT([] { parse_log_spec("graph,grpah"); },
              ::testing::ThrowsMessage<ValueError>(HasSubstr(
                  "unknown log name 'grpah' in 'graph,grpah'; valid names: all, graph, "
                  "guards, recompiles, graph_breaks, dynamic, output_code, aot, passes")));
  EXPECT_THROW(parse_log_spec("dynamo"), ValueError);
}

TEST_F(TraceTest, KilnLogsEnvironmentVariable) {
  ::setenv("KILN_LOGS", "recompiles,guards", 1);
  set_logs_for_testing(std::nullopt);
  EXPECT_TRUE(log_enabled(LogCategory::recompiles));
  EXPECT_TRUE(log_enabled(LogCategory::guards));
  EXPECT_FALSE(log_enabled(LogCategory::graph));
  ::setenv("KILN_LOGS", "recompiles,bogus", 1);
  set_logs_for_testing(std::nullopt);
  EXPECT_THAT([] { log_enabled(LogCategory::graph); },
              ::testing::ThrowsMessage<ValueError>(HasSubstr("'bogus'")));
  ::unsetenv("KILN_LOGS");
  set_logs_for_testing(std::nullopt);
  EXPECT_FALSE(log_enabled(LogCategory::recompiles));
}

TEST_F(TraceTest, ReadableLogsPrefixEveryLine) {
  set_logs_for_testing("graph,recompiles");
  int built = 0;
  ::testing::internal::CaptureStderr();
  log_readable(LogCategory::graph, "%0 = input\n%1 = relu(%0)\n", CompileId{0, 1});
  log_readable(
      LogCategory::recompiles, [] { return std::string("size changed"); }, CompileId{0, 2, 1});
  log_readable(LogCategory::guards, "not printed");
  log_readable(LogCategory::dynamic, [&] {
    ++built;
    return std::string("not built");
  });
  log_readable(LogCategory::graph, "no compile id");
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(printed,
            "[kiln graph] [0/1] %0 = input\n"
            "[kiln graph] [0/1] %1 = relu(%0)\n"
            "[kiln recompiles] [0/2_1] size changed\n"
            "[kiln graph] no compile id\n");
  EXPECT_EQ(built, 0);
}

// Compile metrics (Note [Compile metrics fields]).
TEST_F(TraceTest, CompileMetricsRecord) {
  log_compile_metrics([] {
    CompileMetrics metrics;
    metrics.id = CompileId{1, 2};
    metrics.co_name = "forward";
    metrics.entire_frame_compile_time_s = 0.5;
    metrics.trace_time_s = 0.25;
    metrics.guard_build_time_s = 0.125;
    metrics.graph_op_count = 4;
    metrics.graph_node_count = 7;
    metrics.guard_count = -3;  // clamped: tlparse reads counts as unsigned
    metrics.graph_break_count = 1;
    metrics.recompile_reasons = {"size of arg0 dim 0 changed from 8 to 16"};
    return metrics;
  });
  const std::vector<Record> records = read_trace(only_file());
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].kind, "compilation_metrics");
  EXPECT_EQ(records[0].id, (CompileId{1, 2}));
  EXPECT_FALSE(records[0].payload.has_value());
  const json& m = records[0].metadata;
  EXPECT_EQ(m["co_name"], "forward");
  EXPECT_EQ(m["entire_frame_compile_time_s"], 0.5);
  EXPECT_EQ(m["trace_time_s"], 0.25);
  EXPECT_EQ(m["guard_build_time_s"], 0.125);
  EXPECT_EQ(m["graph_op_count"], 4);
  EXPECT_EQ(m["graph_node_count"], 7);
  EXPECT_EQ(m["guard_count"], 0);
  EXPECT_EQ(m["graph_break_count"], 1);
  EXPECT_EQ(m["recompile_reasons"][0], "size of arg0 dim 0 changed from 8 to 16");
  EXPECT_TRUE(m["fail_type"].is_null());
  EXPECT_TRUE(m["fail_user_frame_lineno"].is_null());
  EXPECT_TRUE(m["restart_reasons"].is_array());
}

TEST_F(TraceTest, FailedCompileMetrics) {
  CompileMetrics metrics;
  metrics.fail_type = "GraphBreakError";
  metrics.fail_reason = "item() with fullgraph=true";
  metrics.fail_user_frame_filename = "examples/mlp.cpp";
  metrics.fail_user_frame_lineno = 30;
  const json m = metrics.to_json();
  EXPECT_EQ(m["fail_type"], "GraphBreakError");
  EXPECT_EQ(m["fail_reason"], "item() with fullgraph=true");
  EXPECT_EQ(m["fail_user_frame_filename"], "examples/mlp.cpp");
  EXPECT_EQ(m["fail_user_frame_lineno"], 30);
}

TEST(StopwatchTest, CountsUp) {
  const Stopwatch watch;
  const double first = watch.seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_GE(first, 0.0);
  EXPECT_GE(watch.seconds(), first + 0.001);
}

}  // namespace
}  // namespace kiln::trace
