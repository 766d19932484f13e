// OpInfos for max_pool2d (+ _with_indices), avg_pool2d and adaptive_avg_pool2d. References are
// direct loops over each output window in float64.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tests/ops/linalg_ref.h"

namespace kiln::testing {
namespace {

using Shape = std::vector<int64_t>;

int64_t at(IntArrayRef v, size_t i) { return v.size() == 1 ? v[0] : v[i]; }

using Window = PoolWindow;

Window window(const Stack& a, bool has_dilation, bool ceil_mode) {
  return pool_window(a, 0, has_dilation, ceil_mode);
}

Shape pooled(const Tensor& x, int64_t oh, int64_t ow) { return pooled_shape(x, oh, ow); }

std::vector<Tensor> max_reference(const Stack& a) {
  const Tensor& x = a[0].tensor();
  const Window g = window(a, true, a[5].to_bool());
  const std::vector<double> v = x.to_vector<double>();
  std::vector<double> out;
  std::vector<int64_t> idx;
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        double best = -std::numeric_limits<double>::infinity();
        int64_t best_i = -1;
        for (int64_t i = 0; i < g.kh; ++i)
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t y = oy * g.sh - g.ph + i * g.dh, xx = ox * g.sw - g.pw + j * g.dw;
            if (y < 0 || y >= g.h || xx < 0 || xx >= g.w) continue;
            const double val = v[static_cast<size_t>(p * g.h * g.w + y * g.w + xx)];
            if (best_i < 0 || val > best || std::isnan(val)) best = val, best_i = y * g.w + xx;
          }
        out.push_back(best);
        idx.push_back(best_i);
      }
  const Shape shape = pooled(x, g.oh, g.ow);
  return {from_vector(out, shape).to(x.dtype()), from_vector(idx, shape)};
}

std::vector<Tensor> avg_reference(const Stack& a) {
  const Tensor& x = a[0].tensor();
  const Window g = window(a, false, a[4].to_bool());
  const bool include_pad = a[5].to_bool();
  const std::optional<int64_t> divisor = a[6].optional_int();
  const std::vector<double> v = x.to_vector<double>();
  std::vector<double> out;
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        double sum = 0;
        int64_t inside = 0, padded = 0;
        for (int64_t i = 0; i < g.kh; ++i)
          for (int64_t j = 0; j < g.kw; ++j) {
            const int64_t y = oy * g.sh - g.ph + i, xx = ox * g.sw - g.pw + j;
            // Window positions past the right/bottom padding (ceil_mode) never count.
            if (y >= g.h + g.ph || xx >= g.w + g.pw) continue;
            ++padded;
            if (y < 0 || y >= g.h || xx < 0 || xx >= g.w) continue;
            ++inside;
            sum += v[static_cast<size_t>(p * g.h * g.w + y * g.w + xx)];
          }
        const int64_t d = divisor ? *divisor : include_pad ? padded : inside;
        out.push_back(sum / static_cast<double>(d));
      }
  return {from_vector(out, pooled(x, g.oh, g.ow)).to(x.dtype())};
}

std::vector<Tensor> adaptive_reference(const Stack& a) {
  const Tensor& x = a[0].tensor();
  const int64_t h = x.size(-2), w = x.size(-1), planes = x.numel() / (h * w);
  IntArrayRef os = a[1].int_list();
  const int64_t oh = at(os, 0), ow = at(os, 1);
  const std::vector<double> v = x.to_vector<double>();
  std::vector<double> out;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        const int64_t y0 = static_cast<int64_t>(std::floor(static_cast<double>(oy * h) / oh));
        const int64_t y1 = static_cast<int64_t>(std::ceil(static_cast<double>((oy + 1) * h) / oh));
        const int64_t x0 = static_cast<int64_t>(std::floor(static_cast<double>(ox * w) / ow));
        const int64_t x1 = static_cast<int64_t>(std::ceil(static_cast<double>((ox + 1) * w) / ow));
        double sum = 0;
        for (int64_t y = y0; y < y1; ++y)
          for (int64_t xx = x0; xx < x1; ++xx)
            sum += v[static_cast<size_t>(p * h * w + y * w + xx)];
        out.push_back(sum / static_cast<double>((y1 - y0) * (x1 - x0)));
      }
  return {from_vector(out, pooled(x, oh, ow)).to(x.dtype())};
}

