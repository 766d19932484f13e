// Files for the I/O and dataset tests: a temporary directory per test, and writers of raw and
// gzip-compressed bytes that use zlib directly (not Kiln), so a reader bug cannot hide behind a
// matching writer bug.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::testing {

using Bytes = std::vector<uint8_t>;

// A fresh directory under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name =
        std::string("kiln_") + (info ? info->name() : "test") + "_" + std::to_string(::getpid());
    for (char& c : name)
      if (c == '/') c = '_';  // parameterized test names
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ignored);
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline void write_file(const std::filesystem::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

inline Bytes read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The gzip (RFC 1952) encoding of `bytes`, as `gzip` writes it.
inline Bytes gzip(const Bytes& bytes) {
  z_stream stream{};
  // windowBits 15 + 16 selects the gzip wrapper instead of zlib's.
  EXPECT_EQ(deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY),
            Z_OK);
  Bytes out(deflateBound(&stream, bytes.size()) + 32);
  stream.next_in = const_cast<Bytef*>(bytes.data());
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = out.data();
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

// An IDX file: magic 00 00 <type code> <ndim>, big-endian uint32 dims, then `data` as given
// (the caller supplies big-endian elements).
inline Bytes idx_file(uint8_t type_code, const std::vector<uint32_t>& dims, const Bytes& data) {
  Bytes out = {0, 0, type_code, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(d >> shift));
  }
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// A tensor's elements as bytes, row-major (for exact comparisons of any dtype).
inline Bytes tensor_bytes(const Tensor& t) {
  const Tensor c = t.contiguous();
  Bytes out(static_cast<size_t>(c.nbytes()));
  if (!out.empty()) std::memcpy(out.data(), c.data_ptr(), out.size());
  return out;
}

// Runs `f`, which must throw Kind with a message containing every one of `parts`.
template <typename Kind, typename F>
void expect_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "expected an exception, none was thrown";
  } catch (const Kind& e) {
    const std::string message = e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos)
          << "the message lacks \"" << part << "\": " << message;
    }
  }
}

}  // namespace kiln::testing
