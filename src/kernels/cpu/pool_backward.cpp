// Gradients of the 2-D pooling kernels (pool.cpp): each output element's gradient is spread over
// the input positions its window read (all of them for averages, the argmax for max). Planes run
// in parallel; windows may overlap, so each plane accumulates in its own [in_h, in_w] slice (in
// float for float16/bfloat16, in a per-thread buffer allocated once) and is written once.
#include <hwy/highway.h>

#include <atomic>
#include <vector>

#include "src/core/tensor_factory.h"
#include "src/kernels/cpu/conv.h"
#include "src/kernels/cpu/copy.h"
#include "src/kernels/cpu/loops.h"
#include "src/kernels/cpu/pool_window.h"
#include "src/kernels/cpu/vector_spans.h"
#include "src/util/parallel.h"

namespace kiln::cpu {
namespace {

bool parallel_planes(const PoolGeometry& g, int64_t work_per_plane) {
  return g.planes > 1 && g.planes * work_per_plane > 32768;
}

// Runs body(plane, acc) for every plane, acc being the plane's zeroed accumulator, then stores
// acc into grad_input's plane. For float and double the accumulator is grad_input itself.
template <typename T, typename Body>
void for_each_plane(T* grad_input, const PoolGeometry& g, int64_t work_per_plane,
                    const Body& body) {
  using Acc = opmath_t<T>;
  const int64_t in_plane = g.in_h * g.in_w;
  parallel::parallel_for_if(
      parallel_planes(g, work_per_plane), 0, g.planes, [&](int64_t p_begin, int64_t p_end) {
        std::vector<Acc> buffer(std::is_same_v<Acc, T> ? 0 : static_cast<size_t>(in_plane));
        for (int64_t p = p_begin; p < p_end; ++p) {
          T* dst = grad_input + p * in_plane;
          Acc* acc;
          if constexpr (std::is_same_v<Acc, T>) {
            acc = dst;
          } else {
            acc = buffer.data();
          }
          std::fill(acc, acc + in_plane, Acc(0));
          body(p, acc);
          if constexpr (!std::is_same_v<Acc, T>)
            for (int64_t i = 0; i < in_plane; ++i) dst[i] = static_cast<T>(acc[i]);
        }
      });
}

template <typename T>
bool max_pool_backward_typed(const T* go, const int64_t* indices, T* gi, const PoolGeometry& g) {
  using Acc = opmath_t<T>;
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  std::atomic<bool> bad_index{false};
  for_each_plane(gi, g, out_plane, [&](int64_t p, Acc* acc) {
    const T* dy = go + p * out_plane;
    const int64_t* idx = indices + p * out_plane;
    for (int64_t o = 0; o < out_plane; ++o) {
      const int64_t i = idx[o];
      if (i < 0 || i >= in_plane) {
        bad_index.store(true, std::memory_order_relaxed);
        continue;
      }
      acc[i] += static_cast<Acc>(dy[o]);
    }
  });
  return !bad_index.load();
}

// Finds each window's argmax again (max_pool_row, as the forward does) instead of reading stored
// indices: one pass over the input, and the forward need not write indices at all.
namespace hn = hwy::HWY_NAMESPACE;

// 2x2 windows with stride 2 tiling the plane exactly (28x28 -> 14x14, the usual case), float and
// double: the two input rows of an output row are loaded de-interleaved into the windows' four
// taps, the argmax is picked with masks (the same rule as max_pool_row: first largest, last NaN),
// and the two gradient rows are stored interleaved. Whole vectors, no scatter, no clearing pass.
template <typename T>
void max_pool_2x2_backward_plane(const T* dy, const T* in, T* gi, int64_t out_h, int64_t out_w) {
  const int64_t in_w = 2 * out_w;
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const T* r0 = in + 2 * oy * in_w;
    const T* r1 = r0 + in_w;
    T* g0 = gi + 2 * oy * in_w;
    T* g1 = g0 + in_w;
    const T* dy_row = dy + oy * out_w;
    int64_t ox = 0;
    // Note [Short pooled rows] (vector_spans.h)
    for_each_vector_span<T>(out_w, ox, [&](auto d, int64_t at) {
      hn::Vec<decltype(d)> a, b, c, e;
      hn::LoadInterleaved2(d, r0 + 2 * at, a, b);
      hn::LoadInterleaved2(d, r1 + 2 * at, c, e);
      const auto take_b = hn::Or(hn::Gt(b, a), hn::IsNaN(b));
      auto best = hn::IfThenElse(take_b, b, a);
      const auto take_c = hn::Or(hn::Gt(c, best), hn::IsNaN(c));
      best = hn::IfThenElse(take_c, c, best);
      const auto take_e = hn::Or(hn::Gt(e, best), hn::IsNaN(e));
      const auto later_than_b = hn::Or(take_c, take_e);
      const auto v = hn::LoadU(d, dy_row + at);
      hn::StoreInterleaved2(hn::IfThenZeroElse(hn::Or(later_than_b, take_b), v),
                            hn::IfThenElseZero(hn::AndNot(later_than_b, take_b), v), d,
                            g0 + 2 * at);
      hn::StoreInterleaved2(hn::IfThenElseZero(hn::AndNot(take_e, take_c), v),
                            hn::IfThenElseZero(take_e, v), d, g1 + 2 * at);
    });
    for (; ox < out_w; ++ox) {
      const T a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], e = r1[2 * ox + 1];
      const bool take_b = (b > a) | (b != b);
      T best = select_if(take_b, b, a);
      const bool take_c = (c > best) | (c != c);
      best = select_if(take_c, c, best);
      const bool take_e = (e > best) | (e != e);
      const T v = dy_row[ox];
      g0[2 * ox] = select_if(!take_b & !take_c & !take_e, v, T(0));
      g0[2 * ox + 1] = select_if(take_b & !take_c & !take_e, v, T(0));
      g1[2 * ox] = select_if(take_c & !take_e, v, T(0));
      g1[2 * ox + 1] = select_if(take_e, v, T(0));
    }
  }
}

