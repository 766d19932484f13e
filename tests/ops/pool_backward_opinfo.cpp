// OpInfos for the pooling gradients: max_pool2d_backward, max_pool2d_with_indices_backward,
// avg_pool2d_backward, adaptive_avg_pool2d_backward. References visit every output window in
// float64 and hand its grad_output element to the input positions the window read (the recorded
// argmax for max, an equal share of the divisor for averages).
#include <algorithm>
#include <cmath>

#include "tests/ops/linalg_ref.h"

namespace kiln::testing {
namespace {

using Shape = std::vector<int64_t>;

IValue ints(Shape v) { return IValue(std::move(v)); }

Tensor mk(Shape s, ScalarType dt, std::mt19937_64& rng, Layout layout = Layout::Contiguous) {
  return make_tensor(s, dt, rng, -5, 5, layout);
}

Tensor zero_grad_of(const Tensor& self, const std::vector<double>& g) {
  return from_vector(g, shape_of(self)).to(self.dtype());
}

// ---- max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
//                                       dilation, ceil_mode, indices) ----

std::vector<Tensor> max_backward_reference(const Stack& a) {
  const Tensor& self = a[1].tensor();
  const std::vector<double> dy = a[0].tensor().to_vector<double>();
  const std::vector<int64_t> idx = a[7].tensor().to_vector<int64_t>();
  const int64_t plane = self.size(-2) * self.size(-1);
  const int64_t out_plane = a[0].tensor().size(-2) * a[0].tensor().size(-1);
  std::vector<double> g(static_cast<size_t>(self.numel()), 0.0);
  for (size_t o = 0; o < dy.size(); ++o)
    g[static_cast<size_t>(static_cast<int64_t>(o) / out_plane * plane + idx[o])] += dy[o];
  return {zero_grad_of(self, g)};
}

// A sample: the forward's own indices for a random input, and a random grad_output.
SampleInput max_sample(Tensor self, Shape k, Shape st, Shape p, Shape d, bool ceil,
                       std::mt19937_64& rng, std::string description,
                       Layout grad_layout = Layout::Contiguous) {
  const Tensor indices = std::get<1>(max_pool2d_with_indices(self, k, st, p, d, ceil));
  Tensor dy = make_tensor(indices.sizes(), self.dtype(), rng, -2, 2, grad_layout);
  return {{dy, self, ints(k), ints(st), ints(p), ints(d), ceil, indices}, std::move(description)};
}

std::vector<SampleInput> max_backward_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back(max_sample(mk({2, 3, 6, 7}, dt, rng), {2}, {}, {0}, {1}, false, rng, "2x2"));
  s.push_back(max_sample(mk({2, 3, 7, 7}, dt, rng), {3}, {1}, {1}, {1}, false, rng,
                         "3x3, stride 1 (overlapping windows accumulate)"));
  s.push_back(max_sample(mk({2, 3, 7, 8}, dt, rng), {3}, {2}, {1}, {2}, true, rng,
                         "dilation 2, ceil_mode"));
  s.push_back(max_sample(mk({3, 5, 6}, dt, rng), {2}, {1}, {0}, {1}, false, rng,
                         "unbatched, non-contiguous grad_output", Layout::NonContiguous));
  s.push_back(max_sample(mk({16, 8, 12, 12}, dt, rng), {2}, {}, {0}, {1}, false, rng,
                         "128 planes (parallel)"));
  s.push_back(max_sample(mk({0, 3, 6, 6}, dt, rng), {2}, {}, {0}, {1}, false, rng, "zero batch"));
  return s;
}

std::vector<SampleInput> max_backward_grad_samples(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back(max_sample(mk({1, 2, 4, 4}, kFloat64, rng), {2}, {}, {0}, {1}, false, rng, "2x2"));
  s.push_back(max_sample(mk({1, 1, 5, 5}, kFloat64, rng), {3}, {1}, {1}, {1}, false, rng,
                         "3x3, stride 1, padding 1"));
  return s;
}

std::vector<ErrorCase> max_backward_errors() {
  const Tensor x = zeros({1, 2, 4, 4}), dy = zeros({1, 2, 2, 2});
  const Tensor idx = zeros({1, 2, 2, 2}, kInt64);
  auto c = [](Tensor dy, Tensor x, Tensor idx) {
    return Stack{dy, x, ints({2}), ints({}), ints({0}), ints({1}), false, idx};
  };
  return {
      {c(zeros({1, 2, 3, 3}), x, idx), ErrorKind::Shape, "grad_output 3x3, pooled 2x2"},
      {c(dy, x, zeros({1, 2, 2, 3}, kInt64)), ErrorKind::Shape, "indices shape"},
      {c(dy, x, zeros({1, 2, 2, 2}, kInt32)), ErrorKind::DType, "int32 indices"},
      {c(dy, x, full({1, 2, 2, 2}, 16, kInt64)), ErrorKind::Index, "index 16 outside a 4x4 plane"},
      {c(dy, x, full({1, 2, 2, 2}, -1, kInt64)), ErrorKind::Index, "negative index"},
      {c(zeros({1, 2, 2, 2}, kFloat64), x, idx), ErrorKind::DType,
       "grad_output float64, self float32"},
      {c(zeros({1, 2, 2, 2}, kInt32), zeros({1, 2, 4, 4}, kInt32), idx), ErrorKind::DType, "int32"},
      {{dy, x, ints({0}), ints({}), ints({0}), ints({1}), false, idx},
       ErrorKind::Value,
       "kernel 0"}};
}

// ---- max_pool2d_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode):
// the argmax of each window is found in self (first largest in row-major window order, the last
// NaN if any) ----

std::vector<Tensor> max_rescan_reference(const Stack& a) {
  const Tensor& self = a[1].tensor();
  const PoolWindow g = pool_window(a, 1, true, a[6].to_bool());
  const std::vector<double> x = self.to_vector<double>(), dy = a[0].tensor().to_vector<double>();
  std::vector<double> gi(x.size(), 0.0);
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        int64_t best = -1;
        for (int64_t i = 0; i < g.kh; ++i)
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t y = oy * g.sh - g.ph + i * g.dh, xx = ox * g.sw - g.pw + j * g.dw;
            if (y < 0 || y >= g.h || xx < 0 || xx >= g.w) continue;
            const int64_t at = p * g.h * g.w + y * g.w + xx;
            const double v = x[static_cast<size_t>(at)];
            const bool best_nan = best >= 0 && std::isnan(x[static_cast<size_t>(best)]);
            if (best < 0 || std::isnan(v) || (!best_nan && v > x[static_cast<size_t>(best)]))
              best = at;
          }
        if (best >= 0)
          gi[static_cast<size_t>(best)] += dy[static_cast<size_t>((p * g.oh + oy) * g.ow + ox)];
      }
  return {zero_grad_of(self, gi)};
}