IValue ints(Shape v) { return IValue(std::move(v)); }

Tensor mk(Shape s, ScalarType dt, std::mt19937_64& rng, Layout layout = Layout::Contiguous) {
  return make_tensor(s, dt, rng, -20, 20, layout);
}

std::vector<SampleInput> max_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto add = [&](Tensor x, Shape k, Shape st, Shape p, Shape d, bool ceil, std::string desc) {
    s.push_back({{x, ints(k), ints(st), ints(p), ints(d), ceil}, desc});
  };
  add(mk({2, 3, 6, 7}, dt, rng), {2}, {}, {0}, {1}, false, "2x2, default stride");
  add(mk({2, 3, 7, 7}, dt, rng), {3, 2}, {2, 1}, {1, 1}, {1}, false,
      "3x2, stride (2, 1), padding 1");
  add(mk({2, 3, 7, 8}, dt, rng), {3}, {2}, {1}, {2}, false, "dilation 2");
  add(mk({2, 3, 7, 8}, dt, rng), {2}, {2}, {0}, {1}, true, "ceil_mode");
  add(mk({1, 2, 6, 6}, dt, rng), {3}, {2}, {1}, {1}, true, "ceil_mode with padding");
  add(mk({3, 5, 6}, dt, rng), {2}, {1}, {0}, {1}, false, "unbatched");
  add(mk({2, 6, 5, 3}, dt, rng).permute({0, 3, 1, 2}), {2}, {}, {0}, {1}, false,
      "channels-last input");
  add(mk({0, 3, 6, 7}, dt, rng), {2}, {}, {0}, {1}, false, "zero batch");
  // Exact 2x2 tilings take a vector path for float and double: a body of whole vectors and a tail.
  add(mk({2, 3, 4, 22}, dt, rng), {2}, {}, {0}, {1}, false,
      "2x2 tiles, exact: vector body and tail");
  // Note [Short pooled rows]: pooled widths 7 (a 4-lane vector and a tail) and 14 (a full vector,
  // a 4-lane one and a tail), the demo CNN's.
  add(mk({2, 3, 14, 14}, dt, rng), {2}, {}, {0}, {1}, false, "2x2 tiles, pooled rows of 7");
  add(mk({2, 3, 4, 28}, dt, rng), {2}, {}, {0}, {1}, false, "2x2 tiles, pooled rows of 14");
  if (is_floating(dt)) {
    std::vector<double> row28(56);
    for (size_t i = 0; i < row28.size(); ++i) row28[i] = static_cast<double>((i * 7) % 5);
    for (size_t i : {1, 17, 20, 21, 45, 52, 53, 26}) row28[i] = NAN;
    row28[24] = row28[25] = row28[50] = row28[51] = -INFINITY;
    add(from_vector(row28, Shape{1, 1, 2, 28}).to(dt), {2}, {}, {0}, {1}, false,
        "2x2 tiles: NaN, -inf and ties across the 8-lane, 4-lane and scalar parts of 14 columns");
    std::vector<double> wide(40);
    for (size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<double>((i * 7) % 5);
    for (size_t i : {1, 22, 4, 5, 25, 38, 39, 18}) wide[i] = NAN;
    wide[8] = wide[9] = wide[28] = wide[29] = -INFINITY;
    add(from_vector(wide, Shape{1, 1, 2, 20}).to(dt), {2}, {}, {0}, {1}, false,
        "2x2 tiles: NaN, -inf and ties across 20 columns");
    Tensor nan = from_vector(std::vector<double>{1, NAN, 3, 4, 5, 6, NAN, 8, 9, 10, 11, 12, 13, 14,
                                                 15, -INFINITY},
                             Shape{1, 1, 4, 4})
                     .to(dt);
    add(nan, {2}, {}, {0}, {1}, false, "NaN propagates");
  }
  return s;
}

