// Programs to and from JSON, verify(), and the graph-level cache.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "kiln/error.h"
#include "runtime_test_helpers.h"
#include "src/runtime/program_json.h"

namespace kiln::runtime {
namespace {

using ::testing::HasSubstr;

sym::ExprPtr S(const char* name) { return sym::symbol(name); }
sym::ExprPtr I(int64_t v) { return sym::integer(v); }

// A program with every kind of step, buffer and symbol source.
Program full_program() {
  Program p;
  p.num_inputs = 2;
  p.symbols = {S("s0"), S("s1"), S("u0")};
  p.symbol_sources = {{S("s0"), SymbolSource::From::InputSize, 0, 0},
                      {S("s1"), SymbolSource::From::InputStride, 1, 0},
                      {S("u0"), SymbolSource::From::ExternOutputSize, 1, 0, 0}};
  BufferDesc arg0{BufferDesc::Kind::Input, "arg0", kFloat32, {}, 0, -1};
  BufferDesc arg1{BufferDesc::Kind::Input, "arg1", kUInt16, {}, 1, -1};
  Layout buf0_layout{{sym::add(S("s0"), I(1)), I(4)}, {I(4), I(1)}, nullptr};
  BufferDesc buf0{BufferDesc::Kind::Intermediate, "buf0", kFloat32, buf0_layout, -1, 0};
  BufferDesc buf1{BufferDesc::Kind::Extern, "buf1", kFloat32, {{S("s0")}, {I(1)}, nullptr}, -1, -1};
  BufferDesc buf2{
      BufferDesc::Kind::Extern, "buf2", kInt64, {{S("u0"), I(1)}, {I(1), I(1)}, nullptr}, -1, -1};
  BufferDesc buf3{BufferDesc::Kind::Intermediate, "buf3", kBool, {{S("u0")}, {I(1)}, I(2)}, -1, 0};
  p.buffers = {arg0, arg1, buf0, buf1, buf2, buf3};
  p.slot_bytes = {sym::max(sym::mul(I(16), sym::add(S("s0"), I(1))), sym::add(S("u0"), I(2)))};
  ExternStep first;
  first.call = "%0 : f32[s0] = placeholder(\"x\")\n%1 : f32[s0] = relu(%0)\nreturn (%1)\n";
  first.args = {0};
  first.arg_views = {Layout{{S("s0")}, {I(1)}, I(3)}};
  first.outputs = {3};
  ExternStep second;
  second.call = "%0 : f32[s0] = placeholder(\"x\")\n%1 : i64[u0, 1] = nonzero(%0)\nreturn (%1)\n";
  second.args = {3};
  second.outputs = {4};
  p.steps = {first, second, KernelStep{"kernel0", {0, 2, 4, 5}}, CopyStep{0, 2}};
  p.outputs = {OutputDesc{2, Layout{{I(4), sym::add(S("s0"), I(1))}, {I(1), I(4)}, nullptr}},
               OutputDesc{5, Layout{{S("u0")}, {I(1)}, I(2)}}};
  p.source_hash = "abc123";
  return p;
}

TEST(ProgramJson, RoundTripsEveryField) {
  const Program p = full_program();
  const std::string text = to_json(p);
  const Program q = program_from_json(text);
  EXPECT_EQ(to_json(q), text);
  // Spot checks that the fields really came back (not just the same text twice).
  EXPECT_EQ(q.num_inputs, 2);
  EXPECT_EQ(q.symbols, p.symbols);  // interned: equal expressions are equal pointers
  EXPECT_EQ(q.symbol_sources[1].from, SymbolSource::From::InputStride);
  EXPECT_EQ(q.symbol_sources[2].from, SymbolSource::From::ExternOutputSize);
  EXPECT_EQ(q.symbol_sources[2].index, 1);
  EXPECT_EQ(q.buffers[1].dtype, kUInt16);
  EXPECT_EQ(q.buffers[5].dtype, kBool);
  EXPECT_EQ(q.buffers[2].layout.sizes[0], sym::add(S("s0"), I(1)));
  EXPECT_EQ(q.buffers[5].layout.offset, I(2));
  EXPECT_EQ(q.slot_bytes, p.slot_bytes);
  ASSERT_EQ(q.steps.size(), 4u);
  const auto& first = std::get<ExternStep>(q.steps[0]);
  EXPECT_EQ(first.call, std::get<ExternStep>(p.steps[0]).call);
  EXPECT_EQ(first.arg_views[0].offset, I(3));
  EXPECT_EQ(std::get<KernelStep>(q.steps[2]).buffers, (std::vector<int>{0, 2, 4, 5}));
  EXPECT_EQ(std::get<CopyStep>(q.steps[3]).src, 2);
  EXPECT_EQ(q.outputs[0].view.strides[1], I(4));
  EXPECT_EQ(q.source_hash, "abc123");
  EXPECT_THAT(text, HasSubstr("\"s0 + 1\""));  // expressions as sym::to_string text
  EXPECT_THAT(text, HasSubstr("\"u16\""));     // dtypes by their short names
}

// Replaces the first occurrence of `from` in `text` (which must contain it).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

void expect_malformed(const std::string& text, std::initializer_list<std::string_view> parts) {
  try {
    program_from_json(text);
    ADD_FAILURE() << "expected ValueError for\n" << text;
  } catch (const ValueError& e) {
    for (std::string_view part : parts) EXPECT_THAT(e.what(), HasSubstr(std::string(part)));
  }
}

// A program whose extern step carries compiled bodies (Note [Higher-order ops in a program]) and
// whose symbol is the value of an extern output (Note [Scalar outputs in a graph]).
TEST(ProgramJson, RoundTripsBodiesAndValueSymbols) {
  Program body;
  body.num_inputs = 1;
  body.buffers = {BufferDesc{BufferDesc::Kind::Input, "arg0", kFloat32, {}, 0, -1}};
  body.outputs = {OutputDesc{0, Layout{{I(3)}, {I(1)}, nullptr}}};
  Program p;
  p.num_inputs = 2;
  p.symbols = {S("u7")};
  p.symbol_sources = {{S("u7"), SymbolSource::From::ExternOutputValue, 0, 0, 0}};
  p.buffers = {
      BufferDesc{BufferDesc::Kind::Input, "arg0", kInt64, {}, 0, -1},
      BufferDesc{BufferDesc::Kind::Input, "arg1", kFloat32, {}, 1, -1},
      BufferDesc{BufferDesc::Kind::Extern, "buf0", kInt64, {}, -1, -1},
      BufferDesc{BufferDesc::Kind::Extern, "buf1", kFloat32, {{I(3)}, {I(1)}, nullptr}, -1, -1}};
  ExternStep item;
  item.call = "%0 : i64[] = placeholder(\"x\")\n%1 : i64[] = relu(%0)\nreturn (%1)\n";
  item.args = {0};
  item.outputs = {2};
  ExternStep branch;
  branch.call = "%0 : f32[3] = placeholder(\"x\")\n%1 : f32[3] = relu(%0)\nreturn (%1)\n";
  branch.args = {1};
  branch.outputs = {3};
  branch.bodies = {body, body};
  p.steps = {item, branch};
  p.outputs = {OutputDesc{3, Layout{{S("u7")}, {I(1)}, nullptr}}};
  const std::string text = to_json(p);
  const Program q = program_from_json(text);
  EXPECT_EQ(to_json(q), text);
  EXPECT_EQ(q.symbol_sources[0].from, SymbolSource::From::ExternOutputValue);
  const auto& step = std::get<ExternStep>(q.steps[1]);
  ASSERT_EQ(step.bodies.size(), 2u);
  EXPECT_EQ(step.bodies[1].num_inputs, 1);
  EXPECT_EQ(step.bodies[1].outputs[0].view.sizes[0], I(3));
  EXPECT_THAT(text, HasSubstr("\"extern_output_value\""));
  // A malformed body is named by its path, and an inconsistent one fails verify().
  std::string broken = text;
  const std::string last_count = "\"num_inputs\": 1";  // bodies[1]'s, the last one printed
  broken.replace(broken.rfind(last_count), last_count.size(), "\"num_inputs\": \"one\"");
  expect_malformed(broken, {"steps[1].extern.bodies[1].num_inputs", "expected an integer"});
  Program bad = p;
  std::get<ExternStep>(bad.steps[1]).bodies[0].outputs[0].buffer = 5;
  expect_malformed(to_json(bad), {"step 1: body 0", "buffer 5"});
}

TEST(ProgramJson, MalformedTextIsAValueErrorNamingWhatIsWrong) {
  const std::string good = to_json(full_program());
  expect_malformed("{\"format\": ", {"not valid JSON"});
  expect_malformed("[1, 2]", {"expected an object"});
  expect_malformed(replaced(good, "\"kiln.program\"", "\"other\""), {"format", "kiln.program"});
  expect_malformed(replaced(good, "\"version\": 1", "\"version\": 9"), {"version 9"});
  expect_malformed(replaced(good, "\"num_inputs\": 2", "\"num_inputs\": \"2\""),
                   {"num_inputs", "expected an integer"});
  expect_malformed(replaced(good, "\"buffers\"", "\"buffer_list\""), {"missing field \"buffers\""});
  expect_malformed(replaced(good, "\"u16\"", "\"u17\""),
                   {"buffers[1].dtype", "unknown dtype \"u17\""});
  expect_malformed(replaced(good, "\"intermediate\"", "\"scratch\""),
                   {"buffers[2].kind", "scratch"});
  expect_malformed(replaced(good, "\"s0 + 1\"", "\"s0 + + 1\""),
                   {"buffers[2].layout.sizes[0]", "not an expression"});
  expect_malformed(replaced(good, "\"copy\"", "\"move\""), {"steps[3]", "move"});
  expect_malformed(replaced(good, "\"input_stride\"", "\"input_offset\""),
                   {"symbol_sources[1].from", "input_offset"});
  expect_malformed(replaced(good, "\"dst\": 0", "\"dst\": 1.5"), {"steps[3].copy.dst"});
  // Well-formed JSON, inconsistent program: verify() names the problem.
  expect_malformed(replaced(good, "\"dst\": 0", "\"dst\": 60"), {"step 3", "buffer 60"});
}

TEST(ProgramVerify, RejectsInconsistentPrograms) {
  const auto expect_rejected = [](const Program& p, std::initializer_list<std::string_view> parts) {
    try {
      verify(p);
      ADD_FAILURE() << "expected ValueError";
    } catch (const ValueError& e) {
      for (std::string_view part : parts) EXPECT_THAT(e.what(), HasSubstr(std::string(part)));
    }
  };
  verify(full_program());  // the reference program is consistent

  Program early = full_program();  // u0 (bound by step 1) sizes an arg view of step 0
  std::get<ExternStep>(early.steps[0]).arg_views[0].sizes[0] = S("u0");
  expect_rejected(early, {"u0", "only known after step 1"});

  Program unknown = full_program();
  unknown.slot_bytes[0] = S("s9");
  expect_rejected(unknown, {"s9", "not in the program's symbols"});

  Program no_producer = full_program();
  std::get<ExternStep>(no_producer.steps[0]).outputs.clear();  // buf1 is produced by nobody
  expect_rejected(no_producer, {"buf1", "no extern step produces it"});

  Program bad_slot = full_program();
  bad_slot.buffers[2].slot = 3;
  expect_rejected(bad_slot, {"buf0", "slot 3", "1 slots"});

  Program sources = full_program();
  sources.symbol_sources.pop_back();
  expect_rejected(sources, {"3 symbols but 2 symbol sources"});

  Program duplicate = full_program();
  duplicate.buffers[3].name = "buf0";
  expect_rejected(duplicate, {"both named 'buf0'"});

  Program views = full_program();
  std::get<ExternStep>(views.steps[0]).arg_views.push_back(Layout{});
  expect_rejected(views, {"1 args but 2 arg views"});
}

TEST(GraphCache, StoresLoadsAndIgnoresDamagedEntries) {
  testing::ScopedCacheDir dir;
  EXPECT_EQ(load_program("0f1e2d"), std::nullopt);
  const Program p = full_program();
  store_program("0f1e2d", p);
  const std::filesystem::path file = dir.path() / "graphs" / "0f1e2d.json";
  ASSERT_TRUE(std::filesystem::exists(file));
  std::optional<Program> loaded = load_program("0f1e2d");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(to_json(*loaded), to_json(p));

  // A damaged entry reads as absent, and the next store replaces it.
  std::filesystem::resize_file(file, std::filesystem::file_size(file) / 2);
  EXPECT_EQ(load_program("0f1e2d"), std::nullopt);
  store_program("0f1e2d", p);
  EXPECT_TRUE(load_program("0f1e2d").has_value());

  EXPECT_THROW(store_program("../outside", p), ValueError);
  EXPECT_THROW(load_program(""), ValueError);
}

// Note [Checksummed graph cache entries]: an edit that still parses and verifies (two buffers'
// input indices) would run with other values; the checksum rejects it, with a warning naming the
// file.
TEST(GraphCache, AnEditedNumberIsADamagedEntry) {
  testing::ScopedCacheDir dir;
  const Program p = full_program();
  store_program("a1b2c3", p);
  const std::filesystem::path file = dir.path() / "graphs" / "a1b2c3.json";
  std::string text;
  {
    std::ifstream in(file);
    std::ostringstream s;
    s << in.rdbuf();
    text = s.str();
  }
  // Swap the two input buffers' input indices.
  const size_t first = text.find("\"input\": 0"), second = text.find("\"input\": 1");
  ASSERT_NE(first, std::string::npos) << text;
  ASSERT_NE(second, std::string::npos) << text;
  text[first + 9] = '1';
  text[second + 9] = '0';
  {
    std::ofstream out(file, std::ios::trunc);
    out << text;
  }
  // The edited JSON alone is a valid program ...
  const std::string json_text = text.substr(text.find('\n') + 1);
  EXPECT_NO_THROW(program_from_json(json_text));
  // ... but not a valid cache entry.
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(load_program("a1b2c3"), std::nullopt);
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("graph cache entry " + file.string() + " is damaged (checksum mismatch)"),
            std::string::npos)
      << warning;
}

}  // namespace
}  // namespace kiln::runtime
