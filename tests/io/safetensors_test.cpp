#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "kiln/kiln.h"
#include "tests/io/file_helpers.h"

using namespace kiln;
using namespace kiln::testing;
using Json = nlohmann::json;

namespace {

std::vector<int64_t> shape_of(const Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }

// A [3, 4] tensor of `dtype` with the extremes of integer types and random floats.
Tensor sample_values(ScalarType dtype) {
  return visit_dtype(dtype, [&]<typename T>() -> Tensor {
    if constexpr (std::is_same_v<T, bool>) {
      return from_vector<bool>(
          {true, false, false, true, true, true, false, false, true, false, true, false},
          std::vector<int64_t>{3, 4});
    } else if constexpr (std::is_integral_v<T>) {
      using L = std::numeric_limits<T>;
      return from_vector<T>({L::min(), L::max(), T(0), T(1), T(L::min() + 1), T(L::max() - 1),
                             T(42), T(7), T(3), T(2), T(100), T(5)},
                            std::vector<int64_t>{3, 4});
    } else {
      return randn({3, 4}, kFloat64).to(dtype);
    }
  });
}

// A safetensors file from a header text and data bytes, built by hand.
Bytes raw_safetensors(const std::string& header, const Bytes& data) {
  Bytes out(8 + header.size() + data.size());
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  std::memcpy(out.data() + 8, header.data(), header.size());
  if (!data.empty()) std::memcpy(out.data() + 8 + header.size(), data.data(), data.size());
  return out;
}

}  // namespace

TEST(Safetensors, RoundTripsEveryDtypeExactly) {
  TempDir dir;
  manual_seed(0);
  std::map<std::string, Tensor> tensors;
  for (ScalarType dtype : kAllScalarTypes)
    tensors[std::string(dtype_name(dtype))] = sample_values(dtype);
  tensors["scalar"] = scalar_tensor(2.5, kFloat64);
  tensors["empty"] = zeros({0, 5}, kInt32);
  const std::map<std::string, std::string> metadata{{"step", "1200"}, {"note", "héllo"}};
  io::save_safetensors(dir / "all.safetensors", tensors, metadata);

  const io::SafetensorsFile loaded = io::load_safetensors(dir / "all.safetensors");
  EXPECT_EQ(loaded.metadata, metadata);
  ASSERT_EQ(loaded.tensors.size(), tensors.size());
  for (const auto& [name, tensor] : tensors) {
    SCOPED_TRACE(name);
    const Tensor& got = loaded.tensors.at(name);
    EXPECT_EQ(got.dtype(), tensor.dtype());
    EXPECT_EQ(shape_of(got), shape_of(tensor));
    EXPECT_EQ(tensor_bytes(got), tensor_bytes(tensor));
  }
}

