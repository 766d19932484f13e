// OpInfos for the 1-d pools: max_pool1d (+ _with_indices), avg_pool1d, adaptive_avg_pool1d and
// adaptive_max_pool1d. References are float64 loops over each window (pool_nd_ref.h).
#include <cmath>

#include "tests/ops/pool_nd_ref.h"

namespace kiln::testing {
namespace {

using Shape = std::vector<int64_t>;

IValue ints(Shape v) { return IValue(std::move(v)); }

Tensor mk(Shape s, ScalarType dt, std::mt19937_64& rng) { return make_tensor(s, dt, rng, -20, 20); }

// ---- max_pool1d(self, kernel_size, stride, padding, dilation, ceil_mode) ----

std::vector<Tensor> max_reference(const Stack& a) {
  const Tensor& x = a[0].tensor();
  return ref_max_pool(x, window_box(x, 1, a[1].int_list(), a[2].int_list(), a[3].int_list(),
                                    a[4].int_list(), a[5].to_bool()));
}

// Every sample for float32 and float64; the other dtypes run the same code with another element
// type, so they get the samples marked `all` (each sample is a kernel of the compiled harness's
// one graph, whose compile time grows with their number).
std::vector<SampleInput> max_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  const bool every = dt == kFloat32 || dt == kFloat64;
  bool all = false;
  auto add = [&](Tensor x, Shape k, Shape st, Shape p, Shape d, bool ceil, std::string desc) {
    if (every || all) s.push_back({{x, ints(k), ints(st), ints(p), ints(d), ceil}, desc});
    all = false;
  };
  add(mk({2, 3, 9}, dt, rng), {3}, {}, {0}, {1}, false, "kernel 3, default stride");
  add(mk({2, 3, 10}, dt, rng), {3}, {2}, {1}, {1}, false, "stride 2, padding 1");
  all = true;
  add(mk({2, 2, 11}, dt, rng), {3}, {2}, {1}, {2}, false, "dilation 2");
  add(mk({1, 2, 7}, dt, rng), {2}, {2}, {0}, {1}, true, "ceil_mode: a last, partial window");
  all = true;
  add(mk({1, 2, 5}, dt, rng), {2}, {3}, {1}, {1}, true,
      "ceil_mode: the window that would start in the right padding is dropped");
  add(mk({3, 8}, dt, rng), {2}, {1}, {0}, {1}, false, "unbatched");
  all = true;
  add(mk({2, 8, 3}, dt, rng).transpose(1, 2), {3}, {2}, {1}, {1}, false, "non-contiguous");
  add(mk({0, 3, 8}, dt, rng), {2}, {}, {0}, {1}, false, "zero batch");
  add(mk({1, 1, 1}, dt, rng), {1}, {}, {0}, {1}, false, "sizes 1");
  if (is_floating(dt)) {
    all = true;
    add(from_vector(std::vector<double>{1, NAN, 3, NAN, -INFINITY, 2}, Shape{1, 1, 6}).to(dt), {3},
        {}, {0}, {1}, false, "NaN propagates (the last NaN's index)");
  }
  return s;
}

std::vector<ErrorCase> max_errors() {
  const Tensor x = zeros({1, 2, 5});
  auto c = [&](Tensor t, Shape k, Shape st, Shape p, Shape d) {
    return Stack{t, ints(k), ints(st), ints(p), ints(d), false};
  };
  return {{c(x, {0}, {}, {0}, {1}), ErrorKind::Value, "kernel 0"},
          {c(x, {2}, {0}, {0}, {1}), ErrorKind::Value, "stride 0"},
          {c(x, {2}, {-1}, {0}, {1}), ErrorKind::Value, "negative stride"},
          {c(x, {2}, {}, {2}, {1}), ErrorKind::Value, "padding more than half the kernel"},
          {c(x, {2}, {}, {0}, {0}), ErrorKind::Value, "dilation 0"},
          {c(x, {2, 2}, {}, {0}, {1}), ErrorKind::Value, "two kernel sizes"},
          {c(x, {6}, {}, {0}, {1}), ErrorKind::Shape, "kernel larger than input: output size 0"},
          {c(zeros({5}), {2}, {}, {0}, {1}), ErrorKind::Shape, "1-D input"},
          {c(zeros({1, 2, 2, 5}), {2}, {}, {0}, {1}), ErrorKind::Shape, "4-D input"},
          {c(zeros({1, 0, 5}), {2}, {}, {0}, {1}), ErrorKind::Shape, "zero channels"},
          {c(zeros({1, 2, 5}, kBool), {2}, {}, {0}, {1}), ErrorKind::DType, "bool"}};
}

std::vector<SampleInput> max_grad_samples(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto add = [&](Tensor x, Shape k, Shape st, Shape p, Shape d, bool ceil, std::string desc) {
    s.push_back({{x, ints(k), ints(st), ints(p), ints(d), ceil}, desc});
  };
  add(distinct_values({2, 2, 8}, rng), {2}, {}, {0}, {1}, false, "kernel 2");
  add(distinct_values({1, 2, 9}, rng), {3}, {1}, {1}, {1}, false,
      "overlapping windows share maxima");
  add(distinct_values({1, 2, 7}, rng), {2}, {2}, {1}, {2}, true, "dilation, padding, ceil_mode");
  add(distinct_values({6, 3}, rng).transpose(0, 1), {2}, {}, {0}, {1}, false,
      "unbatched, non-contiguous");
  return s;
}

// ---- avg_pool1d(self, kernel_size, stride, padding, ceil_mode, count_include_pad) ----

std::vector<Tensor> avg_reference(const Stack& a) {
  const Tensor& x = a[0].tensor();
  return ref_avg_pool(
      x, window_box(x, 1, a[1].int_list(), a[2].int_list(), a[3].int_list(), {}, a[4].to_bool()),
      a[5].to_bool(), std::nullopt);
}

std::vector<SampleInput> avg_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto add = [&](Tensor x, Shape k, Shape st, Shape p, bool ceil, bool include, std::string d) {
    s.push_back({{x, ints(k), ints(st), ints(p), ceil, include}, d});
  };
  add(mk({2, 3, 9}, dt, rng), {3}, {}, {0}, false, true, "kernel 3");
  add(mk({2, 3, 9}, dt, rng), {3}, {2}, {1}, false, true, "padding, counted");
  add(mk({2, 3, 9}, dt, rng), {3}, {2}, {1}, false, false, "padding, not counted");
  add(mk({2, 3, 8}, dt, rng), {3}, {2}, {1}, true, true, "ceil_mode, counted");
  add(mk({2, 3, 8}, dt, rng), {3}, {2}, {1}, true, false, "ceil_mode, not counted");
  add(mk({1, 2, 5}, dt, rng), {2}, {3}, {1}, true, true, "ceil_mode drops a window");
  add(mk({8, 3}, dt, rng).transpose(0, 1), {2}, {1}, {0}, false, true, "unbatched, non-contiguous");
  add(mk({0, 3, 6}, dt, rng), {2}, {}, {0}, false, true, "zero batch");
  add(mk({1, 1, 1}, dt, rng), {1}, {}, {0}, false, true, "sizes 1");
  return s;
}

