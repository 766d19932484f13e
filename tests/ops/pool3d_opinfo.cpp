// OpInfos for the 3-d pools: max_pool3d (+ _with_indices), avg_pool3d and adaptive_avg_pool3d.
// References are float64 loops over each whole [D, H, W] window (pool_nd_ref.h), which check
// the separable composites (Note [Separable 3-d pooling] in src/ops/pool3d.cpp) independently.
#include <cmath>

#include "tests/ops/pool_nd_ref.h"

namespace kiln::testing {
namespace {

using Shape = std::vector<int64_t>;

IValue ints(Shape v) { return IValue(std::move(v)); }

Tensor mk(Shape s, ScalarType dt, std::mt19937_64& rng) { return make_tensor(s, dt, rng, -20, 20); }

// ---- max_pool3d(self, kernel_size, stride, padding, dilation, ceil_mode) ----

std::vector<Tensor> max_reference(const Stack& a) {
  const Tensor& x = a[0].tensor();
  return ref_max_pool(x, window_box(x, 3, a[1].int_list(), a[2].int_list(), a[3].int_list(),
                                    a[4].int_list(), a[5].to_bool()));
}

std::vector<SampleInput> max_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto add = [&](Tensor x, Shape k, Shape st, Shape p, Shape d, bool ceil, std::string desc) {
    s.push_back({{x, ints(k), ints(st), ints(p), ints(d), ceil}, desc});
  };
  add(mk({2, 2, 4, 5, 6}, dt, rng), {2}, {}, {0}, {1}, false, "2x2x2, default stride");
  add(mk({1, 2, 5, 4, 6}, dt, rng), {3, 2, 2}, {1, 2, 1}, {1, 0, 1}, {1}, false,
      "per-dim kernel, stride and padding");
  add(mk({1, 2, 5, 6, 5}, dt, rng), {2, 3, 2}, {2}, {1}, {2, 1, 2}, false, "dilation");
  add(mk({1, 2, 5, 5, 6}, dt, rng), {2}, {2}, {0}, {1}, true, "ceil_mode: last, partial windows");
  add(mk({1, 1, 5, 4, 5}, dt, rng), {2}, {3}, {1}, {1}, true,
      "ceil_mode: windows that would start in the right padding are dropped");
  add(mk({2, 4, 3, 5}, dt, rng), {2}, {1}, {0}, {1}, false, "unbatched");
  add(mk({2, 5, 4, 3, 2}, dt, rng).permute({0, 4, 1, 2, 3}), {2}, {}, {1}, {1}, false,
      "non-contiguous (channels last)");
  add(mk({0, 2, 3, 3, 3}, dt, rng), {2}, {}, {0}, {1}, false, "zero batch");
  add(mk({1, 1, 1, 1, 1}, dt, rng), {1}, {}, {0}, {1}, false, "sizes 1");
  if (is_floating(dt)) {
    std::vector<double> v(16);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 5) % 7);
    v[1] = v[6] = v[12] = NAN;
    v[9] = -INFINITY;
    add(from_vector(v, Shape{1, 1, 2, 2, 4}).to(dt), {2}, {}, {0}, {1}, false,
        "NaN propagates (the last NaN's index), ties keep the first");
  }
  return s;
}

std::vector<ErrorCase> max_errors() {
  const Tensor x = zeros({1, 2, 4, 4, 4});
  auto c = [&](Tensor t, Shape k, Shape st, Shape p, Shape d) {
    return Stack{t, ints(k), ints(st), ints(p), ints(d), false};
  };
  return {{c(x, {2, 0, 2}, {}, {0}, {1}), ErrorKind::Value, "a kernel size 0"},
          {c(x, {2}, {1, 1, 0}, {0}, {1}), ErrorKind::Value, "a stride 0"},
          {c(x, {2}, {}, {0, 2, 0}, {1}), ErrorKind::Value, "padding more than half the kernel"},
          {c(x, {2}, {}, {0}, {0}), ErrorKind::Value, "dilation 0"},
          {c(x, {2, 2}, {}, {0}, {1}), ErrorKind::Value, "two kernel sizes"},
          {c(x, {2}, {}, {0, 0}, {1}), ErrorKind::Value, "two paddings"},
          {c(x, {2, 2, 5}, {}, {0}, {1}), ErrorKind::Shape, "kernel larger than the input"},
          {c(zeros({2, 4, 4}), {2}, {}, {0}, {1}), ErrorKind::Shape, "3-D input"},
          {c(zeros({1, 2, 0, 4, 4}), {2}, {}, {0}, {1}), ErrorKind::Shape, "zero depth"},
          {c(zeros({1, 2, 4, 4, 4}, kBool), {2}, {}, {0}, {1}), ErrorKind::DType, "bool"}};
}