TEST(Safetensors, NonContiguousTensorsAreWrittenInRowMajorOrder) {
  TempDir dir;
  Tensor base = arange(24, TensorOptions(kInt16)).view({4, 6});
  Tensor transposed = base.t();            // strides (1, 6)
  Tensor sliced = base.slice(1, 1, 5, 2);  // a storage offset and a step
  io::save_safetensors(dir / "views.safetensors", {{"t", transposed}, {"s", sliced}});
  const io::SafetensorsFile loaded = io::load_safetensors(dir / "views.safetensors");
  EXPECT_EQ(shape_of(loaded.tensors.at("t")), (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(loaded.tensors.at("t").to_vector<int16_t>(), transposed.to_vector<int16_t>());
  EXPECT_EQ(loaded.tensors.at("s").to_vector<int16_t>(), sliced.to_vector<int16_t>());
}

TEST(Safetensors, TensorsThatRequireGradAreSavedAsTheirValues) {
  TempDir dir;
  Tensor weight = randn({2, 3});
  weight.requires_grad_();
  io::save_safetensors(dir / "w.safetensors", {{"w", weight}});
  const Tensor loaded = io::load_safetensors(dir / "w.safetensors").tensors.at("w");
  EXPECT_FALSE(loaded.requires_grad());
  EXPECT_EQ(tensor_bytes(loaded), tensor_bytes(weight.detach()));
}

// The written bytes, parsed here by hand: the layout the safetensors spec requires, plus Kiln's
// alignment (header padded to 8 bytes, larger elements first).
TEST(Safetensors, WrittenFileFollowsTheSpec) {
  TempDir dir;
  const Tensor a = tensor({1.0, 2.0, 3.0}, kFloat64);
  const Tensor b = from_vector<uint8_t>({7, 8, 9});
  const Tensor c = tensor({-1, 5}, kInt32);
  io::save_safetensors(dir / "spec.safetensors", {{"a", a}, {"b", b}, {"c", c}}, {{"k", "v"}});
  const Bytes file = read_file(dir / "spec.safetensors");

  ASSERT_GE(file.size(), 8u);
  uint64_t header_size = 0;
  for (int i = 0; i < 8; ++i) header_size |= uint64_t{file[i]} << (8 * i);
  EXPECT_EQ((8 + header_size) % 8, 0u);
  const std::string header_text(file.begin() + 8, file.begin() + 8 + header_size);
  EXPECT_EQ(header_text.front(), '{');
  const Json header = Json::parse(header_text);  // trailing spaces are allowed JSON whitespace
  EXPECT_EQ(header["__metadata__"], (Json{{"k", "v"}}));
  const std::map<std::string, std::pair<std::string, Tensor>> expected{
      {"a", {"F64", a}}, {"b", {"U8", b}}, {"c", {"I32", c}}};
  uint64_t data_bytes = 0;
  for (const auto& [name, entry] : expected) {
    SCOPED_TRACE(name);
    const Json& info = header.at(name);
    EXPECT_EQ(info.at("dtype"), entry.first);
    EXPECT_EQ(info.at("shape"), Json(shape_of(entry.second)));
    const uint64_t begin = info.at("data_offsets")[0], end = info.at("data_offsets")[1];
    EXPECT_EQ(begin % entry.second.element_size(), 0u) << "unaligned";
    ASSERT_LE(8 + header_size + end, file.size());
    const Bytes raw(file.begin() + 8 + header_size + begin, file.begin() + 8 + header_size + end);
    EXPECT_EQ(raw, tensor_bytes(entry.second));
    data_bytes += end - begin;
  }
  EXPECT_EQ(8 + header_size + data_bytes, file.size());
}

// tests/data/safetensors_interop.safetensors was written by tests/data/gen_safetensors_interop.py
// (struct + json from PyTorch/NumPy values, tensors at unaligned offsets, unpadded header);
// safetensors_interop.json holds the same values.
TEST(Safetensors, ReadsAFileWrittenByPython) {
  const std::string data_dir = KILN_TEST_DATA_DIR;
  const io::SafetensorsFile loaded =
      io::load_safetensors(data_dir + "/safetensors_interop.safetensors");
  std::ifstream json_file(data_dir + "/safetensors_interop.json");
  const Json expected = Json::parse(json_file);
  EXPECT_EQ(Json(loaded.metadata), expected["metadata"]);
  ASSERT_EQ(loaded.tensors.size(), expected["tensors"].size());
  for (const auto& item : expected["tensors"].items()) {
    const std::string name = item.key();
    const Json& info = item.value();
    SCOPED_TRACE(name);
    ASSERT_TRUE(loaded.tensors.count(name));
    const Tensor& t = loaded.tensors.at(name);
    EXPECT_EQ(t.dtype(), io::dtype_from_safetensors_name(info["dtype"].get<std::string>()));
    EXPECT_EQ(shape_of(t), info["shape"].get<std::vector<int64_t>>());
    const Json& values = info["values"];
    visit_dtype(t.dtype(), [&]<typename T>() {
      const std::vector<T> got = t.to_vector<T>();
      ASSERT_EQ(got.size(), values.size());
      for (size_t i = 0; i < got.size(); ++i) {
        if constexpr (is_floating_v<T>) {
          // The JSON holds the exact value of each element (float32 and narrower widen exactly).
          EXPECT_EQ(static_cast<double>(static_cast<opmath_t<T>>(got[i])), values[i].get<double>())
              << "element " << i;
        } else if constexpr (std::is_same_v<T, bool>) {
          EXPECT_EQ(got[i], values[i].get<int>() != 0) << "element " << i;
        } else {
          EXPECT_EQ(got[i], values[i].get<T>()) << "element " << i;
        }
      }
    });
  }
}

TEST(Safetensors, DTypeNamesMatchTheSpec) {
  const std::map<ScalarType, std::string> spec{
      {kBool, "BOOL"},     {kUInt8, "U8"},    {kUInt16, "U16"}, {kUInt32, "U32"}, {kUInt64, "U64"},
      {kInt8, "I8"},       {kInt16, "I16"},   {kInt32, "I32"},  {kInt64, "I64"},  {kFloat16, "F16"},
      {kBFloat16, "BF16"}, {kFloat32, "F32"}, {kFloat64, "F64"}};
  ASSERT_EQ(spec.size(), static_cast<size_t>(kNumScalarTypes));
  for (const auto& [dtype, name] : spec) {
    EXPECT_EQ(io::safetensors_dtype_name(dtype), name);
    EXPECT_EQ(io::dtype_from_safetensors_name(name), dtype);
  }
  expect_error<DTypeError>([] { io::dtype_from_safetensors_name("F8_E4M3"); },
                           {"F8_E4M3", "float8"});
}

// ---- corrupt files ----

class CorruptSafetensors : public ::testing::Test {
 protected:
  // Writes `bytes` and expects load_safetensors to throw Kind naming the path and `parts`.
  template <typename Kind = ValueError>
  void expect_rejected(const Bytes& bytes, std::initializer_list<std::string> parts) {
    const std::filesystem::path path = dir_ / "bad.safetensors";
    write_file(path, bytes);
    expect_error<Kind>([&] { io::load_safetensors(path); }, {path.string()});
    expect_error<Kind>([&] { io::load_safetensors(path); }, parts);
  }
  static std::string entry(const std::string& name, const std::string& dtype,
                           const std::string& shape, int begin, int end) {
    return fmt::format(R"("{}":{{"dtype":"{}","shape":{},"data_offsets":[{},{}]}})", name, dtype,
                       shape, begin, end);
  }
  TempDir dir_;
};

TEST_F(CorruptSafetensors, FileShorterThanTheLengthField) {
  expect_rejected({1, 2, 3}, {"fewer than the 8-byte header length"});
}

TEST_F(CorruptSafetensors, HeaderLengthLargerThanTheFile) {
  Bytes bytes = raw_safetensors("{}", {});
  bytes[0] = 200;
  expect_rejected(bytes, {"declare a 200-byte header", "has only 2 bytes"});
}

TEST_F(CorruptSafetensors, HeaderLengthPastTheSpecLimit) {
  Bytes bytes = raw_safetensors("{}", {});
  const uint64_t declared = 100'000'001;
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(declared >> (8 * i));
  expect_rejected(bytes, {"100000001-byte header", "100000000 bytes safetensors allows"});
  bytes[7] = 0xFF;  // a header length near 2^64, as in a file that is not safetensors at all
  expect_rejected(bytes, {"not a safetensors file"});
}

TEST_F(CorruptSafetensors, EmptyShapeWithHugeDimensions) {
  expect_rejected(
      raw_safetensors("{" + entry("e", "F64", "[0,4611686018427387904,4]", 0, 0) + "}", {}),
      {"'e'"});
}

TEST_F(CorruptSafetensors, HeaderThatIsNotJson) {
  expect_rejected(raw_safetensors("{\"a\": [1, 2", {}), {"not valid JSON"});
  expect_rejected(raw_safetensors("[1, 2]", {}), {"does not start with '{'"});
}

// See Note [Bounded JSON nesting]: without the bound this overflows the stack.
TEST_F(CorruptSafetensors, DeeplyNestedHeaderIsRejectedNotCrashing) {
  const int depth = 1000000;
  expect_rejected(
      raw_safetensors("{\"a\":" + std::string(depth, '[') + std::string(depth, ']') + "}", {}),
      {"nested deeper than 3 levels"});
  expect_rejected(raw_safetensors("{\"__metadata__\":{\"k\":" + std::string(depth, '[') +
                                      std::string(depth, ']') + "}}",
                                  {}),
                  {"nested deeper than 3 levels"});
}

TEST_F(CorruptSafetensors, MalformedEntries) {
  expect_rejected(raw_safetensors(R"({"a": 5})", {}), {"'a'", "not a JSON object"});
  expect_rejected(raw_safetensors(R"({"a": {"shape": [1], "data_offsets": [0, 1]}})", {0}),
                  {"'a'", "\"dtype\""});
  expect_rejected(raw_safetensors("{" + entry("a", "U8", "[-1]", 0, 1) + "}", {0}),
                  {"'a'", "shape entry"});
  expect_rejected(raw_safetensors("{" + entry("a", "U8", "[1.5]", 0, 1) + "}", {0}),
                  {"'a'", "shape entry"});
  expect_rejected(raw_safetensors(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0]}})", {0}),
                  {"'a'", "data_offsets"});
  expect_rejected(raw_safetensors("{" + entry("a", "U8", "[0]", 1, 0) + "}", {0}),
                  {"'a'", "begin > end"});
  expect_rejected(raw_safetensors(R"({"__metadata__": {"k": 5}})", {}),
                  {"__metadata__", "'k'", "string"});
}

