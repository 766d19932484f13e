// IDX files, the format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/):
//
//   bytes 0-1  zero
//   byte  2    element type: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32,
//              0x0E float64
//   byte  3    number of dimensions
//   then one big-endian uint32 per dimension, then the elements, row-major and big-endian.
#pragma once

#include <filesystem>

#include "kiln/io/io_error.h"
#include "kiln/tensor.h"

namespace kiln::io {

// Reads an IDX file into a tensor of its element type and shape (uint8 [60000, 28, 28] for
// Fashion-MNIST's training images). Files compressed with gzip (`.gz`) are decompressed on the
// fly; uncompressed files are read as they are, whatever their name.
//
// Errors name the path and what is wrong: IOError when the file cannot be opened or read;
// ValueError for a bad magic number, a file with fewer or more data bytes than its header
// declares (truncated), or a corrupt gzip stream.
Tensor read_idx(const std::filesystem::path& path);

}  // namespace kiln::io