std::vector<SampleInput> max_grad_samples(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto add = [&](Tensor x, Shape k, Shape st, Shape p, Shape d, bool ceil, std::string desc) {
    s.push_back({{x, ints(k), ints(st), ints(p), ints(d), ceil}, desc});
  };
  add(distinct_values({1, 2, 2, 4, 4}, rng), {2}, {}, {0}, {1}, false, "2x2x2");
  add(distinct_values({1, 1, 4, 4, 4}, rng), {3}, {1}, {1}, {1}, false,
      "overlapping windows share maxima");
  add(distinct_values({1, 1, 3, 5, 4}, rng), {2}, {2}, {1}, {1, 2, 1}, true,
      "dilation, padding, ceil_mode");
  add(distinct_values({3, 3, 2, 2}, rng).permute({3, 0, 1, 2}), {2}, {1}, {0}, {1}, false,
      "unbatched, non-contiguous");
  return s;
}

// ---- avg_pool3d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
//                 divisor_override) ----

std::vector<Tensor> avg_reference(const Stack& a) {
  const Tensor& x = a[0].tensor();
  return ref_avg_pool(
      x, window_box(x, 3, a[1].int_list(), a[2].int_list(), a[3].int_list(), {}, a[4].to_bool()),
      a[5].to_bool(), a[6].optional_int());
}

std::vector<SampleInput> avg_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto add = [&](Tensor x, Shape k, Shape st, Shape p, bool ceil, bool include,
                 std::optional<int64_t> div, std::string d) {
    s.push_back({{x, ints(k), ints(st), ints(p), ceil, include, div ? IValue(*div) : IValue()}, d});
  };
  add(mk({2, 2, 4, 5, 6}, dt, rng), {2}, {}, {0}, false, true, std::nullopt, "2x2x2");
  add(mk({1, 2, 5, 5, 5}, dt, rng), {3}, {2}, {1}, false, true, std::nullopt, "padding, counted");
  add(mk({1, 2, 5, 5, 5}, dt, rng), {3}, {2}, {1}, false, false, std::nullopt,
      "padding, not counted");
  add(mk({1, 2, 6, 5, 4}, dt, rng), {3, 2, 3}, {2}, {1, 1, 0}, true, true, std::nullopt,
      "ceil_mode, counted");
  add(mk({1, 2, 6, 5, 4}, dt, rng), {3, 2, 3}, {2}, {1, 1, 0}, true, false, std::nullopt,
      "ceil_mode, not counted");
  add(mk({1, 1, 5, 4, 5}, dt, rng), {2}, {3}, {1}, true, true, std::nullopt,
      "ceil_mode drops windows");
  add(mk({1, 2, 4, 4, 4}, dt, rng), {2}, {}, {1}, false, true, int64_t{3}, "divisor_override 3");
  add(mk({1, 2, 4, 5, 4}, dt, rng), {3}, {2}, {1}, true, false, int64_t{-2},
      "negative divisor_override with ceil_mode");
  add(mk({2, 5, 4, 3}, dt, rng).permute({3, 0, 1, 2}), {2}, {1}, {0}, false, true, std::nullopt,
      "unbatched, non-contiguous");
  add(mk({0, 2, 3, 3, 3}, dt, rng), {2}, {}, {0}, false, true, std::nullopt, "zero batch");
  add(mk({1, 1, 1, 1, 1}, dt, rng), {1}, {}, {0}, false, true, std::nullopt, "sizes 1");
  return s;
}

std::vector<ErrorCase> avg_errors() {
  const Tensor x = zeros({1, 2, 4, 4, 4});
  auto c = [&](Tensor t, Shape k, Shape st, Shape p, IValue div) {
    return Stack{t, ints(k), ints(st), ints(p), false, true, div};
  };
  return {{c(x, {2}, {}, {0}, int64_t{0}), ErrorKind::Value, "divisor_override 0"},
          {c(x, {0}, {}, {0}, IValue()), ErrorKind::Value, "kernel 0"},
          {c(x, {2}, {}, {2}, IValue()), ErrorKind::Value, "padding 2 with kernel 2"},
          {c(x, {5}, {}, {0}, IValue()), ErrorKind::Shape, "kernel larger than the input"},
          {c(zeros({4, 4}), {2}, {}, {0}, IValue()), ErrorKind::Shape, "2-D input"},
          {c(zeros({1, 2, 4, 4, 4}, kInt32), {2}, {}, {0}, IValue()), ErrorKind::DType, "int32"}};
}

