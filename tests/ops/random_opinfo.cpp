// OpInfos for random ops (shapes, dtypes and errors only: values are checked statistically in
// random_test.cpp) and for linspace and eye.
#include "tests/ops/gather_ref.h"

namespace kiln::testing {
namespace {

using Shape = std::vector<int64_t>;
using Args = std::vector<SampleInput>;

ErrorCase err(Stack args, ErrorKind k, std::string d) { return {std::move(args), k, std::move(d)}; }

const bool registered = [] {
  for (const char* name : {"rand", "randn"}) {
    register_op_info(
        {.name = name,
         .samples =
             [](ScalarType dt, std::mt19937_64&) {
               return Args{{{Shape{3, 4}, dt, Device::CPU, int64_t{1}, int64_t{0}}, "[3,4]"},
                           {{Shape{}, dt, Device::CPU, int64_t{-7}, int64_t{100}}, "0-dim"},
                           {{Shape{0, 2}, dt, Device::CPU, int64_t{1}, int64_t{0}}, "zero-size"}};
             },
         .error_cases =
             [] {
               return std::vector<ErrorCase>{
                   err({Shape{2}, kInt64, Device::CPU, int64_t{0}, int64_t{0}}, ErrorKind::DType,
                       "int dtype"),
                   err({Shape{-1}, kFloat32, Device::CPU, int64_t{0}, int64_t{0}}, ErrorKind::Value,
                       "negative size")};
             },
         .compare_values = false});
  }
  register_op_info(
      {.name = "randint",
       .samples =
           [](ScalarType dt, std::mt19937_64&) {
             return Args{
                 {{Scalar(0), Scalar(5), Shape{3, 4}, dt, Device::CPU, int64_t{1}, int64_t{0}},
                  "[0,5)"},
                 {{Scalar(1), Scalar(2), Shape{}, dt, Device::CPU, int64_t{1}, int64_t{0}},
                  "0-dim"},
                 {{Scalar(0), Scalar(3), Shape{0}, dt, Device::CPU, int64_t{1}, int64_t{0}},
                  "zero-size"}};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 err({Scalar(5), Scalar(5), Shape{2}, kInt64, Device::CPU, int64_t{0}, int64_t{0}},
                     ErrorKind::Value, "empty range"),
                 err({Scalar(0), Scalar(300), Shape{2}, kUInt8, Device::CPU, int64_t{0},
                      int64_t{0}},
                     ErrorKind::Value, "range beyond uint8"),
                 err({Scalar(-1), Scalar(3), Shape{2}, kUInt32, Device::CPU, int64_t{0},
                      int64_t{0}},
                     ErrorKind::Value, "negative for unsigned"),
                 err({Scalar(0), Scalar(2), Shape{2}, kBool, Device::CPU, int64_t{0}, int64_t{0}},
                     ErrorKind::DType, "bool")};
           },
       .compare_values = false});
  register_op_info(
      {.name = "dropout",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             Args out;
             for (SampleInput& s : unary_samples(dt, rng)) {
               s.args.emplace_back(0.3);
               s.args.emplace_back(int64_t{5});
               s.args.emplace_back(int64_t{0});
               out.push_back(s);
             }
             return out;
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 err({zeros({2}), 1.5, int64_t{0}, int64_t{0}}, ErrorKind::Value, "p > 1"),
                 err({zeros({2}), -0.1, int64_t{0}, int64_t{0}}, ErrorKind::Value, "p < 0"),
                 err({zeros({2}, kInt64), 0.5, int64_t{0}, int64_t{0}}, ErrorKind::DType,
                     "int input")};
           },
       .compare_values = false});
  // The `.state` forms (Note [Random ops under a trace]): the (seed, first counter) pair as an
  // int64 tensor.
  auto state = [](int64_t seed, int64_t first) { return tensor({seed, first}, kInt64); };
  for (const char* name : {"rand.state", "randn.state"}) {
    register_op_info(
        {.name = name,
         .samples =
             [state](ScalarType dt, std::mt19937_64&) {
               return Args{{{Shape{3, 4}, dt, state(1, 0)}, "[3,4]"},
                           {{Shape{}, dt, state(-7, 100)}, "0-dim"},
                           {{Shape{0, 2}, dt, state(1, 0)}, "zero-size"}};
             },
         .error_cases =
             [state] {
               return std::vector<ErrorCase>{
                   err({Shape{2}, kInt64, state(0, 0)}, ErrorKind::DType, "int dtype"),
                   err({Shape{-1}, kFloat32, state(0, 0)}, ErrorKind::Value, "negative size"),
                   err({Shape{2}, kFloat32, zeros({3}, kInt64)}, ErrorKind::Value, "state of 3"),
                   err({Shape{2}, kFloat32, zeros({2})}, ErrorKind::Value, "float state")};
             },
         .compare_values = false});
  }
  register_op_info({.name = "randint.state",
                    .samples =
                        [state](ScalarType dt, std::mt19937_64&) {
                          return Args{
                              {{Scalar(0), Scalar(5), Shape{3, 4}, dt, state(1, 0)}, "[0,5)"},
                              {{Scalar(0), Scalar(3), Shape{0}, dt, state(1, 0)}, "zero-size"}};
                        },
                    .error_cases =
                        [state] {
                          return std::vector<ErrorCase>{
                              err({Scalar(5), Scalar(5), Shape{2}, kInt64, state(0, 0)},
                                  ErrorKind::Value, "empty range"),
                              err({Scalar(0), Scalar(2), Shape{2}, kInt64, zeros({1}, kInt64)},
                                  ErrorKind::Value, "state of 1")};
                        },
                    .compare_values = false});
  register_op_info(
      {.name = "dropout.state",
       .samples =
           [state](ScalarType dt, std::mt19937_64& rng) {
             Args out;
             for (SampleInput& s : unary_samples(dt, rng)) {
               s.args.emplace_back(0.3);
               s.args.emplace_back(state(5, 0));
               out.push_back(s);
             }
             return out;
           },
       .error_cases =
           [state] {
             return std::vector<ErrorCase>{
                 err({zeros({2}), 1.5, state(0, 0)}, ErrorKind::Value, "p > 1"),
                 err({zeros({2}, kInt64), 0.5, state(0, 0)}, ErrorKind::DType, "int input"),
                 err({zeros({2}), 0.5, zeros({2, 1}, kInt64)}, ErrorKind::Value, "2-d state")};
           },
       .compare_values = false});
  register_op_info(
      {.name = "rng_state_snapshot",
       .samples =
           [state](ScalarType, std::mt19937_64&) {
             return Args{{{state(3, 9)}, "pair"}};
           },
       .reference = [](const Stack& a) { return std::vector<Tensor>{a[0].tensor().clone()}; },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 err({zeros({3}, kInt64)}, ErrorKind::Value, "3 elements"),
                 err({zeros({2})}, ErrorKind::DType, "float")};
           }});
  register_op_info(
      {.name = "linspace",
       .samples =
           [](ScalarType dt, std::mt19937_64&) {
             return Args{{{Scalar(0), Scalar(10), int64_t{5}, dt, Device::CPU}, "0..10 in 5"},
                         {{Scalar(2.0), Scalar(-3.0), int64_t{7}, dt, Device::CPU}, "decreasing"},
                         {{Scalar(1), Scalar(4), int64_t{1}, dt, Device::CPU}, "one step"},
                         {{Scalar(1), Scalar(4), int64_t{0}, dt, Device::CPU}, "no steps"}};
           },
       .reference =
           [](const Stack& a) {
             const double s = a[0].scalar().to_double(), e = a[1].scalar().to_double();
             const int64_t n = a[2].to_int();
             std::vector<double> v;
             for (int64_t i = 0; i < n; ++i)
               v.push_back(
                   n == 1 ? s : s + (e - s) * static_cast<double>(i) / static_cast<double>(n - 1));
             // Integer dtypes truncate; computing via double keeps the same result here.
             return std::vector<Tensor>{from_vector(v).to(a[3].dtype())};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 err({Scalar(0), Scalar(1), int64_t{-1}, kFloat32, Device::CPU}, ErrorKind::Value,
                     "negative steps")};
           }});
  register_op_info({.name = "eye",
                    .samples =
                        [](ScalarType dt, std::mt19937_64&) {
                          return Args{{{int64_t{3}, std::nullopt, dt, Device::CPU}, "3x3"},
                                      {{int64_t{2}, int64_t{4}, dt, Device::CPU}, "2x4"},
                                      {{int64_t{0}, int64_t{3}, dt, Device::CPU}, "0x3"}};
                        },
                    .reference =
                        [](const Stack& a) {
                          const int64_t n = a[0].to_int(), m = a[1].is_none() ? n : a[1].to_int();
                          std::vector<double> v;
                          for (int64_t i = 0; i < n; ++i)
                            for (int64_t j = 0; j < m; ++j) v.push_back(i == j);
                          return std::vector<Tensor>{from_vector(v, Shape{n, m}).to(a[2].dtype())};
                        },
                    .error_cases =
                        [] {
                          return std::vector<ErrorCase>{
                              err({int64_t{-1}, std::nullopt, kFloat32, Device::CPU},
                                  ErrorKind::Value, "negative n")};
                        }});
  return true;
}();

}  // namespace
}  // namespace kiln::testing
