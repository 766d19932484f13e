// float64 reference loops for the 1-d, 2-d and 3-d pools (pool_nd_ref_helpers.cpp), shared by
// the OpInfos of the 1-d pools, the 3-d pools and adaptive max pooling. Each visits every output
// window of the whole box and every tap in it (no separability assumed, Note [Separable 3-d
// pooling]), from PyTorch's documented formulas.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "tests/ops/harness.h"

namespace kiln::testing {

// One pooling's geometry over 3 dims; fewer spatial dims are leading dims of size 1 (window 1).
struct PoolBox {
  int64_t spatial = 0, planes = 0;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, k{1, 1, 1}, s{1, 1, 1}, p{0, 0, 0}, d{1, 1, 1};
  std::vector<int64_t> out_shape;  // the input's shape with its spatial dims pooled
};

// A windowed pooling of x's last `spatial` dims; an empty stride is the kernel size, an empty
// dilation 1.
PoolBox window_box(const Tensor& x, int64_t spatial, IntArrayRef kernel, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode);
// An adaptive pooling of x's last `spatial` dims to output_size.
PoolBox adaptive_box(const Tensor& x, int64_t spatial, IntArrayRef output_size);

// (values, indices) of max pooling: the first largest tap in (d, h, w) order or the last NaN,
// and its flat position in the box.
std::vector<Tensor> ref_max_pool(const Tensor& x, const PoolBox& b);
std::vector<Tensor> ref_avg_pool(const Tensor& x, const PoolBox& b, bool count_include_pad,
                                 std::optional<int64_t> divisor_override);
std::vector<Tensor> ref_adaptive_avg_pool(const Tensor& x, const PoolBox& b);
std::vector<Tensor> ref_adaptive_max_pool(const Tensor& x, const PoolBox& b);

// Values 0.25 apart in random order: no two elements of a max-pool window tie, even after the
// finite-difference step, so the argmax (and the gradient) is unambiguous.
Tensor distinct_values(std::vector<int64_t> shape, std::mt19937_64& rng);

}  // namespace kiln::testing
