// See onednn_gemm.h.
//
// Note [oneDNN for float32 products]
// Debian 12's OpenBLAS (0.3.21, DYNAMIC_ARCH) picks its Haswell (AVX2) kernels on AMD CPUs with
// AVX-512 ("Core: Haswell" on an AMD EPYC with AVX-512), while oneDNN's JIT GEMM uses AVX-512
// there. Measured on such a machine (2 cores, median of 100 calls, ms, oneDNN 2.6.3 vs OpenBLAS's
// own threading): [4096, 256] x [256, 8] 0.12 vs 0.63; [512, 256] x [256, 256] 0.18 vs 0.47; [4096,
// 256] x [256, 256] 1.53 vs 3.57; [1024]^3 6.0 vs 12.0; [1, 784] x [784, 512] 0.014 vs 0.070;
// [64]^3 0.006 vs 0.005; on one thread [4096, 256] x [256, 256] 2.69 vs 5.19. Limited to AVX2
// (ONEDNN_MAX_CPU_ISA=AVX2) oneDNN was no better than OpenBLAS (3.81 vs 3.37 on the [4096, 256]
// product), so without AVX-512 the products stay with OpenBLAS. float64 has no oneDNN GEMM and
// stays with OpenBLAS everywhere. Both libraries run on libgomp's one thread pool; inside a
// parallel region each runs on the calling thread.
#include "src/kernels/cpu/onednn_gemm.h"

#include <oneapi/dnnl/dnnl.h>

#include <cstdlib>
#include <string_view>

#include "kiln/error.h"

namespace kiln::cpu {
namespace {

bool cpu_has_avx512_core() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#else
  return false;
#endif
}

bool decide() {
  const char* forced = std::getenv("KILN_GEMM");
  if (forced != nullptr && *forced != '\0') {
    const std::string_view name(forced);
    KILN_CHECK(name == "openblas" || name == "onednn", ValueError,
               "KILN_GEMM={}: expected `openblas` or `onednn` (or unset, to choose by CPU)", name);
    return name == "onednn";
  }
  return cpu_has_avx512_core();
}

}  // namespace

bool onednn_sgemm_enabled() {
  static const bool enabled = decide();
  return enabled;
}

void onednn_sgemm(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha,
                  const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  const dnnl_status_t status =
      dnnl_sgemm(ta == CblasNoTrans ? 'N' : 'T', tb == CblasNoTrans ? 'N' : 'T', m, n, k, alpha, a,
                 lda, b, ldb, beta, c, ldc);
  KILN_CHECK(status == dnnl_success, Error,
             "matrix product: oneDNN's sgemm failed (status {}) for [{}, {}] x [{}, {}] with "
             "leading dimensions {}, {}, {}; set KILN_GEMM=openblas to use OpenBLAS instead",
             static_cast<int>(status), m, k, k, n, lda, ldb, ldc);
}

}  // namespace kiln::cpu
