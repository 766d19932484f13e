// The IDX reader. See kiln/io/idx.h for the format.
#include "kiln/io/idx.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "kiln/ops/creation.h"

namespace kiln::io {
namespace {

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

std::string describe_dims(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

// Reads up to `size` bytes; fewer only at the end of the data. A zlib error (a corrupt
// compressed stream, a failed checksum) throws.
int64_t read_some(gzFile file, void* out, int64_t size, const std::string& path) {
  auto* bytes = static_cast<unsigned char*>(out);
  int64_t done = 0;
  while (done < size) {
    // gzread takes an unsigned count but returns an int: read at most 1 GiB per call.
    const unsigned chunk = static_cast<unsigned>(std::min<int64_t>(size - done, int64_t{1} << 30));
    const int got = gzread(file, bytes + done, chunk);
    if (got < 0) {
      int code = Z_OK;
      const char* message = gzerror(file, &code);
      KILN_CHECK(code != Z_ERRNO, IOError, "read_idx: cannot read {}: {}", path,
                 std::strerror(errno));
      throw ValueError(fmt::format(
          "read_idx: {} is corrupt: {} (zlib error {}); the gzip stream is damaged, download or "
          "install the file again",
          path, message, code));
    }
    if (got == 0) break;
    done += got;
  }
  return done;
}

// True when zlib stopped because the compressed stream ended early (a truncated .gz file) rather
// than at a clean end of file.
bool gzip_stream_cut_short(gzFile file) {
  int code = Z_OK;
  gzerror(file, &code);
  return code == Z_BUF_ERROR;
}

ScalarType dtype_of_idx_code(uint8_t code) {
  switch (code) {
    case 0x08:
      return kUInt8;
    case 0x09:
      return kInt8;
    case 0x0B:
      return kInt16;
    case 0x0C:
      return kInt32;
    case 0x0D:
      return kFloat32;
    case 0x0E:
      return kFloat64;
    default:
      return kBool;  // no IDX type maps to bool: the caller treats it as "unknown"
  }
}

// IDX elements are big-endian.
void big_endian_to_native(void* data, int64_t numel, int64_t element_size) {
  if constexpr (std::endian::native == std::endian::big) return;
  switch (element_size) {
    case 2: {
      auto* p = static_cast<uint16_t*>(data);
      for (int64_t i = 0; i < numel; ++i) p[i] = __builtin_bswap16(p[i]);
      break;
    }
    case 4: {
      auto* p = static_cast<uint32_t*>(data);
      for (int64_t i = 0; i < numel; ++i) p[i] = __builtin_bswap32(p[i]);
      break;
    }
    case 8: {
      auto* p = static_cast<uint64_t*>(data);
      for (int64_t i = 0; i < numel; ++i) p[i] = __builtin_bswap64(p[i]);
      break;
    }
    default:
      break;
  }
}

uint32_t load_big_endian_u32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

// Note [Bounding IDX allocations]
// The header alone decides how much memory the tensor needs, and a damaged header can declare
// terabytes. Before allocating, the declared size is checked against what the file can hold: an
// uncompressed file holds exactly its size minus the header; a gzip file cannot hold more than
// deflate's maximum ratio (1032:1) times its compressed size. Within that bound a lying header
// costs at most one allocation the file could have filled, and the short read that follows is
// reported as a truncated file.
Tensor read_idx(const std::filesystem::path& path_arg) {
  const std::string path = path_arg.string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  KILN_CHECK(fd >= 0, IOError, "read_idx: cannot open {}: {}", path, std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    const int saved_errno = errno;
    const bool is_dir = S_ISDIR(info.st_mode);
    ::close(fd);
    KILN_CHECK(!is_dir, IOError, "read_idx: {} is a directory, not an IDX file", path);
    throw IOError(fmt::format("read_idx: cannot read {}: {}", path,
                              saved_errno ? std::strerror(saved_errno) : "not a regular file"));
  }
  const int64_t file_size = info.st_size;
  GzFile file(gzdopen(fd, "rb"));  // owns fd from here on
  if (!file) {
    ::close(fd);
    throw IOError(fmt::format("read_idx: cannot read {}: out of memory for the zlib state", path));
  }
  gzbuffer(file.get(), 1 << 17);

  unsigned char magic[4];
  const int64_t magic_bytes = read_some(file.get(), magic, 4, path);
  KILN_CHECK(magic_bytes == 4, ValueError,
             "read_idx: {} is truncated: it ends after {} bytes, inside the 4-byte magic number",
             path, magic_bytes);
  const ScalarType dtype = dtype_of_idx_code(magic[2]);
  KILN_CHECK(
      magic[0] == 0 && magic[1] == 0 && dtype != kBool, ValueError,
      "read_idx: {} is not an IDX file: bad magic number {:02x} {:02x} {:02x} {:02x} (an IDX "
      "file starts with 00 00, a type code 08 uint8 / 09 int8 / 0b int16 / 0c int32 / 0d "
      "float32 / 0e float64, and the number of dimensions)",
      path, magic[0], magic[1], magic[2], magic[3]);
  const bool compressed = gzdirect(file.get()) == 0;

  const int ndim = magic[3];
  std::vector<unsigned char> dim_bytes(4 * ndim);
  const int64_t dim_bytes_read = read_some(file.get(), dim_bytes.data(), 4 * ndim, path);
  KILN_CHECK(dim_bytes_read == 4 * ndim, ValueError,
             "read_idx: {} is truncated: its header declares {} dimensions ({} bytes) but the "
             "file ends after {} of them",
             path, ndim, 4 * ndim, dim_bytes_read);
  std::vector<int64_t> dims(ndim);
  int64_t numel = 1;
  bool overflow = false;
  for (int d = 0; d < ndim; ++d) {
    dims[d] = load_big_endian_u32(&dim_bytes[4 * d]);
    overflow |= __builtin_mul_overflow(numel, dims[d], &numel);
  }
  const int64_t header_bytes = 4 + 4 * int64_t{ndim};
  const int64_t elem_size = element_size(dtype);
  int64_t data_bytes = 0;
  overflow |= __builtin_mul_overflow(numel, elem_size, &data_bytes);

  // See Note [Bounding IDX allocations].
  const int64_t max_data_bytes = compressed
                                     ? (file_size > INT64_MAX / 1032 ? INT64_MAX : file_size * 1032)
                                     : file_size - header_bytes;
  KILN_CHECK(!overflow && data_bytes <= max_data_bytes, ValueError,
             "read_idx: {} is truncated or corrupt: its header declares {} {} elements of shape {} "
             "({} bytes) but the {}file is only {} bytes long",
             path, overflow ? "more than 2^63" : std::to_string(numel), dtype_name(dtype),
             describe_dims(dims), overflow ? "more than 2^63" : std::to_string(data_bytes),
             compressed ? "compressed " : "", file_size);

  Tensor result;
  try {
    // A shape like [0, 2^32 - 1, 2^32 - 1] passes the bound (no bytes) but has no int64 strides.
    result = empty(dims, dtype);
  } catch (const ValueError& error) {
    throw ValueError(fmt::format("read_idx: {} is corrupt: its header declares shape {}: {}", path,
                                 describe_dims(dims), error.what()));
  }
  const int64_t got = read_some(file.get(), result.data_ptr(), data_bytes, path);
  if (got < data_bytes) {
    throw ValueError(fmt::format(
        "read_idx: {} is truncated: its header declares shape {} of {} ({} bytes of data) but {} "
        "only {} bytes",
        path, describe_dims(dims), dtype_name(dtype), data_bytes,
        compressed && gzip_stream_cut_short(file.get()) ? "the gzip stream breaks off after"
                                                        : "the file holds",
        got));
  }
  // Reading past the data also makes zlib check the gzip trailer (CRC and length).
  unsigned char extra;
  KILN_CHECK(read_some(file.get(), &extra, 1, path) == 0, ValueError,
             "read_idx: {} has more data than its header declares (shape {} of {}, {} bytes): "
             "the header or the file is corrupt",
             path, describe_dims(dims), dtype_name(dtype), data_bytes);
  KILN_CHECK(!gzip_stream_cut_short(file.get()), ValueError,
             "read_idx: {} is truncated: the gzip stream breaks off after the data, before its "
             "checksum",
             path);
  big_endian_to_native(result.data_ptr(), numel, elem_size);
  return result;
}

}  // namespace kiln::io