SampleInput max_rescan_sample(Tensor self, Shape k, Shape st, Shape p, Shape d, bool ceil,
                              std::mt19937_64& rng, std::string description,
                              Layout grad_layout = Layout::Contiguous) {
  const Tensor out = max_pool2d(self, k, st, p, d, ceil);
  Tensor dy = make_tensor(out.sizes(), self.dtype(), rng, -2, 2, grad_layout);
  return {{dy, self, ints(k), ints(st), ints(p), ints(d), ceil}, std::move(description)};
}

// Values 0.25 apart in random order: no ties within a window, even after a finite-difference
// step.
Tensor distinct(Shape shape, std::mt19937_64& rng) {
  const int64_t n = numel_of(shape);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = 0.25 * static_cast<double>(i - n / 2);
  std::shuffle(v.begin(), v.end(), rng);
  return from_vector(v, shape);
}

std::vector<SampleInput> max_rescan_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back(max_rescan_sample(mk({2, 3, 6, 7}, dt, rng), {2}, {}, {0}, {1}, false, rng, "2x2"));
  s.push_back(max_rescan_sample(mk({2, 3, 7, 7}, dt, rng), {3}, {1}, {1}, {1}, false, rng,
                                "3x3, stride 1, padding 1 (overlapping windows accumulate)"));
  s.push_back(max_rescan_sample(mk({2, 3, 7, 8}, dt, rng), {3}, {2}, {1}, {2}, true, rng,
                                "dilation 2, ceil_mode"));
  s.push_back(max_rescan_sample(mk({2, 3, 7, 9}, dt, rng), {2, 3}, {1, 3}, {1}, {1}, false, rng,
                                "stride (1, 3)"));
  // Windows tiling the input (stride = kernel): written row by row; exact 2x2 tilings of float
  // and double take the vector path (a body of whole vectors and a scalar tail).
  s.push_back(max_rescan_sample(mk({2, 3, 7, 9}, dt, rng), {3}, {}, {0}, {1}, false, rng,
                                "3x3 tiles, uncovered last row and column"));
  s.push_back(max_rescan_sample(mk({2, 3, 7, 9}, dt, rng), {2}, {2}, {0}, {1}, true, rng,
                                "2x2 tiles, ceil_mode: clipped last windows"));
  s.push_back(max_rescan_sample(mk({2, 3, 4, 22}, dt, rng), {2}, {}, {0}, {1}, false, rng,
                                "2x2 tiles, exact: vector body and tail"));
  s.push_back(max_rescan_sample(full({1, 2, 4, 34}, 1.5, dt), {2}, {}, {0}, {1}, false, rng,
                                "2x2 tiles, all equal: the first position of each window"));
  // Note [Short pooled rows]: pooled widths 7 and 14, the demo CNN's.
  s.push_back(max_rescan_sample(mk({2, 3, 14, 14}, dt, rng), {2}, {}, {0}, {1}, false, rng,
                                "2x2 tiles, pooled rows of 7: a 4-lane vector and a tail"));
  s.push_back(max_rescan_sample(mk({2, 3, 4, 28}, dt, rng), {2}, {}, {0}, {1}, false, rng,
                                "2x2 tiles, pooled rows of 14: 8 lanes, 4 lanes and a tail"));
  s.push_back(max_rescan_sample(mk({3, 5, 6}, dt, rng), {2}, {1}, {0}, {1}, false, rng,
                                "unbatched, non-contiguous grad_output", Layout::NonContiguous));
  s.push_back(max_rescan_sample(mk({2, 6, 5, 3}, dt, rng).permute({0, 3, 1, 2}), {2}, {}, {0}, {1},
                                false, rng, "channels-last input"));
  s.push_back(max_rescan_sample(full({1, 2, 4, 4}, 1.5, dt), {2}, {1}, {0}, {1}, false, rng,
                                "all equal: the first position of each window"));
  s.push_back(max_rescan_sample(mk({16, 8, 12, 12}, dt, rng), {2}, {}, {0}, {1}, false, rng,
                                "128 planes (parallel)"));
  s.push_back(
      max_rescan_sample(mk({0, 3, 6, 6}, dt, rng), {2}, {}, {0}, {1}, false, rng, "zero batch"));
  if (is_floating(dt)) {
    Tensor nan = from_vector(std::vector<double>{1, NAN, 3, 4, 5, 6, NAN, NAN, 9, 10, 11, 12, 13,
                                                 14, 15, -INFINITY},
                             Shape{1, 1, 4, 4})
                     .to(dt);
    s.push_back(
        max_rescan_sample(nan, {2}, {}, {0}, {1}, false, rng, "NaN: the (last) NaN's position"));
    // Two rows of 20: ten 2x2 windows, NaNs and ties in both the vector body and the tail.
    std::vector<double> wide(40);
    for (size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<double>((i * 7) % 5);
    for (size_t i : {1, 22, 4, 5, 25, 38, 39, 18}) wide[i] = NAN;
    wide[8] = wide[9] = wide[28] = wide[29] = -INFINITY;
    s.push_back(max_rescan_sample(from_vector(wide, Shape{1, 1, 2, 20}).to(dt), {2}, {}, {0}, {1},
                                  false, rng, "2x2 tiles: NaN, -inf and ties across 20 columns"));
    std::vector<double> row28(56);
    for (size_t i = 0; i < row28.size(); ++i) row28[i] = static_cast<double>((i * 7) % 5);
    for (size_t i : {1, 17, 20, 21, 45, 52, 53, 26}) row28[i] = NAN;
    row28[24] = row28[25] = row28[50] = row28[51] = -INFINITY;
    s.push_back(max_rescan_sample(from_vector(row28, Shape{1, 1, 2, 28}).to(dt), {2}, {}, {0}, {1},
                                  false, rng, "2x2 tiles: NaN, -inf and ties across 14 columns"));
  }
  return s;
}

