// The output size above which stores bypass the caches (Note [Streaming stores] in
// src/kernels/cpu/streaming_store.h), shared by the eager kernels and the generated code (Note
// [Streaming stores in generated code] in src/codegen/cpp/codegen.cpp).
#pragma once

#include <cstdint>

namespace kiln::util {

inline constexpr int64_t kStreamingBytes = int64_t{16} << 20;

}  // namespace kiln::util