std::vector<ErrorCase> avg_errors() {
  const Tensor x = zeros({1, 2, 5});
  auto c = [&](Tensor t, Shape k, Shape st, Shape p) {
    return Stack{t, ints(k), ints(st), ints(p), false, true};
  };
  return {{c(x, {0}, {}, {0}), ErrorKind::Value, "kernel 0"},
          {c(x, {2}, {0}, {0}), ErrorKind::Value, "stride 0"},
          {c(x, {2}, {}, {2}), ErrorKind::Value, "padding 2 with kernel 2"},
          {c(x, {6}, {}, {0}), ErrorKind::Shape, "kernel larger than input"},
          {c(zeros({2, 2, 2, 5}), {2}, {}, {0}), ErrorKind::Shape, "4-D input"},
          {c(zeros({1, 2, 5}, kInt32), {2}, {}, {0}), ErrorKind::DType, "int32"}};
}

std::vector<SampleInput> avg_grad_samples(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto add = [&](Tensor x, Shape k, Shape st, Shape p, bool ceil, bool include, std::string d) {
    s.push_back({{x, ints(k), ints(st), ints(p), ceil, include}, d});
  };
  add(mk({1, 2, 9}, kFloat64, rng), {3}, {2}, {1}, false, true, "padding, counted");
  add(mk({1, 2, 8}, kFloat64, rng), {3}, {2}, {1}, true, false, "ceil_mode, not counted");
  add(mk({6, 3}, kFloat64, rng).transpose(0, 1), {2}, {1}, {0}, false, true,
      "unbatched, non-contiguous");
  return s;
}