// Windows that tile the input without overlap (stride = kernel, no dilation or padding, as in
// the usual 2x2 pooling): every input position belongs to at most one window, so each row of the
// gradient is written once, the window's gradient at its argmax and zeros around it, with no
// clearing pass and no scatter.
template <typename T>
void max_pool_tiled_backward_plane(const T* dy, const T* in, T* gi, const PoolGeometry& g,
                                   opmath_t<T>* best, int64_t* index) {
  using Acc = opmath_t<T>;
  const int64_t covered_h = std::min(g.out_h * g.kernel_h, g.in_h);
  const int64_t covered_w = std::min(g.out_w * g.kernel_w, g.in_w);
  for (int64_t oy = 0; oy < g.out_h; ++oy) {
    max_pool_row<true>(in, g, oy, best, index);
    const T* dy_row = dy + oy * g.out_w;
    for (int64_t y = oy * g.kernel_h; y < std::min((oy + 1) * g.kernel_h, g.in_h); ++y) {
      T* row = gi + y * g.in_w;
      for (int64_t ox = 0; ox < g.out_w; ++ox) {
        const int64_t x0 = ox * g.kernel_w, x1 = std::min(x0 + g.kernel_w, g.in_w);
        const int64_t argmax_x = index[ox] - y * g.in_w;  // outside [x0, x1) if in another row
        const Acc d = static_cast<Acc>(dy_row[ox]);
        for (int64_t x = x0; x < x1; ++x)
          row[x] = static_cast<T>(select_if(x == argmax_x, d, Acc(0)));
      }
      std::fill(row + covered_w, row + g.in_w, T(0));
    }
  }
  std::fill(gi + covered_h * g.in_w, gi + g.in_h * g.in_w, T(0));
}

