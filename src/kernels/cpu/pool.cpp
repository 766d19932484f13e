// 2-D pooling kernels: one output plane per (sample, channel), planes in parallel. Inputs are
// made contiguous first; outputs are contiguous.
#include <hwy/highway.h>

#include <cmath>
#include <limits>
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

Tensor contiguous(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor c = empty_tensor(t.sizes(), t.dtype());
  copy_into(c, t);
  return c;
}

bool parallel_planes(const PoolGeometry& g) {
  return g.planes > 1 && g.planes * g.out_h * g.out_w * g.kernel_h * g.kernel_w > 32768;
}

namespace hn = hwy::HWY_NAMESPACE;

// Values of 2x2, stride-2 windows tiling a plane exactly (the usual case), float and double: the
// two input rows of an output row are loaded de-interleaved into the windows' four taps and
// reduced with the window scan's rule (a larger value or a NaN replaces the maximum).
template <typename T>
void max_pool_2x2_plane(const T* in, T* out, int64_t out_h, int64_t out_w) {
  auto take = [](auto v, auto best) { return hn::Or(hn::Gt(v, best), hn::IsNaN(v)); };
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const T* r0 = in + 2 * oy * 2 * out_w;
    const T* r1 = r0 + 2 * out_w;
    T* dst = out + oy * out_w;
    int64_t ox = 0;
    // Note [Short pooled rows]
    for_each_vector_span<T>(out_w, ox, [&](auto d, int64_t at) {
      hn::Vec<decltype(d)> a, b, c, e;
      hn::LoadInterleaved2(d, r0 + 2 * at, a, b);
      hn::LoadInterleaved2(d, r1 + 2 * at, c, e);
      auto best = hn::IfThenElse(take(b, a), b, a);
      best = hn::IfThenElse(take(c, best), c, best);
      hn::StoreU(hn::IfThenElse(take(e, best), e, best), d, dst + at);
    });
    for (; ox < out_w; ++ox) {
      T best = r0[2 * ox];
      for (const T v : {r0[2 * ox + 1], r1[2 * ox], r1[2 * ox + 1]})
        best = select_if((v > best) | (v != v), v, best);
      dst[ox] = best;
    }
  }
}

template <typename T>
void max_pool_typed(const T* in, T* values, int64_t* indices, const PoolGeometry& g) {
  using Acc = opmath_t<T>;
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (indices == nullptr && g.kernel_h == 2 && g.kernel_w == 2 && g.stride_h == 2 &&
        g.stride_w == 2 && g.pad_h == 0 && g.pad_w == 0 && g.dilation_h == 1 && g.dilation_w == 1 &&
        g.in_h == 2 * g.out_h && g.in_w == 2 * g.out_w) {
      parallel::parallel_for_if(
          parallel_planes(g), 0, g.planes, [&](int64_t p_begin, int64_t p_end) {
            for (int64_t p = p_begin; p < p_end; ++p)
              max_pool_2x2_plane(in + p * in_plane, values + p * out_plane, g.out_h, g.out_w);
          });
      return;
    }
  }
  parallel::parallel_for_if(parallel_planes(g), 0, g.planes, [&](int64_t p_begin, int64_t p_end) {
    std::vector<Acc> best(static_cast<size_t>(g.out_w));
    for (int64_t p = p_begin; p < p_end; ++p) {
      for (int64_t oy = 0; oy < g.out_h; ++oy) {
        const int64_t o = p * out_plane + oy * g.out_w;
        if (indices != nullptr) {
          max_pool_row<true>(in + p * in_plane, g, oy, best.data(), indices + o);
        } else {
          max_pool_row<false>(in + p * in_plane, g, oy, best.data(), nullptr);
        }
        for (int64_t ox = 0; ox < g.out_w; ++ox) values[o + ox] = static_cast<T>(best[ox]);
      }
    }
  });
}