TEST_F(CorruptSafetensors, UnknownDtypeIsDTypeError) {
  expect_rejected<DTypeError>(
      raw_safetensors("{" + entry("a", "F8_E5M2", "[2]", 0, 2) + "}", {0, 0}), {"'a'", "F8_E5M2"});
  expect_rejected<DTypeError>(raw_safetensors("{" + entry("a", "Q4", "[2]", 0, 2) + "}", {0, 0}),
                              {"Q4"});
}

TEST_F(CorruptSafetensors, OffsetsThatDoNotMatchDtypeAndShape) {
  expect_rejected(raw_safetensors("{" + entry("w", "F32", "[2,3]", 0, 20) + "}", Bytes(20)),
                  {"'w'", "20 data bytes", "needs 24"});
}

TEST_F(CorruptSafetensors, OffsetsPastTheEndOfTheFile) {
  expect_rejected(raw_safetensors("{" + entry("w", "F32", "[4]", 0, 16) + "}", Bytes(10)),
                  {"truncated", "'w' ends at byte 16", "only 10 data bytes"});
}

TEST_F(CorruptSafetensors, OverlappingTensors) {
  const std::string header =
      "{" + entry("a", "U8", "[8]", 0, 8) + "," + entry("b", "U8", "[8]", 4, 12) + "}";
  expect_rejected(raw_safetensors(header, Bytes(12)), {"'a'", "'b'", "overlap"});
}