// ---- adaptive_avg_pool1d / adaptive_max_pool1d(self, output_size) ----

std::vector<SampleInput> adaptive_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back({{mk({2, 3, 7}, dt, rng), ints({3})}, "7 -> 3 (overlapping windows)"});
  s.push_back({{mk({2, 3, 6}, dt, rng), ints({1})}, "global"});
  s.push_back({{mk({2, 3, 4}, dt, rng), ints({6})}, "upsampling 4 -> 6"});
  s.push_back({{mk({8, 3}, dt, rng).transpose(0, 1), ints({3})}, "unbatched, non-contiguous"});
  s.push_back({{mk({0, 3, 6}, dt, rng), ints({2})}, "zero batch"});
  s.push_back({{mk({2, 3, 5}, dt, rng), ints({0})}, "output size 0"});
  s.push_back({{mk({1, 1, 1}, dt, rng), ints({1})}, "sizes 1"});
  if (is_floating(dt)) {
    s.push_back(
        {{from_vector(std::vector<double>{NAN, 1, NAN, 2, 3}, Shape{1, 1, 5}).to(dt), ints({2})},
         "NaN propagates"});
  }
  return s;
}

std::vector<ErrorCase> adaptive_errors(ScalarType dt) {
  return {{{zeros({1, 2, 5}, dt), ints({-1})}, ErrorKind::Value, "negative size"},
          {{zeros({1, 2, 5}, dt), ints({1, 2})}, ErrorKind::Value, "two sizes"},
          {{zeros({5}, dt), ints({2})}, ErrorKind::Shape, "1-D input"},
          {{zeros({1, 2, 0}, dt), ints({2})}, ErrorKind::Shape, "zero length"},
          {{zeros({1, 2, 5}, kBool), ints({2})}, ErrorKind::DType, "bool"}};
}

std::vector<SampleInput> adaptive_grad_samples(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back({{distinct_values({1, 2, 7}, rng), ints({3})}, "7 -> 3 (overlapping)"});
  s.push_back({{distinct_values({1, 2, 3}, rng), ints({5})}, "upsampling 3 -> 5"});
  s.push_back(
      {{distinct_values({6, 3}, rng).transpose(0, 1), ints({4})}, "unbatched, non-contiguous"});
  return s;
}

const bool registered = [] {
  register_op_info(
      {.name = "max_pool1d",
       .samples = max_samples,
       .reference = [](const Stack& a) { return std::vector<Tensor>{max_reference(a)[0]}; },
       .error_cases = max_errors,
       .grad_samples = max_grad_samples});
  register_op_info({.name = "max_pool1d_with_indices",
                    .samples = max_samples,
                    .reference = max_reference,
                    .error_cases = max_errors,
                    .grad_samples = max_grad_samples});
  register_op_info({.name = "avg_pool1d",
                    .samples = avg_samples,
                    .reference = avg_reference,
                    .error_cases = avg_errors,
                    .grad_samples = avg_grad_samples});
  register_op_info({.name = "adaptive_avg_pool1d",
                    .samples = adaptive_samples,
                    .reference =
                        [](const Stack& a) {
                          const Tensor& x = a[0].tensor();
                          return ref_adaptive_avg_pool(x, adaptive_box(x, 1, a[1].int_list()));
                        },
                    .error_cases =
                        [] {
                          std::vector<ErrorCase> e = adaptive_errors(kFloat32);
                          e.back().args[0] = zeros({1, 2, 5}, kInt64);
                          e.back().description = "int64";
                          return e;
                        },
                    .grad_samples = adaptive_grad_samples});
  register_op_info({.name = "adaptive_max_pool1d",
                    .samples = adaptive_samples,
                    .reference =
                        [](const Stack& a) {
                          const Tensor& x = a[0].tensor();
                          return ref_adaptive_max_pool(x, adaptive_box(x, 1, a[1].int_list()));
                        },
                    .error_cases = [] { return adaptive_errors(kFloat32); },
                    .grad_samples = adaptive_grad_samples});
  return true;
}();

}  // namespace
}  // namespace kiln::testing
