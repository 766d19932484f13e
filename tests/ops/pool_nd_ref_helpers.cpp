#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "tests/ops/linalg_ref.h"
#include "tests/ops/pool_nd_ref.h"

namespace kiln::testing {
namespace {

int64_t list_at(IntArrayRef v, size_t i) { return v.size() == 1 ? v[0] : v[i]; }

int64_t pooled(int64_t in, int64_t k, int64_t p, int64_t s, int64_t d, bool ceil_mode) {
  const double span = static_cast<double>(in + 2 * p - d * (k - 1) - 1) / static_cast<double>(s);
  int64_t o = static_cast<int64_t>(ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
  // The last window must start inside the input or its left padding.
  if (ceil_mode && (o - 1) * s >= in + p) --o;
  return o;
}

PoolBox box_of(const Tensor& x, int64_t spatial) {
  PoolBox b;
  b.spatial = spatial;
  b.out_shape = shape_of(x);
  b.planes = 1;
  for (int64_t i = 0; i < x.dim() - spatial; ++i) b.planes *= x.size(i);
  return b;
}

// Position of spatial dim i of `spatial` in the 3-dim box.
size_t slot(int64_t spatial, size_t i) { return static_cast<size_t>(3 - spatial) + i; }

void set_out_shape(PoolBox& b) {
  for (size_t i = 0; i < static_cast<size_t>(b.spatial); ++i)
    b.out_shape[b.out_shape.size() - static_cast<size_t>(b.spatial) + i] =
        b.out[slot(b.spatial, i)];
}

// Visits every output position (plane, od, oh, ow) in row-major order with its flat index.
void for_each_output(const PoolBox& b,
                     const std::function<void(int64_t plane, const std::array<int64_t, 3>& o)>& f) {
  for (int64_t p = 0; p < b.planes; ++p)
    for (int64_t z = 0; z < b.out[0]; ++z)
      for (int64_t y = 0; y < b.out[1]; ++y)
        for (int64_t x = 0; x < b.out[2]; ++x) f(p, {z, y, x});
}

int64_t box_size(const PoolBox& b) { return b.in[0] * b.in[1] * b.in[2]; }

// The adaptive window of output o along dim i: [floor(o * L / n), ceil((o + 1) * L / n)).
std::pair<int64_t, int64_t> adaptive_range(const PoolBox& b, size_t i, int64_t o) {
  const double L = static_cast<double>(b.in[i]), n = static_cast<double>(b.out[i]);
  return {static_cast<int64_t>(std::floor(static_cast<double>(o) * L / n)),
          static_cast<int64_t>(std::ceil(static_cast<double>(o + 1) * L / n))};
}

}  // namespace

PoolBox window_box(const Tensor& x, int64_t spatial, IntArrayRef kernel, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  PoolBox b = box_of(x, spatial);
  for (size_t i = 0; i < static_cast<size_t>(spatial); ++i) {
    const size_t j = slot(spatial, i);
    b.in[j] = x.size(x.dim() - spatial + static_cast<int64_t>(i));
    b.k[j] = list_at(kernel, i);
    b.s[j] = stride.empty() ? b.k[j] : list_at(stride, i);
    b.p[j] = list_at(padding, i);
    b.d[j] = dilation.empty() ? 1 : list_at(dilation, i);
    b.out[j] = pooled(b.in[j], b.k[j], b.p[j], b.s[j], b.d[j], ceil_mode);
  }
  set_out_shape(b);
  return b;
}

PoolBox adaptive_box(const Tensor& x, int64_t spatial, IntArrayRef output_size) {
  PoolBox b = box_of(x, spatial);
  for (size_t i = 0; i < static_cast<size_t>(spatial); ++i) {
    const size_t j = slot(spatial, i);
    b.in[j] = x.size(x.dim() - spatial + static_cast<int64_t>(i));
    b.out[j] = list_at(output_size, i);
  }
  set_out_shape(b);
  return b;
}

std::vector<Tensor> ref_max_pool(const Tensor& x, const PoolBox& b) {
  const std::vector<double> v = x.to_vector<double>();
  std::vector<double> out;
  std::vector<int64_t> idx;
  for_each_output(b, [&](int64_t plane, const std::array<int64_t, 3>& o) {
    double best = -std::numeric_limits<double>::infinity();
    int64_t best_at = -1;
    for (int64_t a = 0; a < b.k[0]; ++a)
      for (int64_t c = 0; c < b.k[1]; ++c)
        for (int64_t e = 0; e < b.k[2]; ++e) {
          const std::array<int64_t, 3> taps{a, c, e};
          std::array<int64_t, 3> pos{};
          bool inside = true;
          for (size_t i = 0; i < 3; ++i) {
            pos[i] = o[i] * b.s[i] - b.p[i] + taps[i] * b.d[i];
            inside = inside && pos[i] >= 0 && pos[i] < b.in[i];
          }
          if (!inside) continue;
          const int64_t at = (pos[0] * b.in[1] + pos[1]) * b.in[2] + pos[2];
          const double val = v[static_cast<size_t>(plane * box_size(b) + at)];
          if (best_at < 0 || val > best || std::isnan(val)) best = val, best_at = at;
        }
    out.push_back(best);
    idx.push_back(best_at);
  });
  return {from_vector(out, b.out_shape).to(x.dtype()), from_vector(idx, b.out_shape)};
}

std::vector<Tensor> ref_avg_pool(const Tensor& x, const PoolBox& b, bool count_include_pad,
                                 std::optional<int64_t> divisor_override) {
  const std::vector<double> v = x.to_vector<double>();
  std::vector<double> out;
  for_each_output(b, [&](int64_t plane, const std::array<int64_t, 3>& o) {
    double sum = 0;
    int64_t inside = 0, padded = 0;
    for (int64_t a = 0; a < b.k[0]; ++a)
      for (int64_t c = 0; c < b.k[1]; ++c)
        for (int64_t e = 0; e < b.k[2]; ++e) {
          const std::array<int64_t, 3> taps{a, c, e};
          std::array<int64_t, 3> pos{};
          bool in_padded = true, in_input = true;
          for (size_t i = 0; i < 3; ++i) {
            pos[i] = o[i] * b.s[i] - b.p[i] + taps[i];
            // Taps past the right padding (ceil_mode) never count.
            in_padded = in_padded && pos[i] < b.in[i] + b.p[i];
            in_input = in_input && pos[i] >= 0 && pos[i] < b.in[i];
          }
          if (!in_padded) continue;
          ++padded;
          if (!in_input) continue;
          ++inside;
          sum += v[static_cast<size_t>(plane * box_size(b) + (pos[0] * b.in[1] + pos[1]) * b.in[2] +
                                       pos[2])];
        }
    const int64_t divisor = divisor_override    ? *divisor_override
                            : count_include_pad ? padded
                                                : inside;
    out.push_back(sum / static_cast<double>(divisor));
  });
  return {from_vector(out, b.out_shape).to(x.dtype())};
}

std::vector<Tensor> ref_adaptive_avg_pool(const Tensor& x, const PoolBox& b) {
  const std::vector<double> v = x.to_vector<double>();
  std::vector<double> out;
  for_each_output(b, [&](int64_t plane, const std::array<int64_t, 3>& o) {
    const auto [z0, z1] = adaptive_range(b, 0, o[0]);
    const auto [y0, y1] = adaptive_range(b, 1, o[1]);
    const auto [x0, x1] = adaptive_range(b, 2, o[2]);
    double sum = 0;
    for (int64_t z = z0; z < z1; ++z)
      for (int64_t y = y0; y < y1; ++y)
        for (int64_t w = x0; w < x1; ++w)
          sum += v[static_cast<size_t>(plane * box_size(b) + (z * b.in[1] + y) * b.in[2] + w)];
    out.push_back(sum / static_cast<double>((z1 - z0) * (y1 - y0) * (x1 - x0)));
  });
  return {from_vector(out, b.out_shape).to(x.dtype())};
}

std::vector<Tensor> ref_adaptive_max_pool(const Tensor& x, const PoolBox& b) {
  const std::vector<double> v = x.to_vector<double>();
  std::vector<double> out;
  std::vector<int64_t> idx;
  for_each_output(b, [&](int64_t plane, const std::array<int64_t, 3>& o) {
    const auto [z0, z1] = adaptive_range(b, 0, o[0]);
    const auto [y0, y1] = adaptive_range(b, 1, o[1]);
    const auto [x0, x1] = adaptive_range(b, 2, o[2]);
    double best = 0;
    int64_t best_at = -1;
    for (int64_t z = z0; z < z1; ++z)
      for (int64_t y = y0; y < y1; ++y)
        for (int64_t w = x0; w < x1; ++w) {
          const int64_t at = (z * b.in[1] + y) * b.in[2] + w;
          const double val = v[static_cast<size_t>(plane * box_size(b) + at)];
          if (best_at < 0 || val > best || std::isnan(val)) best = val, best_at = at;
        }
    out.push_back(best);
    idx.push_back(best_at);
  });
  return {from_vector(out, b.out_shape).to(x.dtype()), from_vector(idx, b.out_shape)};
}

Tensor distinct_values(std::vector<int64_t> shape, std::mt19937_64& rng) {
  const int64_t n = numel_of(shape);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = 0.25 * static_cast<double>(i - n / 2);
  std::shuffle(v.begin(), v.end(), rng);
  return from_vector(v, shape);
}

}  // namespace kiln::testing
