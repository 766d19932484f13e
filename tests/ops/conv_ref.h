// The direct (brute-force) convolution loop shared by the conv, conv_backward and conv_transpose
// OpInfos: float64, no unrolling, no GEMM, independent of the kernels.
//
// A convolution relates an "x side" [N, C_x, *spatial_x] to a "y side" [N, C_y, *spatial_y]
// through a weight [C_y, C_x / groups, *kernel]: y position q and kernel tap t meet x position
// q * stride - padding + t * dilation. A convolution gathers y from x; its input gradient, which
// is what a transposed convolution computes, scatters y into x through the same taps.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "tests/ops/harness.h"

namespace kiln::testing {

// Sizes per spatial dim in (D, H, W) order; a convolution with fewer spatial dims has size 1 and
// no padding in the dims it lacks.
struct ConvRef {
  int64_t n = 1, groups = 1, cx = 0, cy = 0;
  std::array<int64_t, 3> x{1, 1, 1}, y{1, 1, 1}, k{1, 1, 1};
  std::array<int64_t, 3> stride{1, 1, 1}, pad{0, 0, 0}, dilation{1, 1, 1};
};

// A stride/padding/dilation list as (D, H, W): a one-element list applies to every dim.
inline std::array<int64_t, 3> ref_dims(IntArrayRef v, int spatial, int64_t fill) {
  std::array<int64_t, 3> out{fill, fill, fill};
  for (int i = 0; i < spatial; ++i)
    out[3 - spatial + i] = v.size() == 1 ? v[0] : v[static_cast<size_t>(i)];
  return out;
}
// The trailing `spatial` sizes of t as (D, H, W).
inline std::array<int64_t, 3> ref_sizes(const Tensor& t, int spatial) {
  std::array<int64_t, 3> out{1, 1, 1};
  for (int i = 0; i < spatial; ++i) out[3 - spatial + i] = t.size(t.dim() - spatial + i);
  return out;
}

// Calls f(x index, y index, weight index) for every (sample, y channel, y position, x channel of
// the group, kernel tap) whose x position lies inside x. Indices are row-major offsets into
// contiguous x, y and weight.
template <typename F>
void for_each_tap(const ConvRef& g, F&& f) {
  const int64_t cxg = g.cx / g.groups, cyg = g.cy / g.groups;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t o = 0; o < g.cy; ++o)
      for (int64_t qd = 0; qd < g.y[0]; ++qd)
        for (int64_t qh = 0; qh < g.y[1]; ++qh)
          for (int64_t qw = 0; qw < g.y[2]; ++qw) {
            const int64_t yi = (((n * g.cy + o) * g.y[0] + qd) * g.y[1] + qh) * g.y[2] + qw;
            for (int64_t c = 0; c < cxg; ++c)
              for (int64_t td = 0; td < g.k[0]; ++td)
                for (int64_t th = 0; th < g.k[1]; ++th)
                  for (int64_t tw = 0; tw < g.k[2]; ++tw) {
                    const int64_t pd = qd * g.stride[0] - g.pad[0] + td * g.dilation[0];
                    const int64_t ph = qh * g.stride[1] - g.pad[1] + th * g.dilation[1];
                    const int64_t pw = qw * g.stride[2] - g.pad[2] + tw * g.dilation[2];
                    if (pd < 0 || pd >= g.x[0] || ph < 0 || ph >= g.x[1] || pw < 0 || pw >= g.x[2])
                      continue;
                    const int64_t ci = (o / cyg) * cxg + c;
                    const int64_t xi =
                        (((n * g.cx + ci) * g.x[0] + pd) * g.x[1] + ph) * g.x[2] + pw;
                    const int64_t wi = (((o * cxg + c) * g.k[0] + td) * g.k[1] + th) * g.k[2] + tw;
                    f(static_cast<size_t>(xi), static_cast<size_t>(yi), static_cast<size_t>(wi));
                  }
          }
}

// Adds bias[c] to every position of channel c of v [n, channels, positions].
inline void add_bias_ref(std::vector<double>& v, const std::vector<double>& bias, int64_t n,
                         int64_t channels, int64_t positions) {
  for (int64_t i = 0; i < n * channels; ++i)
    for (int64_t p = 0; p < positions; ++p)
      v[static_cast<size_t>(i * positions + p)] += bias[static_cast<size_t>(i % channels)];
}

// [N?, C, *spatial] with the last `spatial` dims of (D, H, W).
inline std::vector<int64_t> conv_shape_ref(bool batched, int64_t n, int64_t c,
                                           const std::array<int64_t, 3>& sizes, int spatial) {
  std::vector<int64_t> shape;
  if (batched) shape.push_back(n);
  shape.push_back(c);
  for (int i = 3 - spatial; i < 3; ++i) shape.push_back(sizes[static_cast<size_t>(i)]);
  return shape;
}

}  // namespace kiln::testing
