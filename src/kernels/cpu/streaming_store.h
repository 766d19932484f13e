// Streaming (non-temporal) stores for outputs far larger than the caches.
//
// Note [Streaming stores]
// A normal store to a line that is not in cache first reads the line (read-for-ownership), so an
// elementwise op over arrays much larger than the caches moves one extra array through memory:
// `out = a * b` costs 4 arrays of traffic instead of 3. For outputs of at least
// kStreamingBytes, kernels compute a block into an L1-resident buffer and copy it out with
// non-temporal stores, which skip the read. Below that size the output may well be read again
// soon from cache, so normal stores win.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "src/util/streaming_threshold.h"

#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace kiln::cpu {

using util::kStreamingBytes;

// Calls compute(begin, end, dst) for blocks of [lo, hi), where dst receives out[begin..end), and
// writes the blocks to `out` with non-temporal stores where the address allows.
template <typename Out, typename Compute>
inline void stream_blocks(Out* out, int64_t lo, int64_t hi, const Compute& compute) {
#if defined(__AVX__)
  constexpr int64_t kBlockBytes = 8192;
  constexpr int64_t kBlock = kBlockBytes / static_cast<int64_t>(sizeof(Out));
  alignas(64) Out buffer[kBlock];
  // Head: normal stores up to a 32-byte boundary.
  int64_t i = lo;
  while (i < hi && (reinterpret_cast<uintptr_t>(out + i) % 32) != 0) {
    compute(i, i + 1, out + i);
    ++i;
  }
  while (i < hi) {
    const int64_t len = std::min(kBlock, hi - i);
    compute(i, i + len, buffer);
    // Whole 32-byte vectors stream; a ragged tail (only at the end of the range) is stored
    // normally.
    const int64_t vectors = len * static_cast<int64_t>(sizeof(Out)) / 32;
    const __m256i* src = reinterpret_cast<const __m256i*>(buffer);
    __m256i* dst = reinterpret_cast<__m256i*>(out + i);
    for (int64_t v = 0; v < vectors; ++v) _mm256_stream_si256(dst + v, _mm256_load_si256(src + v));
    const int64_t done = vectors * 32 / static_cast<int64_t>(sizeof(Out));
    if (done < len) std::memcpy(out + i + done, buffer + done, (len - done) * sizeof(Out));
    i += len;
  }
  _mm_sfence();
#else
  compute(lo, hi, out + lo);
#endif
}

}  // namespace kiln::cpu
