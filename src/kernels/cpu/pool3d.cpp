// Max pooling with indices over [D, H, W] boxes (pool3d.h): one box per (sample, channel), boxes
// in parallel; each output element scans its window whole, in (d, h, w) order, with the rule of
// the 2-d window scan (pool_window.h): a larger value or a NaN replaces the maximum. The input is
// made contiguous first; the outputs are contiguous.
#include "src/kernels/cpu/pool3d.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <type_traits>
#include <vector>

#include "src/core/tensor_factory.h"
#include "src/kernels/cpu/copy.h"
#include "src/kernels/cpu/loops.h"
#include "src/kernels/cpu/pool_window.h"
#include "src/util/parallel.h"

namespace kiln::cpu {
namespace {

// The in-bounds taps of one output position along one dim: begin, begin + step, ... (< end).
struct Taps {
  int64_t begin, end, step;
};

// Window o of a strided pooling (the 2-d kernels' window_range, with its dilation as the step).
Taps window_taps(const Pool3dGeometry& g, int dim, int64_t o) {
  const WindowRange r =
      window_range(o, g.stride[dim], g.pad[dim], g.kernel[dim], g.dilation[dim], g.in[dim]);
  return {r.begin, r.end, g.dilation[dim]};
}

// Window o of an adaptive pooling: [floor(o * L / n), ceil((o + 1) * L / n)).
Taps adaptive_taps(const Pool3dGeometry& g, int dim, int64_t o) {
  const int64_t in = g.in[dim], out = g.out[dim];
  return {o * in / out, ((o + 1) * in + out - 1) / out, 1};
}

template <typename T, typename TapsOf>
void max_pool_typed(const T* in, T* values, int64_t* indices, const Pool3dGeometry& g,
                    const TapsOf& taps_of) {
  using Acc = opmath_t<T>;
  Acc lowest = std::numeric_limits<Acc>::lowest();
  if constexpr (std::is_floating_point_v<Acc>) lowest = -std::numeric_limits<Acc>::infinity();
  const int64_t in_h = g.in[1], in_w = g.in[2];
  const int64_t box = g.in[0] * in_h * in_w, out_box = g.out[0] * g.out[1] * g.out[2];
  const int64_t window = g.kernel[0] * g.kernel[1] * g.kernel[2];
  const bool parallel = g.planes > 1 && g.planes * out_box * window > 32768;
  parallel::parallel_for_if(parallel, 0, g.planes, [&](int64_t p_begin, int64_t p_end) {
    for (int64_t p = p_begin; p < p_end; ++p) {
      const T* src = in + p * box;
      int64_t o = p * out_box;
      for (int64_t od = 0; od < g.out[0]; ++od) {
        const Taps zs = taps_of(g, 0, od);
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          const Taps ys = taps_of(g, 1, oh);
          for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
            const Taps xs = taps_of(g, 2, ow);
            Acc best = lowest;
            int64_t best_at = (zs.begin * in_h + ys.begin) * in_w + xs.begin;
            for (int64_t z = zs.begin; z < zs.end; z += zs.step)
              for (int64_t y = ys.begin; y < ys.end; y += ys.step)
                for (int64_t x = xs.begin; x < xs.end; x += xs.step) {
                  const int64_t at = (z * in_h + y) * in_w + x;
                  const Acc v = static_cast<Acc>(src[at]);
                  bool take = v > best;
                  if constexpr (std::is_floating_point_v<Acc>) take = take || v != v;
                  if (take) best = v, best_at = at;
                }
            values[o] = static_cast<T>(best);
            indices[o] = best_at;
          }
        }
      }
    }
  });
}

Tensor contiguous(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor c = empty_tensor(t.sizes(), t.dtype());
  copy_into(c, t);
  return c;
}

template <typename TapsOf>
void max_pool(std::string_view op, const Tensor& input, const Tensor& values, const Tensor& indices,
              const Pool3dGeometry& g, const TapsOf& taps_of) {
  const Tensor in = contiguous(input);
  visit_dtype_in<dtypes::kNumeric>(in.dtype(), op, [&]<typename T>() {
    max_pool_typed<T>(in.data_ptr<T>(), values.data_ptr<T>(), indices.data_ptr<int64_t>(), g,
                      taps_of);
  });
}

template <typename T>
bool scatter_typed(const T* dy, const int64_t* idx, T* gi, int64_t planes, int64_t in_box,
                   int64_t out_box) {
  using Acc = opmath_t<T>;
  std::atomic<bool> bad_index{false};
  const bool parallel = planes > 1 && planes * (in_box + out_box) > 32768;
  parallel::parallel_for_if(parallel, 0, planes, [&](int64_t p_begin, int64_t p_end) {
    std::vector<Acc> acc(static_cast<size_t>(in_box));
    for (int64_t p = p_begin; p < p_end; ++p) {
      std::fill(acc.begin(), acc.end(), Acc(0));
      for (int64_t o = p * out_box; o < (p + 1) * out_box; ++o) {
        const int64_t i = idx[o];
        if (i < 0 || i >= in_box) {
          bad_index.store(true, std::memory_order_relaxed);
          continue;
        }
        acc[static_cast<size_t>(i)] += static_cast<Acc>(dy[o]);
      }
      for (int64_t i = 0; i < in_box; ++i) gi[p * in_box + i] = static_cast<T>(acc[i]);
    }
  });
  return !bad_index.load();
}

}  // namespace

void max_pool3d_with_indices(const Tensor& input, const Tensor& values, const Tensor& indices,
                             const Pool3dGeometry& g) {
  max_pool("max_pool3d_with_indices", input, values, indices, g, window_taps);
}

void adaptive_max_pool3d(const Tensor& input, const Tensor& values, const Tensor& indices,
                         const Pool3dGeometry& g) {
  Pool3dGeometry adaptive = g;
  adaptive.kernel = {1, 1, 1};  // only sizes the parallel split: windows are about in / out long
  for (int d = 0; d < 3; ++d)
    if (g.out[d] > 0) adaptive.kernel[d] = (g.in[d] + g.out[d] - 1) / g.out[d];
  max_pool("adaptive_max_pool", input, values, indices, adaptive, adaptive_taps);
}

void max_pool_indices_backward(std::string_view op, const Tensor& grad_out, const Tensor& indices,
                               const Tensor& grad_input, int64_t planes, int64_t in_box,
                               int64_t out_box) {
  const Tensor dy = contiguous(grad_out), idx = contiguous(indices);
  bool ok = true;
  visit_dtype_in<dtypes::kFloating>(dy.dtype(), op, [&]<typename T>() {
    ok = scatter_typed<T>(dy.data_ptr<T>(), idx.data_ptr<int64_t>(), grad_input.data_ptr<T>(),
                          planes, in_box, out_box);
  });
  KILN_CHECK(ok, IndexError,
             "{}: indices hold a position outside the input's plane or box of {} elements; pass "
             "the indices the forward returned for this input",
             op, in_box);
}

}  // namespace kiln::cpu
