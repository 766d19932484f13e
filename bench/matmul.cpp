// mm_f32_1024: kiln::mm against calling each GEMM library directly: OpenBLAS's cblas_sgemm and
// oneDNN's dnnl_sgemm. Kiln uses one of them (oneDNN on AVX-512 CPUs: Note [oneDNN for float32
// products]), so one ratio shows Kiln's own overhead around the call and the other what the
// choice of library gains.
#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <vector>

#include "bench/bench.h"
#include "kiln/kiln.h"

namespace kiln::bench {

std::vector<Result> bench_matmul(const Options& options) {
  constexpr int n = 1024;
  const double flops = 2.0 * n * n * n;
  const int reps = options.repetitions / 2 + 1;

  Tensor a = full({n, n}, 0.5);
  Tensor b = full({n, n}, 0.25);
  Tensor c;
  double kiln_seconds = median_seconds([&] { c = a.mm(b); }, reps);

  std::vector<float> x(size_t{n} * n, 0.5f), y(size_t{n} * n, 0.25f), z(size_t{n} * n);
  double blas_seconds = median_seconds(
      [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, x.data(), n, y.data(),
                    n, 0.0f, z.data(), n);
      },
      reps);
  double onednn_seconds = median_seconds(
      [&] { dnnl_sgemm('N', 'N', n, n, n, 1.0f, x.data(), n, y.data(), n, 0.0f, z.data(), n); },
      reps);
  return {{"mm_f32_1024",
           "GFLOP/s",
           flops / kiln_seconds / 1e9,
           {{"openblas_sgemm", flops / blas_seconds / 1e9},
            {"onednn_sgemm", flops / onednn_seconds / 1e9}}}};
}

}  // namespace kiln::bench