template <typename T>
void avg_pool_typed(const T* in, T* out, const PoolGeometry& g, bool count_include_pad,
                    std::optional<int64_t> divisor_override) {
  using Acc = opmath_t<T>;
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  parallel::parallel_for_if(parallel_planes(g), 0, g.planes, [&](int64_t p_begin, int64_t p_end) {
    for (int64_t p = p_begin; p < p_end; ++p) {
      const T* src = in + p * in_plane;
      for (int64_t oy = 0; oy < g.out_h; ++oy) {
        int64_t y0 = oy * g.stride_h - g.pad_h;
        int64_t y1 = std::min(y0 + g.kernel_h, g.in_h + g.pad_h);
        const int64_t padded_h = y1 - y0;
        y0 = std::max<int64_t>(y0, 0);
        y1 = std::min(y1, g.in_h);
        for (int64_t ox = 0; ox < g.out_w; ++ox) {
          int64_t x0 = ox * g.stride_w - g.pad_w;
          int64_t x1 = std::min(x0 + g.kernel_w, g.in_w + g.pad_w);
          // The divisor with padding counts the window clipped to the padded input (as PyTorch).
          const int64_t padded_size = padded_h * (x1 - x0);
          x0 = std::max<int64_t>(x0, 0);
          x1 = std::min(x1, g.in_w);
          Acc sum = 0;
          for (int64_t y = y0; y < y1; ++y)
            for (int64_t x = x0; x < x1; ++x) sum += static_cast<Acc>(src[y * g.in_w + x]);
          const int64_t divisor = divisor_override    ? *divisor_override
                                  : count_include_pad ? padded_size
                                                      : (y1 - y0) * (x1 - x0);
          out[p * out_plane + oy * g.out_w + ox] = static_cast<T>(sum / static_cast<Acc>(divisor));
        }
      }
    }
  });
}

template <typename T>
void adaptive_avg_pool_typed(const T* in, T* out, const PoolGeometry& g) {
  using Acc = opmath_t<T>;
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  parallel::parallel_for_if(g.planes > 1 && g.planes * in_plane > 32768, 0, g.planes,
                            [&](int64_t p_begin, int64_t p_end) {
                              for (int64_t p = p_begin; p < p_end; ++p) {
                                const T* src = in + p * in_plane;
                                for (int64_t oy = 0; oy < g.out_h; ++oy) {
                                  const int64_t y0 = oy * g.in_h / g.out_h;
                                  const int64_t y1 = ((oy + 1) * g.in_h + g.out_h - 1) / g.out_h;
                                  for (int64_t ox = 0; ox < g.out_w; ++ox) {
                                    const int64_t x0 = ox * g.in_w / g.out_w;
                                    const int64_t x1 = ((ox + 1) * g.in_w + g.out_w - 1) / g.out_w;
                                    Acc sum = 0;
                                    for (int64_t y = y0; y < y1; ++y)
                                      for (int64_t x = x0; x < x1; ++x)
                                        sum += static_cast<Acc>(src[y * g.in_w + x]);
                                    out[p * out_plane + oy * g.out_w + ox] = static_cast<T>(
                                        sum / static_cast<Acc>((y1 - y0) * (x1 - x0)));
                                  }
                                }
                              }
                            });
}

}  // namespace

void max_pool2d(const Tensor& input, const Tensor& values, const Tensor& indices,
                const PoolGeometry& g) {
  const Tensor in = contiguous(input);
  visit_dtype_in<dtypes::kNumeric>(in.dtype(), "max_pool2d", [&]<typename T>() {
    max_pool_typed<T>(in.data_ptr<T>(), values.data_ptr<T>(),
                      indices.defined() ? indices.data_ptr<int64_t>() : nullptr, g);
  });
}

void avg_pool2d(const Tensor& input, const Tensor& out, const PoolGeometry& g,
                bool count_include_pad, std::optional<int64_t> divisor_override) {
  const Tensor in = contiguous(input);
  visit_dtype_in<dtypes::kFloating>(in.dtype(), "avg_pool2d", [&]<typename T>() {
    avg_pool_typed<T>(in.data_ptr<T>(), out.data_ptr<T>(), g, count_include_pad, divisor_override);
  });
}

void adaptive_avg_pool2d(const Tensor& input, const Tensor& out, const PoolGeometry& g) {
  const Tensor in = contiguous(input);
  visit_dtype_in<dtypes::kFloating>(in.dtype(), "adaptive_avg_pool2d", [&]<typename T>() {
    adaptive_avg_pool_typed<T>(in.data_ptr<T>(), out.data_ptr<T>(), g);
  });
}

}  // namespace kiln::cpu
