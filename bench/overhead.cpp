// op_overhead_add_1elem: the eager hot path (DESIGN.md section 3 budgets a few hundred ns).
#include "bench/bench.h"
#include "kiln/kiln.h"

namespace kiln::bench {

std::vector<Result> bench_overhead(const Options& options) {
  Tensor a = ones({1});
  Tensor b = ones({1});
  constexpr int kOpsPerRep = 2000;
  Tensor c;
  double seconds = median_seconds(
      [&] {
        for (int i = 0; i < kOpsPerRep; ++i) c = a + b;
      },
      options.repetitions * 3, /*warmup=*/10);
  return {{"op_overhead_add_1elem", "ns", seconds / kOpsPerRep * 1e9, {}}};
}

}  // namespace kiln::bench
