// OpInfos for adaptive_max_pool2d and adaptive_max_pool3d: (values, indices) against float64
// loops over each adaptive window (pool_nd_ref.h).
#include <cmath>

#include "tests/ops/pool_nd_ref.h"

namespace kiln::testing {
namespace {

using Shape = std::vector<int64_t>;

IValue ints(Shape v) { return IValue(std::move(v)); }

Tensor mk(Shape s, ScalarType dt, std::mt19937_64& rng) { return make_tensor(s, dt, rng, -20, 20); }

std::vector<SampleInput> samples_2d(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back({{mk({2, 3, 7, 9}, dt, rng), ints({3, 4})}, "7x9 -> 3x4 (overlapping windows)"});
  s.push_back({{mk({2, 3, 5, 6}, dt, rng), ints({1})}, "global"});
  s.push_back({{mk({2, 3, 3, 4}, dt, rng), ints({5, 6})}, "upsampling"});
  s.push_back({{mk({2, 3, 4, 5}, dt, rng), ints({0, 2})}, "an output size 0"});
  s.push_back(
      {{mk({3, 6, 5}, dt, rng).transpose(1, 2), ints({2, 3})}, "unbatched, non-contiguous"});
  s.push_back({{mk({0, 3, 4, 4}, dt, rng), ints({2})}, "zero batch"});
  s.push_back({{mk({1, 1, 1, 1}, dt, rng), ints({1})}, "sizes 1"});
  if (is_floating(dt)) {
    s.push_back(
        {{from_vector(std::vector<double>{1, NAN, 3, 3, NAN, -INFINITY, 2, 0, 3}, Shape{1, 1, 3, 3})
              .to(dt),
          ints({2})},
         "NaN propagates (the last NaN's index), ties keep the first"});
  }
  return s;
}

std::vector<SampleInput> samples_3d(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back({{mk({2, 2, 5, 6, 7}, dt, rng), ints({2, 3, 4})}, "overlapping windows"});
  s.push_back({{mk({2, 2, 3, 4, 5}, dt, rng), ints({1})}, "global"});
  s.push_back({{mk({1, 2, 2, 3, 2}, dt, rng), ints({3, 4, 5})}, "upsampling"});
  s.push_back({{mk({2, 2, 3, 4, 5}, dt, rng), ints({2, 0, 3})}, "an output size 0"});
  s.push_back({{mk({5, 4, 3, 2}, dt, rng).permute({3, 0, 1, 2}), ints({2, 3, 2})},
               "unbatched, non-contiguous"});
  s.push_back({{mk({0, 2, 3, 3, 3}, dt, rng), ints({2})}, "zero batch"});
  s.push_back({{mk({1, 1, 1, 1, 1}, dt, rng), ints({1})}, "sizes 1"});
  if (is_floating(dt)) {
    s.push_back(
        {{from_vector(std::vector<double>{1, NAN, 3, 3, NAN, -INFINITY, 2, 3}, Shape{1, 1, 2, 2, 2})
              .to(dt),
          ints({1})},
         "NaN propagates (the last NaN's index)"});
  }
  return s;
}

std::vector<ErrorCase> errors(Shape good, Shape bad_rank, Shape empty, Shape wrong_length) {
  return {{{zeros(good), ints({2, -1})}, ErrorKind::Value, "negative size"},
          {{zeros(good), ints(wrong_length)}, ErrorKind::Value, "wrong number of sizes"},
          {{zeros(bad_rank), ints({2})}, ErrorKind::Shape, "wrong rank"},
          {{zeros(empty), ints({2})}, ErrorKind::Shape, "an empty spatial dim"},
          {{zeros(good, kBool), ints({2})}, ErrorKind::DType, "bool"}};
}

std::vector<SampleInput> grad_samples_2d(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back({{distinct_values({1, 2, 5, 7}, rng), ints({2, 3})}, "overlapping"});
  s.push_back({{distinct_values({1, 2, 3, 3}, rng), ints({5, 4})}, "upsampling"});
  s.push_back({{distinct_values({2, 5, 6}, rng).transpose(1, 2), ints({4, 3})},
               "unbatched, non-contiguous"});
  return s;
}

std::vector<SampleInput> grad_samples_3d(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back({{distinct_values({1, 1, 3, 5, 4}, rng), ints({2, 3, 3})}, "overlapping"});
  s.push_back({{distinct_values({1, 2, 2, 2, 3}, rng), ints({3, 1, 4})}, "upsampling, global"});
  s.push_back({{distinct_values({4, 3, 2, 2}, rng).permute({3, 0, 1, 2}), ints({2})},
               "unbatched, non-contiguous"});
  return s;
}

const bool registered = [] {
  register_op_info({.name = "adaptive_max_pool2d",
                    .samples = samples_2d,
                    .reference =
                        [](const Stack& a) {
                          const Tensor& x = a[0].tensor();
                          return ref_adaptive_max_pool(x, adaptive_box(x, 2, a[1].int_list()));
                        },
                    .error_cases =
                        [] {
                          return errors({1, 2, 4, 4}, {4, 4}, {1, 2, 0, 4}, {1, 2, 3});
                        },
                    .grad_samples = grad_samples_2d});
  register_op_info({.name = "adaptive_max_pool3d",
                    .samples = samples_3d,
                    .reference =
                        [](const Stack& a) {
                          const Tensor& x = a[0].tensor();
                          return ref_adaptive_max_pool(x, adaptive_box(x, 3, a[1].int_list()));
                        },
                    .error_cases =
                        [] {
                          std::vector<ErrorCase> e =
                              errors({1, 2, 3, 4, 4}, {1, 2, 4, 4, 4, 1}, {1, 2, 3, 4, 0}, {2, 2});
                          e[0].args[1] = ints({2, -1, 2});
                          return e;
                        },
                    .grad_samples = grad_samples_3d});
  return true;
}();

}  // namespace
}  // namespace kiln::testing