std::vector<SampleInput> max_rescan_grad_samples(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back(max_rescan_sample(distinct({1, 2, 4, 4}, rng), {2}, {}, {0}, {1}, false, rng, "2x2"));
  s.push_back(max_rescan_sample(distinct({1, 1, 5, 5}, rng), {3}, {1}, {1}, {1}, false, rng,
                                "3x3, stride 1, padding 1"));
  return s;
}

std::vector<ErrorCase> max_rescan_errors() {
  const Tensor x = zeros({1, 2, 4, 4}), dy = zeros({1, 2, 2, 2});
  auto c = [](Tensor dy, Tensor x, Shape k, Shape p) {
    return Stack{dy, x, ints(k), ints({}), ints(p), ints({1}), false};
  };
  return {{c(zeros({1, 2, 3, 3}), x, {2}, {0}), ErrorKind::Shape, "grad_output 3x3, pooled 2x2"},
          {c(dy, x, {0}, {0}), ErrorKind::Value, "kernel 0"},
          {c(dy, x, {2}, {2}), ErrorKind::Value, "padding 2 with kernel 2"},
          {c(dy, zeros({4, 4}), {2}, {0}), ErrorKind::Shape, "2-D input"},
          {c(zeros({1, 2, 2, 2}, kFloat64), x, {2}, {0}), ErrorKind::DType, "mixed dtypes"},
          {c(zeros({1, 2, 2, 2}, kInt32), zeros({1, 2, 4, 4}, kInt32), {2}, {0}), ErrorKind::DType,
           "int32"}};
}

