#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "tests/io/file_helpers.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

std::vector<int64_t> shape_of(const Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }

Bytes iota_bytes(int n) {
  Bytes bytes(n);
  for (int i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 3);
  return bytes;
}

}  // namespace

TEST(ReadIdx, ReadsUint8ImagesWithTheHeaderShape) {
  TempDir dir;
  const Bytes pixels = iota_bytes(2 * 3 * 4);
  write_file(dir / "images-idx3-ubyte", idx_file(0x08, {2, 3, 4}, pixels));
  Tensor t = io::read_idx(dir / "images-idx3-ubyte");
  EXPECT_EQ(t.dtype(), kUInt8);
  EXPECT_EQ(shape_of(t), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(t.to_vector<uint8_t>(), pixels);
}

TEST(ReadIdx, GzipFilesReadTheSameAsPlainOnes) {
  TempDir dir;
  const Bytes file = idx_file(0x08, {100, 28, 28}, iota_bytes(100 * 28 * 28));
  write_file(dir / "plain", file);
  write_file(dir / "compressed.gz", gzip(file));
  Tensor plain = io::read_idx(dir / "plain");
  Tensor compressed = io::read_idx(dir / "compressed.gz");
  EXPECT_EQ(shape_of(compressed), (std::vector<int64_t>{100, 28, 28}));
  EXPECT_EQ(compressed.to_vector<uint8_t>(), plain.to_vector<uint8_t>());
}

TEST(ReadIdx, CompressionIsDetectedFromTheContentsNotTheName) {
  TempDir dir;
  const Bytes file = idx_file(0x08, {5}, {1, 2, 3, 4, 5});
  write_file(dir / "plain_named.gz", file);
  write_file(dir / "gzip_named_plain", gzip(file));
  const std::vector<uint8_t> expected{1, 2, 3, 4, 5};
  EXPECT_EQ(io::read_idx(dir / "plain_named.gz").to_vector<uint8_t>(), expected);
  EXPECT_EQ(io::read_idx(dir / "gzip_named_plain").to_vector<uint8_t>(), expected);
}

// Expected values are the big-endian IEEE 754 / two's complement encodings written out by hand.
TEST(ReadIdx, MultiByteElementsAreBigEndian) {
  TempDir dir;
  write_file(dir / "i8", idx_file(0x09, {3}, {0xFF, 0x80, 0x7F}));
  write_file(dir / "i16", idx_file(0x0B, {2}, {0xFF, 0xFE, 0x01, 0x02}));
  write_file(dir / "i32", idx_file(0x0C, {2}, {0x01, 0x02, 0x03, 0x04, 0xFF, 0xFF, 0xFF, 0xF9}));
  write_file(dir / "f32", idx_file(0x0D, {1, 2}, {0x3F, 0xC0, 0, 0, 0xC2, 0x28, 0, 0}));
  write_file(dir / "f64", idx_file(0x0E, {1}, {0xC0, 0x00, 0, 0, 0, 0, 0, 0}));

  Tensor i8 = io::read_idx(dir / "i8");
  EXPECT_EQ(i8.dtype(), kInt8);
  EXPECT_EQ(i8.to_vector<int8_t>(), (std::vector<int8_t>{-1, -128, 127}));
  Tensor i16 = io::read_idx(dir / "i16");
  EXPECT_EQ(i16.dtype(), kInt16);
  EXPECT_EQ(i16.to_vector<int16_t>(), (std::vector<int16_t>{-2, 258}));
  Tensor i32 = io::read_idx(dir / "i32");
  EXPECT_EQ(i32.dtype(), kInt32);
  EXPECT_EQ(i32.to_vector<int32_t>(), (std::vector<int32_t>{0x01020304, -7}));
  Tensor f32 = io::read_idx(dir / "f32");
  EXPECT_EQ(f32.dtype(), kFloat32);
  EXPECT_EQ(shape_of(f32), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(f32.to_vector<float>(), (std::vector<float>{1.5f, -42.0f}));
  Tensor f64 = io::read_idx(dir / "f64");
  EXPECT_EQ(f64.dtype(), kFloat64);
  EXPECT_EQ(f64.to_vector<double>(), (std::vector<double>{-2.0}));
}

TEST(ReadIdx, EmptyDimensionGivesEmptyTensor) {
  TempDir dir;
  write_file(dir / "empty.gz", gzip(idx_file(0x08, {0, 28, 28}, {})));
  Tensor t = io::read_idx(dir / "empty.gz");
  EXPECT_EQ(shape_of(t), (std::vector<int64_t>{0, 28, 28}));
}

TEST(ReadIdx, MissingFileIsIOErrorNamingThePath) {
  TempDir dir;
  const std::string path = (dir / "nope-idx1-ubyte.gz").string();
  expect_error<IOError>([&] { io::read_idx(path); }, {"read_idx", path, "No such file"});
}

TEST(ReadIdx, DirectoryIsIOError) {
  TempDir dir;
  expect_error<IOError>([&] { io::read_idx(dir.path()); }, {dir.path().string(), "directory"});
}

TEST(ReadIdx, BadMagicIsValueError) {
  TempDir dir;
  write_file(dir / "nonzero", {0x00, 0x01, 0x08, 0x01, 0, 0, 0, 1, 42});
  write_file(dir / "unknown_type", {0x00, 0x00, 0x0A, 0x01, 0, 0, 0, 1, 42});
  write_file(dir / "text.gz", gzip({'h', 'e', 'l', 'l', 'o'}));
  for (const char* name : {"nonzero", "unknown_type", "text.gz"}) {
    SCOPED_TRACE(name);
    expect_error<ValueError>([&] { io::read_idx(dir / name); },
                             {(dir / name).string(), "not an IDX file", "magic"});
  }
}

TEST(ReadIdx, TruncatedPlainFileIsValueError) {
  TempDir dir;
  Bytes file = idx_file(0x08, {10, 4}, iota_bytes(40));
  file.resize(file.size() - 15);
  write_file(dir / "short", file);
  expect_error<ValueError>([&] { io::read_idx(dir / "short"); },
                           {(dir / "short").string(), "truncated", "[10, 4]"});
}

TEST(ReadIdx, TruncatedHeaderIsValueError) {
  TempDir dir;
  write_file(dir / "two_bytes", {0x00, 0x00});
  Bytes dims_cut = idx_file(0x08, {7, 8, 9}, {});
  dims_cut.resize(9);
  write_file(dir / "dims_cut.gz", gzip(dims_cut));
  expect_error<ValueError>([&] { io::read_idx(dir / "two_bytes"); }, {"truncated", "magic"});
  expect_error<ValueError>([&] { io::read_idx(dir / "dims_cut.gz"); },
                           {(dir / "dims_cut.gz").string(), "truncated", "3 dimensions"});
}

TEST(ReadIdx, TruncatedGzipStreamIsValueError) {
  TempDir dir;
  Bytes compressed = gzip(idx_file(0x08, {50, 28, 28}, iota_bytes(50 * 28 * 28)));
  compressed.resize(compressed.size() / 2);
  write_file(dir / "half.gz", compressed);
  expect_error<ValueError>([&] { io::read_idx(dir / "half.gz"); },
                           {(dir / "half.gz").string(), "truncated", "gzip stream breaks off"});
}

TEST(ReadIdx, GzipStreamMissingItsChecksumIsValueError) {
  TempDir dir;
  Bytes compressed = gzip(idx_file(0x08, {3}, {1, 2, 3}));
  compressed.resize(compressed.size() - 8);  // the CRC-32 and length trailer
  write_file(dir / "no_trailer.gz", compressed);
  expect_error<ValueError>([&] { io::read_idx(dir / "no_trailer.gz"); },
                           {(dir / "no_trailer.gz").string(), "truncated"});
}

TEST(ReadIdx, CorruptGzipStreamIsValueError) {
  TempDir dir;
  const Bytes good = gzip(idx_file(0x08, {64}, iota_bytes(64)));
  Bytes bad_crc = good;
  bad_crc[bad_crc.size() - 8] ^= 0xFF;  // first byte of the CRC-32
  write_file(dir / "bad_crc.gz", bad_crc);
  Bytes bad_block = good;
  bad_block[10] = 0xFF;  // the first deflate block: BTYPE 11 is reserved (invalid)
  write_file(dir / "bad_block.gz", bad_block);
  for (const char* name : {"bad_crc.gz", "bad_block.gz"}) {
    SCOPED_TRACE(name);
    expect_error<ValueError>([&] { io::read_idx(dir / name); }, {(dir / name).string(), "corrupt"});
  }
}

TEST(ReadIdx, MoreDataThanTheHeaderDeclaresIsValueError) {
  TempDir dir;
  write_file(dir / "long", idx_file(0x08, {4}, {1, 2, 3, 4, 5, 6}));
  expect_error<ValueError>([&] { io::read_idx(dir / "long"); },
                           {(dir / "long").string(), "more data than its header declares"});
}

// See Note [Bounding IDX allocations]: the header alone must not make the reader allocate more
// than the file can hold.
TEST(ReadIdx, HugeDeclaredShapesAreRejectedBeforeAllocating) {
  TempDir dir;
  write_file(dir / "overflow", idx_file(0x0E, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, {1}));
  write_file(dir / "empty_but_huge", idx_file(0x0E, {0, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, {}));
  write_file(dir / "huge.gz", gzip(idx_file(0x08, {100000, 100000}, iota_bytes(16))));
  expect_error<ValueError>([&] { io::read_idx(dir / "overflow"); },
                           {"truncated or corrupt", "more than 2^63"});
  expect_error<ValueError>([&] { io::read_idx(dir / "empty_but_huge"); },
                           {(dir / "empty_but_huge").string(), "[0, 4294967295"});
  expect_error<ValueError>([&] { io::read_idx(dir / "huge.gz"); },
                           {"truncated or corrupt", "10000000000 bytes", "compressed file"});
}