std::vector<SampleInput> avg_grad_samples(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto add = [&](Shape x, Shape k, Shape st, Shape p, bool ceil, bool include, IValue div,
                 std::string d) {
    s.push_back({{mk(x, kFloat64, rng), ints(k), ints(st), ints(p), ceil, include, div}, d});
  };
  add({1, 1, 3, 4, 5}, {3}, {2}, {1}, false, true, IValue(), "padding, counted");
  add({1, 1, 4, 4, 3}, {3, 2, 3}, {2}, {1, 1, 0}, true, false, IValue(), "ceil_mode, not counted");
  add({1, 2, 3, 3, 4}, {2}, {1}, {1}, false, true, int64_t{5}, "divisor_override 5");
  s.push_back({{mk({2, 4, 3, 3}, kFloat64, rng).permute({3, 0, 1, 2}), ints({2}), ints({1}),
                ints({0}), false, true, IValue()},
               "unbatched, non-contiguous"});
  return s;
}

// ---- adaptive_avg_pool3d(self, output_size) ----

std::vector<SampleInput> adaptive_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back({{mk({2, 2, 5, 6, 7}, dt, rng), ints({2, 3, 4})}, "overlapping windows"});
  s.push_back({{mk({2, 2, 3, 4, 5}, dt, rng), ints({1})}, "global"});
  s.push_back({{mk({1, 2, 2, 3, 4}, dt, rng), ints({3, 5, 6})}, "upsampling"});
  s.push_back({{mk({2, 2, 3, 4, 5}, dt, rng), ints({2, 0, 3})}, "an output size 0"});
  s.push_back({{mk({2, 2, 3, 4, 5}, dt, rng), ints({0, 2, 3})}, "output depth 0"});
  s.push_back({{mk({5, 4, 3, 2}, dt, rng).permute({3, 0, 1, 2}), ints({2, 3, 2})},
               "unbatched, non-contiguous"});
  s.push_back({{mk({0, 2, 3, 3, 3}, dt, rng), ints({2})}, "zero batch"});
  s.push_back({{mk({1, 1, 1, 1, 1}, dt, rng), ints({1})}, "sizes 1"});
  return s;
}

std::vector<SampleInput> adaptive_grad_samples(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back({{mk({1, 1, 3, 5, 4}, kFloat64, rng), ints({2, 3, 3})}, "overlapping"});
  s.push_back({{mk({1, 2, 2, 2, 3}, kFloat64, rng), ints({3, 1, 4})}, "upsampling and global"});
  s.push_back({{mk({4, 3, 2, 2}, kFloat64, rng).permute({3, 0, 1, 2}), ints({2})},
               "unbatched, non-contiguous"});
  return s;
}

const bool registered = [] {
  register_op_info(
      {.name = "max_pool3d",
       .samples = max_samples,
       .reference = [](const Stack& a) { return std::vector<Tensor>{max_reference(a)[0]}; },
       .error_cases = max_errors,
       .grad_samples = max_grad_samples});
  register_op_info({.name = "max_pool3d_with_indices",
                    .samples = max_samples,
                    .reference = max_reference,
                    .error_cases = max_errors,
                    .grad_samples = max_grad_samples});
  register_op_info({.name = "avg_pool3d",
                    .samples = avg_samples,
                    .reference = avg_reference,
                    .error_cases = avg_errors,
                    .grad_samples = avg_grad_samples});
  register_op_info(
      {.name = "adaptive_avg_pool3d",
       .samples = adaptive_samples,
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             return ref_adaptive_avg_pool(x, adaptive_box(x, 3, a[1].int_list()));
           },
       .error_cases =
           [] {
             const Tensor x = zeros({1, 2, 3, 4, 5});
             return std::vector<ErrorCase>{
                 {{x, ints({2, -1, 2})}, ErrorKind::Value, "negative size"},
                 {{x, ints({2, 2})}, ErrorKind::Value, "two sizes"},
                 {{zeros({4, 5}), ints({2})}, ErrorKind::Shape, "2-D input"},
                 {{zeros({1, 2, 3, 0, 5}), ints({2})}, ErrorKind::Shape, "zero height"},
                 {{zeros({1, 2, 3, 4, 5}, kInt64), ints({2})}, ErrorKind::DType, "int64"}};
           },
       .grad_samples = adaptive_grad_samples});
  return true;
}();

}  // namespace
}  // namespace kiln::testing