TEST_F(CorruptSafetensors, GapsAndTrailingBytes) {
  const std::string gap =
      "{" + entry("a", "U8", "[4]", 0, 4) + "," + entry("b", "U8", "[4]", 6, 10) + "}";
  expect_rejected(raw_safetensors(gap, Bytes(10)), {"bytes 4..6", "belong to no tensor"});
  expect_rejected(raw_safetensors("{" + entry("a", "U8", "[4]", 0, 4) + "}", Bytes(7)),
                  {"3 bytes after the last tensor"});
}

TEST_F(CorruptSafetensors, BoolBytesOtherThanZeroOrOne) {
  expect_rejected(raw_safetensors("{" + entry("m", "BOOL", "[3]", 0, 3) + "}", {1, 0, 2}),
                  {"'m'", "byte 2 at element 2"});
}

TEST_F(CorruptSafetensors, TruncatedAtEveryLengthIsRejectedNotCrashing) {
  io::save_safetensors(dir_ / "good.safetensors",
                       {{"w", randn({4, 5})}, {"b", arange(3)}, {"m", ones({2}, kBool)}},
                       {{"epoch", "3"}});
  const Bytes good = read_file(dir_ / "good.safetensors");
  for (size_t length = 0; length < good.size(); ++length) {
    SCOPED_TRACE(length);
    write_file(dir_ / "cut.safetensors", Bytes(good.begin(), good.begin() + length));
    EXPECT_THROW(io::load_safetensors(dir_ / "cut.safetensors"), ValueError);
  }
}

TEST_F(CorruptSafetensors, ByteFlipsInTheHeaderNeverCrash) {
  io::save_safetensors(dir_ / "good.safetensors", {{"w", randn({4, 5})}, {"i", arange(3)}});
  const Bytes good = read_file(dir_ / "good.safetensors");
  uint64_t header_size = 0;
  for (int i = 0; i < 8; ++i) header_size |= uint64_t{good[i]} << (8 * i);
  for (size_t at = 0; at < 8 + header_size; ++at) {
    for (uint8_t flip : {uint8_t{0x01}, uint8_t{0xFF}}) {
      Bytes bad = good;
      bad[at] ^= flip;
      write_file(dir_ / "flipped.safetensors", bad);
      try {
        io::load_safetensors(dir_ / "flipped.safetensors");  // some flips still parse
      } catch (const Error&) {
      }
    }
  }
}

TEST(Safetensors, MissingFileIsIOError) {
  TempDir dir;
  expect_error<IOError>(
      [&] { io::load_safetensors(dir / "absent.safetensors"); },
      {"load_safetensors", (dir / "absent.safetensors").string(), "No such file"});
}

TEST(Safetensors, SavingBadTensorsIsValueError) {
  TempDir dir;
  const auto path = dir / "x.safetensors";
  expect_error<ValueError>(
      [&] {
        io::save_safetensors(path, {{"u", Tensor()}});
      },
      {"'u'", "undefined"});
  expect_error<ValueError>(
      [&] {
        io::save_safetensors(path, {{"m", zeros({2}, TensorOptions(kFloat32).device(kMeta))}});
      },
      {"'m'", "Meta"});
  expect_error<ValueError>(
      [&] {
        io::save_safetensors(path, {{"__metadata__", zeros({1})}});
      },
      {"__metadata__"});
  expect_error<ValueError>(
      [&] {
        io::save_safetensors(path, {{"bad\xff", zeros({1})}});
      },
      {"UTF-8"});
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(Safetensors, SavingIntoAMissingDirectoryIsIOError) {
  TempDir dir;
  const auto path = dir / "no_such_dir" / "x.safetensors";
  expect_error<IOError>(
      [&] {
        io::save_safetensors(path, {{"w", zeros({1})}});
      },
      {"save_safetensors", path.string(), "No such file"});
}