// ---- avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
//                         count_include_pad, divisor_override) ----

std::vector<Tensor> avg_backward_reference(const Stack& a) {
  const Tensor& self = a[1].tensor();
  const PoolWindow g = pool_window(a, 1, false, a[5].to_bool());
  const bool include_pad = a[6].to_bool();
  const std::optional<int64_t> divisor = a[7].optional_int();
  const std::vector<double> dy = a[0].tensor().to_vector<double>();
  std::vector<double> gi(static_cast<size_t>(self.numel()), 0.0);
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        // The forward's divisor: window positions inside the padded input, or inside the input.
        int64_t inside = 0, padded = 0;
        for (int64_t i = 0; i < g.kh; ++i)
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t y = oy * g.sh - g.ph + i, x = ox * g.sw - g.pw + j;
            if (y >= g.h + g.ph || x >= g.w + g.pw) continue;
            ++padded;
            if (y >= 0 && y < g.h && x >= 0 && x < g.w) ++inside;
          }
        const int64_t d = divisor ? *divisor : include_pad ? padded : inside;
        const double share =
            dy[static_cast<size_t>((p * g.oh + oy) * g.ow + ox)] / static_cast<double>(d);
        for (int64_t i = 0; i < g.kh; ++i)
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t y = oy * g.sh - g.ph + i, x = ox * g.sw - g.pw + j;
            if (y < 0 || y >= g.h || x < 0 || x >= g.w) continue;
            gi[static_cast<size_t>(p * g.h * g.w + y * g.w + x)] += share;
          }
      }
  return {zero_grad_of(self, gi)};
}

SampleInput avg_sample(Tensor self, Shape k, Shape st, Shape p, bool ceil, bool include,
                       std::optional<int64_t> div, std::mt19937_64& rng, std::string description,
                       Layout grad_layout = Layout::Contiguous) {
  const Tensor out = avg_pool2d(self, k, st, p, ceil, include, div);
  Tensor dy = make_tensor(out.sizes(), self.dtype(), rng, -2, 2, grad_layout);
  return {{dy, self, ints(k), ints(st), ints(p), ceil, include, div}, std::move(description)};
}

