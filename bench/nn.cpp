// softmax and layer_norm over the last dim of a 4096x1024 float32 activation (a transformer's
// hidden size), in ms; PyTorch eager is the reference (torch_ref.cpp).
#include "bench/bench.h"
#include "kiln/kiln.h"

namespace kiln::bench {

std::vector<Result> bench_nn(const Options& options) {
  // Distinct values per row so softmax does real work; arange wraps into a small range.
  Tensor x = (arange(int64_t{4096} * 1024) % 97).to(kFloat32).view({4096, 1024}) * 0.01;
  Tensor y;
  double softmax_s = median_seconds([&] { y = x.softmax(-1); }, options.repetitions);
  double layer_norm_s = median_seconds([&] { y = layer_norm(x, {1024}); }, options.repetitions);
  return {{"softmax_f32_4096x1024", "ms", softmax_s * 1e3, {}},
          {"layer_norm_f32_4096x1024", "ms", layer_norm_s * 1e3, {}}};
}

}  // namespace kiln::bench
