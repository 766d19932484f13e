// adaptive_max_pool2d and adaptive_max_pool3d: (values, indices), one kernel for both
// (src/kernels/cpu/pool3d.cpp; a 2-d input is a box of depth 1, whose flat positions h * W + w
// are the 2-d ones). adaptive_max_pool1d is a composite of the 2-d op (pool1d.cpp). Registered
// from register_linalg_ops (src/ops/linalg.cpp).
#include "kiln/ops/pooling.h"
#include "src/kernels/cpu/pool3d.h"
#include "src/ops/pool_nd.h"
#include "src/ops/registry.h"

namespace kiln {
namespace {

int64_t spatial_dims(const OpCall& call) { return call.name() == "adaptive_max_pool2d" ? 2 : 3; }

void meta_adaptive_max_pool(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const int64_t spatial = spatial_dims(call);
  const std::array<int64_t, 3> out =
      adaptive_nd_output_size(call.name(), self, spatial, call.ints(1));
  SymDimVector sizes;
  for (int64_t i = 0; i < spatial; ++i) sizes.push_back(out[static_cast<size_t>(i)]);
  const SymDimVector shape = pooled_nd_shape(self, sizes);
  call.set_output(0, self.dtype(), shape);
  call.set_output(1, kInt64, shape);
}

void cpu_adaptive_max_pool(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const int64_t spatial = spatial_dims(call);
  const std::array<int64_t, 3> out =
      adaptive_nd_output_size(call.name(), self, spatial, call.ints(1));
  cpu::Pool3dGeometry g;
  g.planes = 1;
  for (int64_t d = 0; d < self.dim() - spatial; ++d) g.planes *= self.sizes()[d];
  // A 2-d pool's sizes fill the last two of the three dims.
  const size_t first = static_cast<size_t>(3 - spatial);
  for (size_t i = 0; i < static_cast<size_t>(spatial); ++i) {
    g.in[first + i] = self.sizes()[static_cast<size_t>(self.dim() - spatial) + i];
    g.out[first + i] = out[i];
  }
  cpu::adaptive_max_pool3d(self, call.output(0), call.output(1), g);
}

}  // namespace

void register_adaptive_max_pool_ops(OpRegistry& r) {
  r.add({.name = "adaptive_max_pool2d",
         .schema = "adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)",
         .family = "linalg",
         .meta = meta_adaptive_max_pool,
         .cpu = cpu_adaptive_max_pool,
         .dtypes = dtypes::kNumeric});
  r.add({.name = "adaptive_max_pool3d",
         .schema = "adaptive_max_pool3d(Tensor self, int[3] output_size) -> (Tensor, Tensor)",
         .family = "linalg",
         .meta = meta_adaptive_max_pool,
         .cpu = cpu_adaptive_max_pool,
         .dtypes = dtypes::kNumeric});
}

std::pair<Tensor, Tensor> adaptive_max_pool2d(const Tensor& self, IntArrayRef output_size) {
  static const OpId id = op_id("adaptive_max_pool2d");
  Stack out = dispatch::call_boxed(id, self, output_size);
  return {std::move(out[0].tensor()), std::move(out[1].tensor())};
}
std::pair<Tensor, Tensor> adaptive_max_pool3d(const Tensor& self, IntArrayRef output_size) {
  static const OpId id = op_id("adaptive_max_pool3d");
  Stack out = dispatch::call_boxed(id, self, output_size);
  return {std::move(out[0].tensor()), std::move(out[1].tensor())};
}

}  // namespace kiln