// Finds each window's argmax again (max_pool_row, as the forward does) instead of reading stored
// indices: one pass over the input, and the forward need not write indices at all.
template <typename T>
void max_pool_rescan_backward_typed(const T* go, const T* in, T* gi, const PoolGeometry& g) {
  using Acc = opmath_t<T>;
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const bool tiled = g.stride_h == g.kernel_h && g.stride_w == g.kernel_w && g.dilation_h == 1 &&
                     g.dilation_w == 1 && g.pad_h == 0 && g.pad_w == 0;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (tiled && g.kernel_h == 2 && g.kernel_w == 2 && g.in_h == 2 * g.out_h &&
        g.in_w == 2 * g.out_w) {
      parallel::parallel_for_if(
          parallel_planes(g, in_plane), 0, g.planes, [&](int64_t p_begin, int64_t p_end) {
            for (int64_t p = p_begin; p < p_end; ++p)
              max_pool_2x2_backward_plane(go + p * out_plane, in + p * in_plane, gi + p * in_plane,
                                          g.out_h, g.out_w);
          });
      return;
    }
  }
  if (tiled) {
    parallel::parallel_for_if(
        parallel_planes(g, in_plane), 0, g.planes, [&](int64_t p_begin, int64_t p_end) {
          std::vector<Acc> best(static_cast<size_t>(g.out_w));
          std::vector<int64_t> index(static_cast<size_t>(g.out_w));
          for (int64_t p = p_begin; p < p_end; ++p)
            max_pool_tiled_backward_plane(go + p * out_plane, in + p * in_plane, gi + p * in_plane,
                                          g, best.data(), index.data());
        });
    return;
  }
  // Without padding every window has an in-bounds tap; with it, a window whose taps all fall in
  // the padding has a constant output (no gradient) and is skipped.
  const bool padded = g.pad_h > 0 || g.pad_w > 0;
  for_each_plane(gi, g, out_plane * g.kernel_h * g.kernel_w, [&](int64_t p, Acc* acc) {
    // Per-thread row scratch, kept across planes and calls.
    thread_local std::vector<Acc> best;
    thread_local std::vector<int64_t> index;
    best.resize(static_cast<size_t>(g.out_w));
    index.resize(static_cast<size_t>(g.out_w));
    const T* dy = go + p * out_plane;
    for (int64_t oy = 0; oy < g.out_h; ++oy) {
      if (padded) {
        const WindowRange ys =
            window_range(oy, g.stride_h, g.pad_h, g.kernel_h, g.dilation_h, g.in_h);
        if (ys.begin >= ys.end) continue;
      }
      max_pool_row<true>(in + p * in_plane, g, oy, best.data(), index.data());
      for (int64_t ox = 0; ox < g.out_w; ++ox) {
        if (padded) {
          const WindowRange xs =
              window_range(ox, g.stride_w, g.pad_w, g.kernel_w, g.dilation_w, g.in_w);
          if (xs.begin >= xs.end) continue;
        }
        acc[index[ox]] += static_cast<Acc>(dy[oy * g.out_w + ox]);
      }
    }
  });
}

template <typename T>
void avg_pool_backward_typed(const T* go, T* gi, const PoolGeometry& g, bool count_include_pad,
                             std::optional<int64_t> divisor_override) {
  using Acc = opmath_t<T>;
  const int64_t out_plane = g.out_h * g.out_w;
  for_each_plane(gi, g, out_plane * g.kernel_h * g.kernel_w, [&](int64_t p, Acc* acc) {
    const T* dy = go + p * out_plane;
    // The same windows and divisors as the forward (pool.cpp).
    for (int64_t oy = 0; oy < g.out_h; ++oy) {
      int64_t y0 = oy * g.stride_h - g.pad_h;
      int64_t y1 = std::min(y0 + g.kernel_h, g.in_h + g.pad_h);
      const int64_t padded_h = y1 - y0;
      y0 = std::max<int64_t>(y0, 0);
      y1 = std::min(y1, g.in_h);
      for (int64_t ox = 0; ox < g.out_w; ++ox) {
        int64_t x0 = ox * g.stride_w - g.pad_w;
        int64_t x1 = std::min(x0 + g.kernel_w, g.in_w + g.pad_w);
        const int64_t padded_size = padded_h * (x1 - x0);
        x0 = std::max<int64_t>(x0, 0);
        x1 = std::min(x1, g.in_w);
        const int64_t divisor = divisor_override    ? *divisor_override
                                : count_include_pad ? padded_size
                                                    : (y1 - y0) * (x1 - x0);
        const Acc share = static_cast<Acc>(dy[oy * g.out_w + ox]) / static_cast<Acc>(divisor);
        for (int64_t y = y0; y < y1; ++y)
          for (int64_t x = x0; x < x1; ++x) acc[y * g.in_w + x] += share;
      }
    }
  });
}

