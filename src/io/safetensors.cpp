// safetensors reading and writing. See kiln/io/safetensors.h for the format.
#include "kiln/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "kiln/ops/creation.h"
#include "src/util/atomic_file.h"
#include "src/util/json_parse.h"

namespace kiln::io {

// Tensors are copied to and from the file byte for byte: safetensors data is little-endian.
static_assert(std::endian::native == std::endian::little,
              "safetensors I/O assumes a little-endian machine");

using Json = nlohmann::json;

namespace {

constexpr std::string_view kMetadataKey = "__metadata__";
// {"name": {"shape": [2, 3]}}: the shape's elements are at level 3. See Note [Bounded JSON
// nesting].
constexpr int kMaxHeaderDepth = 3;
// The reference implementation's limit (MAX_HEADER_SIZE), so a damaged length field cannot make
// the reader allocate gigabytes for text.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DTypeName {
  ScalarType dtype;
  std::string_view name;
};
constexpr DTypeName kDTypeNames[] = {
    {kBool, "BOOL"},     {kUInt8, "U8"},    {kUInt16, "U16"},  {kUInt32, "U32"}, {kUInt64, "U64"},
    {kInt8, "I8"},       {kInt16, "I16"},   {kInt32, "I32"},   {kInt64, "I64"},  {kFloat16, "F16"},
    {kBFloat16, "BF16"}, {kFloat32, "F32"}, {kFloat64, "F64"},
};

// An open file read with pread; closes itself.
class InputFile {
 public:
  explicit InputFile(const std::filesystem::path& path) : path_(path.string()) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    KILN_CHECK(fd_ >= 0, IOError, "load_safetensors: cannot open {}: {}", path_,
               std::strerror(errno));
    struct stat info {};
    const bool ok = ::fstat(fd_, &info) == 0;
    const int error = errno;
    if (!ok || !S_ISREG(info.st_mode)) {
      ::close(fd_);
      throw IOError(fmt::format("load_safetensors: cannot read {}: {}", path_,
                                !ok                     ? std::strerror(error)
                                : S_ISDIR(info.st_mode) ? "it is a directory"
                                                        : "not a regular file"));
    }
    size_ = info.st_size;
  }
  ~InputFile() { ::close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  int64_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Reads exactly `size` bytes at `offset`, which the caller has checked lie inside the file.
  void read(void* out, int64_t size, int64_t offset) const {
    auto* bytes = static_cast<char*>(out);
    while (size > 0) {
      const ssize_t got =
          ::pread(fd_, bytes, static_cast<size_t>(std::min<int64_t>(size, 1 << 30)), offset);
      if (got < 0 && errno == EINTR) continue;
      KILN_CHECK(got > 0, IOError, "load_safetensors: cannot read {}: {}", path_,
                 got < 0 ? std::strerror(errno) : "the file shrank while it was read");
      bytes += got;
      offset += got;
      size -= got;
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  int64_t size_ = 0;
};

// One tensor's header entry, checked.
struct TensorEntry {
  std::string name;
  ScalarType dtype;
  std::vector<int64_t> shape;
  int64_t begin;
  int64_t end;
};

// A non-negative JSON integer that fits int64, or nullopt.
std::optional<int64_t> as_size(const Json& value) {
  if (!value.is_number_unsigned()) return std::nullopt;
  const uint64_t v = value.get<uint64_t>();
  if (v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(v);
}

TensorEntry parse_entry(const std::string& path, const std::string& name, const Json& info) {
  const auto bad = [&](std::string_view what) {
    return ValueError(
        fmt::format("load_safetensors: {} is corrupt: tensor '{}' has {} (header "
                    "entry: {})",
                    path, name, what, info.dump()));
  };
  if (!info.is_object()) throw bad("a header entry that is not a JSON object");
  const auto dtype_it = info.find("dtype");
  const auto shape_it = info.find("shape");
  const auto offsets_it = info.find("data_offsets");
  if (dtype_it == info.end() || !dtype_it->is_string()) throw bad("no \"dtype\" string");
  if (shape_it == info.end() || !shape_it->is_array())
    throw bad("no \"shape\" array of non-negative integers");
  if (offsets_it == info.end() || !offsets_it->is_array() || offsets_it->size() != 2)
    throw bad("no \"data_offsets\" pair [begin, end]");

  TensorEntry entry{name, kBool, {}, 0, 0};
  try {
    entry.dtype = dtype_from_safetensors_name(dtype_it->get<std::string>());
  } catch (const DTypeError& e) {
    throw DTypeError(fmt::format("load_safetensors: {}: tensor '{}': {}", path, name, e.what()));
  }
  int64_t numel = 1;
  bool overflow = false;
  for (const Json& dim : *shape_it) {
    const std::optional<int64_t> size = as_size(dim);
    if (!size) throw bad("a shape entry that is not a non-negative integer");
    entry.shape.push_back(*size);
    overflow |= __builtin_mul_overflow(numel, *size, &numel);
  }
  const std::optional<int64_t> begin = as_size((*offsets_it)[0]);
  const std::optional<int64_t> end = as_size((*offsets_it)[1]);
  if (!begin || !end) throw bad("data_offsets that are not non-negative integers");
  if (*begin > *end) throw bad("data_offsets [begin, end] with begin > end");
  entry.begin = *begin;
  entry.end = *end;
  int64_t nbytes = 0;
  overflow |= __builtin_mul_overflow(numel, element_size(entry.dtype), &nbytes);
  if (overflow || nbytes != entry.end - entry.begin) {
    throw bad(fmt::format("{} data bytes, but shape [{}] of {} needs {}", entry.end - entry.begin,
                          fmt::join(entry.shape, ", "), dtype_it->get<std::string>(),
                          overflow ? std::string("more than 2^63") : std::to_string(nbytes)));
  }
  return entry;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const Json& metadata) {
  KILN_CHECK(metadata.is_object(), ValueError,
             "load_safetensors: {} is corrupt: \"__metadata__\" must be an object of strings, got "
             "{}",
             path, metadata.dump());
  std::map<std::string, std::string> result;
  for (const auto& [key, value] : metadata.items()) {
    KILN_CHECK(value.is_string(), ValueError,
               "load_safetensors: {} is corrupt: \"__metadata__\" entry '{}' must be a string, got "
               "{}",
               path, key, value.dump());
    result.emplace(key, value.get<std::string>());
  }
  return result;
}

// Offsets must tile the data section: sorted by begin, each tensor starts where the previous one
// ends, the first at 0 and the last at the end of the file (as the reference implementation
// requires). Checked in the order that names the likeliest cause first: a truncated file.
void check_layout(const std::string& path, std::vector<TensorEntry>& entries, int64_t data_size) {
  for (const TensorEntry& e : entries) {
    KILN_CHECK(e.end <= data_size, ValueError,
               "load_safetensors: {} is truncated: tensor '{}' ends at byte {} of the data "
               "section but the file holds only {} data bytes",
               path, e.name, e.end, data_size);
  }
  std::sort(entries.begin(), entries.end(), [](const TensorEntry& a, const TensorEntry& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  int64_t position = 0;
  const TensorEntry* previous = nullptr;
  for (const TensorEntry& e : entries) {
    KILN_CHECK(e.begin >= position, ValueError,
               "load_safetensors: {} is corrupt: tensors '{}' (bytes {}..{}) and '{}' (bytes "
               "{}..{}) overlap",
               path, previous ? previous->name : "", previous ? previous->begin : 0,
               previous ? previous->end : 0, e.name, e.begin, e.end);
    KILN_CHECK(e.begin == position, ValueError,
               "load_safetensors: {} is corrupt: bytes {}..{} of the data section belong to no "
               "tensor (the next tensor, '{}', starts at {})",
               path, position, e.begin, e.name, e.begin);
    position = e.end;
    previous = &e;
  }
  KILN_CHECK(position == data_size, ValueError,
             "load_safetensors: {} is corrupt: {} bytes after the last tensor belong to no tensor",
             path, data_size - position);
}

}  // namespace

std::string_view safetensors_dtype_name(ScalarType dtype) {
  for (const DTypeName& entry : kDTypeNames)
    if (entry.dtype == dtype) return entry.name;
  throw DTypeError(fmt::format("safetensors_dtype_name: unknown dtype {}", int(dtype)));
}

ScalarType dtype_from_safetensors_name(std::string_view name) {
  for (const DTypeName& entry : kDTypeNames)
    if (entry.name == name) return entry.dtype;
  throw DTypeError(fmt::format(
      "unknown safetensors dtype \"{}\": Kiln reads BOOL U8 U16 U32 U64 I8 I16 I32 I64 F16 BF16 "
      "F32 F64 (it has no float8 or complex dtypes)",
      name));
}

void save_safetensors(const std::filesystem::path& path,
                      const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  // Largest elements first, so with the header padded to 8 bytes every tensor starts at a
  // multiple of its element size (what the reference writer does).
  std::vector<std::pair<std::string, Tensor>> ordered;
  ordered.reserve(tensors.size());
  for (const auto& [name, tensor] : tensors) {
    KILN_CHECK(name != kMetadataKey, ValueError,
               "save_safetensors: {}: a tensor cannot be named \"__metadata__\" (the header key "
               "of the metadata)",
               path.string());
    KILN_CHECK(tensor.defined(), ValueError, "save_safetensors: {}: tensor '{}' is undefined",
               path.string(), name);
    KILN_CHECK(!tensor.is_meta(), ValueError,
               "save_safetensors: {}: tensor '{}' is a Meta tensor, which has no data to save",
               path.string(), name);
    ordered.emplace_back(name, tensor.detach().contiguous());
  }
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    return a.second.element_size() > b.second.element_size();
  });

  Json header = Json::object();
  if (!metadata.empty()) header[std::string(kMetadataKey)] = metadata;
  int64_t offset = 0;
  for (const auto& [name, tensor] : ordered) {
    header[name] = {{"dtype", std::string(safetensors_dtype_name(tensor.dtype()))},
                    {"shape", std::vector<int64_t>(tensor.sizes().begin(), tensor.sizes().end())},
                    {"data_offsets", {offset, offset + tensor.nbytes()}}};
    offset += tensor.nbytes();
  }
  std::string header_text;
  try {
    header_text = header.dump();
  } catch (const Json::type_error& e) {
    throw ValueError(fmt::format(
        "save_safetensors: {}: a tensor name or metadata string is not valid UTF-8 ({})",
        path.string(), e.what()));
  }
  header_text.append((8 - (8 + header_text.size()) % 8) % 8, ' ');
  uint64_t header_size = header_text.size();

  std::vector<std::span<const std::byte>> chunks;
  chunks.push_back(std::as_bytes(std::span(&header_size, 1)));
  chunks.push_back(std::as_bytes(std::span(header_text)));
  for (const auto& [name, tensor] : ordered) {
    chunks.emplace_back(static_cast<const std::byte*>(tensor.data_ptr()),
                        static_cast<size_t>(tensor.nbytes()));
  }
  util::write_file_atomically(path, chunks, "save_safetensors");
}

SafetensorsFile load_safetensors(const std::filesystem::path& path_arg) {
  InputFile file(path_arg);
  const std::string& path = file.path();
  KILN_CHECK(file.size() >= 8, ValueError,
             "load_safetensors: {} is not a safetensors file: it has {} bytes, fewer than the "
             "8-byte header length",
             path, file.size());
  uint64_t header_size = 0;
  file.read(&header_size, 8, 0);
  KILN_CHECK(header_size <= kMaxHeaderBytes, ValueError,
             "load_safetensors: {} is corrupt or not a safetensors file: its first 8 bytes "
             "declare a {}-byte header, more than the {} bytes safetensors allows",
             path, header_size, kMaxHeaderBytes);
  KILN_CHECK(header_size <= static_cast<uint64_t>(file.size() - 8), ValueError,
             "load_safetensors: {} is truncated or not a safetensors file: its first 8 bytes "
             "declare a {}-byte header but the file has only {} bytes after them",
             path, header_size, file.size() - 8);
  std::string header_text(header_size, '\0');
  file.read(header_text.data(), static_cast<int64_t>(header_size), 8);
  KILN_CHECK(!header_text.empty() && header_text[0] == '{', ValueError,
             "load_safetensors: {} is not a safetensors file: the header does not start with "
             "'{{'",
             path);
  Json header;
  try {
    header = util::parse_json_bounded(header_text, kMaxHeaderDepth);
  } catch (const ValueError& e) {
    throw ValueError(fmt::format("load_safetensors: {} is corrupt: the header {}", path, e.what()));
  }
  KILN_CHECK(header.is_object(), ValueError,
             "load_safetensors: {} is corrupt: the header must be a JSON object", path);

  SafetensorsFile result;
  std::vector<TensorEntry> entries;
  for (const auto& [name, info] : header.items()) {
    if (name == kMetadataKey) {
      result.metadata = parse_metadata(path, info);
    } else {
      entries.push_back(parse_entry(path, name, info));
    }
  }
  const int64_t data_start = 8 + static_cast<int64_t>(header_size);
  check_layout(path, entries, file.size() - data_start);

  for (const TensorEntry& e : entries) {
    Tensor tensor;
    try {
      // A shape like [0, 2^62, 4] has no bytes (offsets [x, x]) but no int64 strides.
      tensor = empty(e.shape, e.dtype);
    } catch (const ValueError& error) {
      throw ValueError(fmt::format("load_safetensors: {} is corrupt: tensor '{}': {}", path, e.name,
                                   error.what()));
    }
    file.read(tensor.data_ptr(), e.end - e.begin, data_start + e.begin);
    if (e.dtype == kBool) {
      // Any other byte would be an invalid C++ bool.
      const auto* bytes = static_cast<const uint8_t*>(tensor.data_ptr());
      const auto bad = std::find_if(bytes, bytes + tensor.numel(), [](uint8_t b) { return b > 1; });
      KILN_CHECK(bad == bytes + tensor.numel(), ValueError,
                 "load_safetensors: {} is corrupt: BOOL tensor '{}' holds the byte {} at element "
                 "{} (only 0 and 1 are booleans)",
                 path, e.name, *bad, bad - bytes);
    }
    result.tensors.emplace(e.name, std::move(tensor));
  }
  return result;
}

}  // namespace kiln::io