std::vector<ErrorCase> max_errors() {
  const Tensor x = zeros({1, 2, 5, 5});
  auto c = [&](Tensor t, Shape k, Shape st, Shape p, Shape d) {
    return Stack{t, ints(k), ints(st), ints(p), ints(d), false};
  };
  return {{c(x, {0}, {}, {0}, {1}), ErrorKind::Value, "kernel 0"},
          {c(x, {2}, {0}, {0}, {1}), ErrorKind::Value, "stride 0"},
          {c(x, {2}, {}, {2}, {1}), ErrorKind::Value, "padding more than half the kernel"},
          {c(x, {2}, {}, {0}, {0}), ErrorKind::Value, "dilation 0"},
          {c(x, {2, 2, 2}, {}, {0}, {1}), ErrorKind::Value, "three kernel sizes"},
          {c(x, {6}, {}, {0}, {1}), ErrorKind::Shape, "kernel larger than input"},
          {c(zeros({5, 5}), {2}, {}, {0}, {1}), ErrorKind::Shape, "2-D input"},
          {c(zeros({1, 0, 5, 5}), {2}, {}, {0}, {1}), ErrorKind::Shape, "zero channels"},
          {c(zeros({1, 2, 5, 5}, kBool), {2}, {}, {0}, {1}), ErrorKind::DType, "bool"}};
}

std::vector<SampleInput> avg_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto add = [&](Tensor x, Shape k, Shape st, Shape p, bool ceil, bool include,
                 std::optional<int64_t> div, std::string desc) {
    s.push_back({{x, ints(k), ints(st), ints(p), ceil, include, div}, desc});
  };
  add(mk({2, 3, 6, 7}, dt, rng), {2}, {}, {0}, false, true, std::nullopt, "2x2");
  add(mk({2, 3, 7, 7}, dt, rng), {3}, {2}, {1}, false, true, std::nullopt, "padding, counted");
  add(mk({2, 3, 7, 7}, dt, rng), {3}, {2}, {1}, false, false, std::nullopt, "padding, not counted");
  add(mk({2, 3, 7, 8}, dt, rng), {3, 2}, {2}, {1}, true, true, std::nullopt, "ceil_mode, counted");
  add(mk({2, 3, 7, 8}, dt, rng), {3, 2}, {2}, {1}, true, false, std::nullopt,
      "ceil_mode, not counted");
  add(mk({2, 3, 6, 6}, dt, rng), {2}, {}, {1}, false, true, int64_t{3}, "divisor_override 3");
  add(mk({3, 5, 6}, dt, rng).transpose(1, 2), {2}, {1}, {0}, false, true, std::nullopt,
      "unbatched, non-contiguous");
  add(mk({0, 3, 6, 6}, dt, rng), {2}, {}, {0}, false, true, std::nullopt, "zero batch");
  return s;
}

std::vector<SampleInput> adaptive_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back({{mk({2, 3, 7, 9}, dt, rng), ints({3, 4})}, "7x9 -> 3x4 (overlapping windows)"});
  s.push_back({{mk({2, 3, 6, 8}, dt, rng), ints({1})}, "global average"});
  s.push_back({{mk({2, 3, 4, 4}, dt, rng), ints({6})}, "upsampling 4 -> 6"});
  s.push_back(
      {{mk({3, 5, 6}, dt, rng).transpose(1, 2), ints({2, 3})}, "unbatched, non-contiguous"});
  s.push_back({{mk({0, 3, 6, 6}, dt, rng), ints({2})}, "zero batch"});
  return s;
}

// ---- gradient check samples (float64, at most 80 input elements) ----

// Values 0.25 apart in random order: no two elements of a max-pool window tie, even after the
// finite-difference step, so the argmax (and the gradient) is unambiguous.
Tensor distinct(Shape shape, std::mt19937_64& rng) {
  const int64_t n = numel_of(shape);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = 0.25 * static_cast<double>(i - n / 2);
  std::shuffle(v.begin(), v.end(), rng);
  return from_vector(v, shape);
}

std::vector<SampleInput> max_grad_samples(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto add = [&](Tensor x, Shape k, Shape st, Shape p, Shape d, bool ceil, std::string desc) {
    s.push_back({{x, ints(k), ints(st), ints(p), ints(d), ceil}, desc});
  };
  add(distinct({1, 2, 4, 6}, rng), {2}, {}, {0}, {1}, false, "2x2, default stride");
  add(distinct({1, 2, 5, 5}, rng), {3}, {1}, {1}, {1}, false,
      "3x3, stride 1, padding 1 (overlapping windows share maxima)");
  add(distinct({1, 1, 5, 7}, rng), {2, 3}, {2, 1}, {1}, {2}, false, "dilation 2, padding 1");
  add(distinct({1, 2, 5, 5}, rng), {2}, {2}, {0}, {1}, true, "ceil_mode");
  add(distinct({2, 5, 6}, rng).transpose(1, 2), {2}, {}, {0}, {1}, false,
      "unbatched, non-contiguous");
  return s;
}