std::vector<SampleInput> avg_backward_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back(
      avg_sample(mk({2, 3, 6, 7}, dt, rng), {2}, {}, {0}, false, true, std::nullopt, rng, "2x2"));
  s.push_back(avg_sample(mk({2, 3, 7, 7}, dt, rng), {3}, {2}, {1}, false, true, std::nullopt, rng,
                         "padding, counted"));
  s.push_back(avg_sample(mk({2, 3, 7, 7}, dt, rng), {3}, {1}, {1}, false, false, std::nullopt, rng,
                         "padding, not counted, stride 1"));
  s.push_back(avg_sample(mk({2, 3, 7, 8}, dt, rng), {3, 2}, {2}, {1}, true, true, std::nullopt, rng,
                         "ceil_mode, counted"));
  s.push_back(avg_sample(mk({2, 3, 7, 8}, dt, rng), {3, 2}, {2}, {1}, true, false, std::nullopt,
                         rng, "ceil_mode, not counted"));
  s.push_back(avg_sample(mk({2, 3, 6, 6}, dt, rng), {2}, {}, {1}, false, true, int64_t{3}, rng,
                         "divisor_override 3"));
  s.push_back(avg_sample(mk({3, 5, 6}, dt, rng), {2}, {1}, {0}, false, true, std::nullopt, rng,
                         "unbatched, non-contiguous grad_output", Layout::NonContiguous));
  s.push_back(avg_sample(mk({16, 8, 12, 12}, dt, rng), {3}, {1}, {1}, false, true, std::nullopt,
                         rng, "128 planes (parallel)"));
  s.push_back(avg_sample(mk({0, 3, 6, 6}, dt, rng), {2}, {}, {0}, false, true, std::nullopt, rng,
                         "zero batch"));
  return s;
}

std::vector<SampleInput> avg_backward_grad_samples(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back(avg_sample(mk({1, 2, 4, 4}, kFloat64, rng), {2}, {}, {0}, false, true, std::nullopt,
                         rng, "2x2"));
  s.push_back(avg_sample(mk({1, 1, 5, 6}, kFloat64, rng), {3, 2}, {2}, {1}, true, false,
                         std::nullopt, rng, "ceil_mode, padding not counted"));
  s.push_back(avg_sample(mk({1, 2, 4, 4}, kFloat64, rng), {2}, {}, {1}, false, true, int64_t{3},
                         rng, "divisor_override 3"));
  return s;
}

std::vector<ErrorCase> avg_backward_errors() {
  const Tensor x = zeros({1, 2, 4, 4}), dy = zeros({1, 2, 2, 2});
  auto c = [](Tensor dy, Tensor x, Shape k, Shape p, IValue div) {
    return Stack{dy, x, ints(k), ints({}), ints(p), false, true, div};
  };
  return {{c(zeros({1, 2, 3, 3}), x, {2}, {0}, IValue()), ErrorKind::Shape,
           "grad_output 3x3, pooled 2x2"},
          {c(zeros({2, 2, 2}), x, {2}, {0}, IValue()), ErrorKind::Shape, "grad_output rank"},
          {c(dy, x, {2}, {0}, int64_t{0}), ErrorKind::Value, "divisor_override 0"},
          {c(dy, x, {2}, {2}, IValue()), ErrorKind::Value, "padding 2 with kernel 2"},
          {c(dy.to(kFloat64), x, {2}, {0}, IValue()), ErrorKind::DType, "mixed dtypes"},
          {c(zeros({1, 2, 2, 2}, kInt32), zeros({1, 2, 4, 4}, kInt32), {2}, {0}, IValue()),
           ErrorKind::DType, "int32"}};
}

// ---- adaptive_avg_pool2d_backward(grad_output, self) ----

std::vector<Tensor> adaptive_backward_reference(const Stack& a) {
  const Tensor& self = a[1].tensor();
  const Tensor& grad_output = a[0].tensor();
  const int64_t h = self.size(-2), w = self.size(-1), planes = self.numel() / (h * w);
  const int64_t oh = grad_output.size(-2), ow = grad_output.size(-1);
  const std::vector<double> dy = grad_output.to_vector<double>();
  std::vector<double> gi(static_cast<size_t>(self.numel()), 0.0);
  auto start = [](int64_t i, int64_t in, int64_t out) {
    return static_cast<int64_t>(std::floor(static_cast<double>(i * in) / static_cast<double>(out)));
  };
  auto end = [](int64_t i, int64_t in, int64_t out) {
    return static_cast<int64_t>(
        std::ceil(static_cast<double>((i + 1) * in) / static_cast<double>(out)));
  };
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        const int64_t y0 = start(oy, h, oh), y1 = end(oy, h, oh);
        const int64_t x0 = start(ox, w, ow), x1 = end(ox, w, ow);
        const double share = dy[static_cast<size_t>((p * oh + oy) * ow + ox)] /
                             static_cast<double>((y1 - y0) * (x1 - x0));
        for (int64_t y = y0; y < y1; ++y)
          for (int64_t x = x0; x < x1; ++x) gi[static_cast<size_t>(p * h * w + y * w + x)] += share;
      }
  return {zero_grad_of(self, gi)};
}

