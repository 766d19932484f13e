// pointwise_mul_add_16M: memory bandwidth of a*b+c against a STREAM-like copy, the most a
// memory-bound kernel can reach on this machine.
#include <omp.h>

#include <cstdint>
#include <memory>

#include "bench/bench.h"
#include "kiln/kiln.h"

namespace kiln::bench {
namespace {

constexpr int64_t kN = int64_t{1} << 24;

}  // namespace

// STREAM "copy": one read and one write stream, parallel over the same OpenMP pool Kiln uses.
double stream_copy_gbps(const Options& options) {
  std::unique_ptr<float[]> src(new float[kN]);
  std::unique_ptr<float[]> dst(new float[kN]);
  float* s = src.get();
  float* d = dst.get();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < kN; ++i) {  // first touch by the threads that will copy
    s[i] = static_cast<float>(i & 1023);
    d[i] = 0;
  }
  double seconds = median_seconds(
      [&] {
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < kN; ++i) d[i] = s[i];
      },
      options.repetitions);
  volatile float sink = d[kN - 1];  // keep the copy observable
  (void)sink;
  return 2.0 * kN * sizeof(float) / seconds / 1e9;
}

std::vector<Result> bench_pointwise(const Options& options) {
  Tensor a = full({kN}, 1.5);
  Tensor b = full({kN}, 2.0);
  Tensor c = full({kN}, 0.5);
  Tensor out;
  double seconds = median_seconds([&] { out = a * b + c; }, options.repetitions);
  // Traffic counted as 4 arrays (3 reads, 1 write), as a fused kernel would move.
  double kiln_gbps = 4.0 * kN * sizeof(float) / seconds / 1e9;
  return {
      {"pointwise_mul_add_16M", "GB/s", kiln_gbps, {{"stream_copy", stream_copy_gbps(options)}}}};
}

}  // namespace kiln::bench