std::vector<SampleInput> avg_grad_samples(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto add = [&](Shape x, Shape k, Shape st, Shape p, bool ceil, bool include,
                 std::optional<int64_t> div, std::string desc) {
    s.push_back({{mk(x, kFloat64, rng), ints(k), ints(st), ints(p), ceil, include, div}, desc});
  };
  add({1, 2, 4, 6}, {2}, {}, {0}, false, true, std::nullopt, "2x2");
  add({1, 2, 5, 5}, {3}, {2}, {1}, false, true, std::nullopt, "padding, counted");
  add({1, 2, 5, 5}, {3}, {1}, {1}, false, false, std::nullopt, "padding, not counted, stride 1");
  add({1, 2, 5, 6}, {3, 2}, {2}, {1}, true, true, std::nullopt, "ceil_mode, counted");
  add({1, 2, 5, 6}, {3, 2}, {2}, {1}, true, false, std::nullopt, "ceil_mode, not counted");
  add({1, 2, 4, 4}, {2}, {}, {1}, false, true, int64_t{3}, "divisor_override 3");
  s.push_back({{mk({2, 5, 6}, kFloat64, rng).transpose(1, 2), ints({2}), ints({1}), ints({0}),
                false, true, IValue()},
               "unbatched, non-contiguous"});
  return s;
}

std::vector<SampleInput> adaptive_grad_samples(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back({{mk({1, 2, 5, 7}, kFloat64, rng), ints({2, 3})}, "5x7 -> 2x3 (overlapping)"});
  s.push_back({{mk({1, 2, 4, 4}, kFloat64, rng), ints({1})}, "global average"});
  s.push_back({{mk({1, 2, 3, 3}, kFloat64, rng), ints({5})}, "upsampling 3 -> 5"});
  s.push_back(
      {{mk({2, 5, 6}, kFloat64, rng).transpose(1, 2), ints({4, 3})}, "unbatched, non-contiguous"});
  return s;
}

const bool registered = [] {
  register_op_info(
      {.name = "max_pool2d",
       .samples = max_samples,
       .reference = [](const Stack& a) { return std::vector<Tensor>{max_reference(a)[0]}; },
       .error_cases = max_errors,
       .grad_samples = max_grad_samples});
  register_op_info({.name = "max_pool2d_with_indices",
                    .samples = max_samples,
                    .reference = max_reference,
                    .error_cases = max_errors,
                    .grad_samples = max_grad_samples});
  register_op_info({.name = "avg_pool2d",
                    .samples = avg_samples,
                    .reference = avg_reference,
                    .error_cases =
                        [] {
                          const Tensor x = zeros({1, 2, 5, 5});
                          return std::vector<ErrorCase>{
                              {{x, ints({2}), ints({}), ints({0}), false, true, int64_t{0}},
                               ErrorKind::Value,
                               "divisor_override 0"},
                              {{x, ints({2}), ints({}), ints({2}), false, true, IValue()},
                               ErrorKind::Value,
                               "padding 2 with kernel 2"},
                              {{x, ints({6}), ints({}), ints({0}), false, true, IValue()},
                               ErrorKind::Shape,
                               "kernel larger than input"},
                              {{zeros({1, 2, 5, 5}, kInt32), ints({2}), ints({}), ints({0}), false,
                                true, IValue()},
                               ErrorKind::DType,
                               "int32"}};
                        },
                    .grad_samples = avg_grad_samples});
  register_op_info(
      {.name = "adaptive_avg_pool2d",
       .samples = adaptive_samples,
       .reference = adaptive_reference,
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({1, 2, 5, 5}), ints({-1, 2})}, ErrorKind::Value, "negative size"},
                 {{zeros({1, 2, 5, 5}), ints({1, 2, 3})}, ErrorKind::Value, "three sizes"},
                 {{zeros({5, 5}), ints({2})}, ErrorKind::Shape, "2-D input"},
                 {{zeros({1, 2, 0, 5}), ints({2})}, ErrorKind::Shape, "zero height"}};
           },
       .grad_samples = adaptive_grad_samples});
  return true;
}();

}  // namespace
}  // namespace kiln::testing
