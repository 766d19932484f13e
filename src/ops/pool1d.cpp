// The 1-d pools: max_pool1d (+ _with_indices), avg_pool1d, adaptive_avg_pool1d and
// adaptive_max_pool1d, composites of the 2-d ops over the input with a height-1 dim inserted
// before its length ([N, C, L] -> [N, C, 1, L]), as PyTorch computes them. A 1-d window (k, s,
// p, d) is the 2-d window (1, k), (1, s), (0, p), (1, d); the 2-d indices h * L + w are then w.
// Registered from register_linalg_ops (src/ops/linalg.cpp).
#include "kiln/ops/pooling.h"
#include "src/ops/pool_nd.h"
#include "src/ops/registry.h"

namespace kiln {
namespace {

// The 2-d form of a 1-d window list: `first` for the inserted height, then the length's value.
DimVector with_height(int64_t first, int64_t value) { return {first, value}; }

struct Window2d {
  DimVector kernel, stride, padding, dilation;
};

Window2d window_2d(const PoolNdShape& p) {
  return {with_height(1, p.kernel[0]), with_height(1, p.stride[0]), with_height(0, p.padding[0]),
          with_height(1, p.dilation[0])};
}

// max_pool1d(self, kernel_size, stride, padding, dilation, ceil_mode) and _with_indices.
void composite_max_pool1d(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const std::string_view op = call.name();
  check_pool_nd_dtype(call, self);
  const Window2d w = window_2d(pool_nd_window_shape(op, self, 1, call.ints(1), call.ints(2),
                                                    call.ints(3), call.ints(4), call.bool_arg(5)));
  const Tensor x = self.unsqueeze(-2);
  if (op == "max_pool1d") {
    call.set_output(
        0, max_pool2d(x, w.kernel, w.stride, w.padding, w.dilation, call.bool_arg(5)).squeeze(-2));
    return;
  }
  auto [values, indices] =
      max_pool2d_with_indices(x, w.kernel, w.stride, w.padding, w.dilation, call.bool_arg(5));
  call.set_output(0, values.squeeze(-2));
  call.set_output(1, indices.squeeze(-2));
}

// avg_pool1d(self, kernel_size, stride, padding, ceil_mode, count_include_pad)
void composite_avg_pool1d(OpCall& call) {
  const Tensor& self = call.tensor(0);
  check_pool_nd_dtype(call, self);
  const Window2d w = window_2d(pool_nd_window_shape(
      call.name(), self, 1, call.ints(1), call.ints(2), call.ints(3), {}, call.bool_arg(4)));
  call.set_output(0, avg_pool2d(self.unsqueeze(-2), w.kernel, w.stride, w.padding, call.bool_arg(4),
                                call.bool_arg(5))
                         .squeeze(-2));
}

// adaptive_avg_pool1d(self, output_size): the height 1 pooled to 1 is the identity.
void composite_adaptive_avg_pool1d(OpCall& call) {
  const Tensor& self = call.tensor(0);
  check_pool_nd_dtype(call, self);
  const int64_t out = adaptive_nd_output_size(call.name(), self, 1, call.ints(1))[0];
  call.set_output(0, adaptive_avg_pool2d(self.unsqueeze(-2), {1, out}).squeeze(-2));
}

void composite_adaptive_max_pool1d(OpCall& call) {
  const Tensor& self = call.tensor(0);
  check_pool_nd_dtype(call, self);
  const int64_t out = adaptive_nd_output_size(call.name(), self, 1, call.ints(1))[0];
  auto [values, indices] = adaptive_max_pool2d(self.unsqueeze(-2), {1, out});
  call.set_output(0, values.squeeze(-2));
  call.set_output(1, indices.squeeze(-2));
}

}  // namespace

void register_pool1d_ops(OpRegistry& r) {
  r.add({.name = "max_pool1d",
         .schema =
             "max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, "
             "int[1] dilation=1, bool ceil_mode=False) -> Tensor",
         .family = "linalg",
         .composite = composite_max_pool1d,
         .dtypes = dtypes::kNumeric});
  r.add({.name = "max_pool1d_with_indices",
         .schema = "max_pool1d_with_indices(Tensor self, int[1] kernel_size, int[1] stride=[], "
                   "int[1] padding=0, int[1] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
         .family = "linalg",
         .composite = composite_max_pool1d,
         .dtypes = dtypes::kNumeric});
  r.add({.name = "avg_pool1d",
         .schema =
             "avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, "
             "bool ceil_mode=False, bool count_include_pad=True) -> Tensor",
         .family = "linalg",
         .composite = composite_avg_pool1d,
         .dtypes = dtypes::kFloating});
  r.add({.name = "adaptive_avg_pool1d",
         .schema = "adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor",
         .family = "linalg",
         .composite = composite_adaptive_avg_pool1d,
         .dtypes = dtypes::kFloating});
  r.add({.name = "adaptive_max_pool1d",
         .schema = "adaptive_max_pool1d(Tensor self, int[1] output_size) -> (Tensor, Tensor)",
         .family = "linalg",
         .composite = composite_adaptive_max_pool1d,
         .dtypes = dtypes::kNumeric});
}

Tensor max_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  static const OpId id = op_id("max_pool1d");
  return dispatch::call_tensor(id, self, kernel_size, stride, padding, dilation, ceil_mode);
}
std::pair<Tensor, Tensor> max_pool1d_with_indices(const Tensor& self, IntArrayRef kernel_size,
                                                  IntArrayRef stride, IntArrayRef padding,
                                                  IntArrayRef dilation, bool ceil_mode) {
  static const OpId id = op_id("max_pool1d_with_indices");
  Stack out = dispatch::call_boxed(id, self, kernel_size, stride, padding, dilation, ceil_mode);
  return {std::move(out[0].tensor()), std::move(out[1].tensor())};
}
Tensor avg_pool1d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad) {
  static const OpId id = op_id("avg_pool1d");
  return dispatch::call_tensor(id, self, kernel_size, stride, padding, ceil_mode,
                               count_include_pad);
}
Tensor adaptive_avg_pool1d(const Tensor& self, IntArrayRef output_size) {
  static const OpId id = op_id("adaptive_avg_pool1d");
  return dispatch::call_tensor(id, self, output_size);
}
std::pair<Tensor, Tensor> adaptive_max_pool1d(const Tensor& self, IntArrayRef output_size) {
  static const OpId id = op_id("adaptive_max_pool1d");
  Stack out = dispatch::call_boxed(id, self, output_size);
  return {std::move(out[0].tensor()), std::move(out[1].tensor())};
}

}  // namespace kiln