template <typename T>
void adaptive_avg_pool_backward_typed(const T* go, T* gi, const PoolGeometry& g) {
  using Acc = opmath_t<T>;
  const int64_t out_plane = g.out_h * g.out_w;
  for_each_plane(gi, g, std::max(out_plane, g.in_h * g.in_w), [&](int64_t p, Acc* acc) {
    const T* dy = go + p * out_plane;
    for (int64_t oy = 0; oy < g.out_h; ++oy) {
      const int64_t y0 = oy * g.in_h / g.out_h;
      const int64_t y1 = ((oy + 1) * g.in_h + g.out_h - 1) / g.out_h;
      for (int64_t ox = 0; ox < g.out_w; ++ox) {
        const int64_t x0 = ox * g.in_w / g.out_w;
        const int64_t x1 = ((ox + 1) * g.in_w + g.out_w - 1) / g.out_w;
        const Acc share =
            static_cast<Acc>(dy[oy * g.out_w + ox]) / static_cast<Acc>((y1 - y0) * (x1 - x0));
        for (int64_t y = y0; y < y1; ++y)
          for (int64_t x = x0; x < x1; ++x) acc[y * g.in_w + x] += share;
      }
    }
  });
}

Tensor contiguous(const Tensor& t) { return contiguous_as(t, t.dtype()); }

}  // namespace

void max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Tensor& grad_input,
                         const PoolGeometry& g) {
  const Tensor dy = contiguous(grad_out), idx = contiguous_as(indices, kInt64);
  bool ok = true;
  visit_dtype_in<dtypes::kFloating>(
      dy.dtype(), "max_pool2d_with_indices_backward", [&]<typename T>() {
        ok = max_pool_backward_typed<T>(dy.data_ptr<T>(), idx.data_ptr<int64_t>(),
                                        grad_input.data_ptr<T>(), g);
      });
  KILN_CHECK(ok, IndexError,
             "max_pool2d_with_indices_backward: indices hold a position outside the {}x{} input "
             "plane; pass the indices max_pool2d_with_indices returned for this input",
             g.in_h, g.in_w);
}

void max_pool2d_rescan_backward(const Tensor& grad_out, const Tensor& input,
                                const Tensor& grad_input, const PoolGeometry& g) {
  const Tensor dy = contiguous(grad_out), x = contiguous(input);
  visit_dtype_in<dtypes::kFloating>(dy.dtype(), "max_pool2d_backward", [&]<typename T>() {
    max_pool_rescan_backward_typed<T>(dy.data_ptr<T>(), x.data_ptr<T>(), grad_input.data_ptr<T>(),
                                      g);
  });
}

void avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_input, const PoolGeometry& g,
                         bool count_include_pad, std::optional<int64_t> divisor_override) {
  const Tensor dy = contiguous(grad_out);
  visit_dtype_in<dtypes::kFloating>(dy.dtype(), "avg_pool2d_backward", [&]<typename T>() {
    avg_pool_backward_typed<T>(dy.data_ptr<T>(), grad_input.data_ptr<T>(), g, count_include_pad,
                               divisor_override);
  });
}

void adaptive_avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_input,
                                  const PoolGeometry& g) {
  const Tensor dy = contiguous(grad_out);
  visit_dtype_in<dtypes::kFloating>(dy.dtype(), "adaptive_avg_pool2d_backward", [&]<typename T>() {
    adaptive_avg_pool_backward_typed<T>(dy.data_ptr<T>(), grad_input.data_ptr<T>(), g);
  });
}

}  // namespace kiln::cpu
