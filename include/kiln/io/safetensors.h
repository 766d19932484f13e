// safetensors (https://github.com/huggingface/safetensors), the weights format of Hugging Face,
// PyTorch users and Kiln's checkpoints and AOT packages:
//
//   8 bytes    N, the header length, little-endian uint64
//   N bytes    a JSON object: {"<tensor name>": {"dtype": "F32", "shape": [2, 3],
//              "data_offsets": [begin, end]}, ..., "__metadata__": {"<key>": "<value>"}}
//              (padded with spaces; Kiln pads it to a multiple of 8 so every tensor is aligned)
//   the rest   the tensors' bytes, row-major and little-endian; data_offsets count from here
//
// dtypes: BOOL U8 U16 U32 U64 I8 I16 I32 I64 F16 BF16 F32 F64, i.e. every Kiln dtype.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "kiln/dtype.h"
#include "kiln/io/io_error.h"
#include "kiln/tensor.h"

namespace kiln::io {

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;  // the header's "__metadata__"
};

// Writes `tensors` (any dtype; non-contiguous ones are written in row-major order) and
// `metadata` to `path`. The file is replaced atomically: it is written to a temporary file in the
// same directory, flushed to disk, then renamed over `path`, so a crash or a failed write leaves
// either the old file or the complete new one (see Note [Atomic file replacement]).
//
// ValueError for an undefined or Meta tensor, or a tensor named "__metadata__"; IOError when the
// file cannot be written (the old file, if any, is left as it was).
void save_safetensors(const std::filesystem::path& path,
                      const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Reads a safetensors file. Each tensor gets its own storage (nothing aliases the file).
//
// A corrupt file is rejected with a ValueError that names the path and the problem: a header
// length larger than the file, a header that is not a JSON object of the layout above, offsets
// out of range, overlapping, leaving gaps, or not matching dtype and shape, data shorter than the
// header declares (a truncated file), or a BOOL byte other than 0 or 1. A dtype Kiln does not have
// (F8_E4M3, ...) is a DTypeError. IOError when the file cannot be opened or read.
SafetensorsFile load_safetensors(const std::filesystem::path& path);

// "F32", "BF16", ...: the safetensors name of a Kiln dtype, and back (DTypeError for a name that
// is not one of Kiln's dtypes).
std::string_view safetensors_dtype_name(ScalarType dtype);
ScalarType dtype_from_safetensors_name(std::string_view name);

}  // namespace kiln::io