SampleInput adaptive_sample(Tensor self, Shape out, std::mt19937_64& rng, std::string description,
                            Layout grad_layout = Layout::Contiguous) {
  Shape dy_shape = shape_of(self);
  dy_shape[dy_shape.size() - 2] = out[0];
  dy_shape[dy_shape.size() - 1] = out[1];
  return {{make_tensor(dy_shape, self.dtype(), rng, -2, 2, grad_layout), self},
          std::move(description)};
}

std::vector<SampleInput> adaptive_backward_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back(adaptive_sample(mk({2, 3, 7, 9}, dt, rng), {3, 4}, rng, "7x9 -> 3x4 (overlapping)"));
  s.push_back(adaptive_sample(mk({2, 3, 6, 8}, dt, rng), {1, 1}, rng, "global average"));
  s.push_back(adaptive_sample(mk({2, 3, 4, 4}, dt, rng), {6, 6}, rng, "upsampling 4 -> 6"));
  s.push_back(adaptive_sample(mk({3, 5, 6}, dt, rng), {2, 3}, rng,
                              "unbatched, non-contiguous grad_output", Layout::NonContiguous));
  s.push_back(adaptive_sample(mk({16, 8, 12, 12}, dt, rng), {5, 5}, rng, "128 planes (parallel)"));
  s.push_back(adaptive_sample(mk({0, 3, 6, 6}, dt, rng), {2, 2}, rng, "zero batch"));
  return s;
}

std::vector<SampleInput> adaptive_backward_grad_samples(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back(adaptive_sample(mk({1, 2, 5, 5}, kFloat64, rng), {2, 3}, rng, "5x5 -> 2x3"));
  s.push_back(adaptive_sample(mk({1, 1, 3, 3}, kFloat64, rng), {4, 4}, rng, "upsampling 3 -> 4"));
  return s;
}

std::vector<ErrorCase> adaptive_backward_errors() {
  return {{{zeros({1, 2, 2}), zeros({1, 2, 4, 4})}, ErrorKind::Shape, "grad_output rank"},
          {{zeros({1, 3, 2, 2}), zeros({1, 2, 4, 4})}, ErrorKind::Shape, "channels differ"},
          {{zeros({1, 2}), zeros({4, 4})}, ErrorKind::Shape, "2-D input"},
          {{zeros({1, 2, 2, 2}), zeros({1, 2, 0, 4})}, ErrorKind::Shape, "zero height"},
          {{zeros({1, 2, 2, 2}, kFloat64), zeros({1, 2, 4, 4})}, ErrorKind::DType, "mixed dtypes"},
          {{zeros({1, 2, 2, 2}, kInt64), zeros({1, 2, 4, 4}, kInt64)}, ErrorKind::DType, "int64"}};
}

const bool registered = [] {
  register_op_info({.name = "max_pool2d_backward",
                    .samples = max_rescan_samples,
                    .reference = max_rescan_reference,
                    .error_cases = max_rescan_errors,
                    .grad_samples = max_rescan_grad_samples});
  register_op_info({.name = "max_pool2d_with_indices_backward",
                    .samples = max_backward_samples,
                    .reference = max_backward_reference,
                    .error_cases = max_backward_errors,
                    .grad_samples = max_backward_grad_samples});
  register_op_info({.name = "avg_pool2d_backward",
                    .samples = avg_backward_samples,
                    .reference = avg_backward_reference,
                    .error_cases = avg_backward_errors,
                    .grad_samples = avg_backward_grad_samples});
  register_op_info({.name = "adaptive_avg_pool2d_backward",
                    .samples = adaptive_backward_samples,
                    .reference = adaptive_backward_reference,
                    .error_cases = adaptive_backward_errors,
                    .grad_samples = adaptive_backward_grad_samples});
  return true;
}();

}  // namespace
}  // namespace kiln::testing
