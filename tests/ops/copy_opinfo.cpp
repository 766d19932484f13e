// OpInfos for copies, conversions and factories.
#include "tests/ops/harness.h"

namespace kiln::testing {
namespace {

std::vector<int64_t> shape_of(const Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }

// A contiguous copy of t's values built element by element (no copy kernel involved).
Tensor values_copy(const Tensor& t, ScalarType dtype) {
  return visit_dtype(t.dtype(),
                     [&]<typename T>() { return from_vector(t.to_vector<T>(), shape_of(t)); })
      .to(dtype);
}

const bool registered = [] {
  register_op_info(
      {.name = "clone",
       .samples = [](ScalarType dt, std::mt19937_64& rng) { return unary_samples(dt, rng); },
       .reference =
           [](const Stack& a) {
             return std::vector<Tensor>{values_copy(a[0].tensor(), a[0].tensor().dtype())};
           }});
  register_op_info(
      {.name = "_to_copy",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             std::vector<SampleInput> out;
             for (SampleInput& s : unary_samples(dt, rng))
               for (ScalarType to : kAllScalarTypes) {
                 Stack args = s.args;
                 args.emplace_back(to);
                 out.push_back({args, s.description + " to " + std::string(dtype_name(to))});
               }
             return out;
           },
       // Element-wise conversion through to_vector<T>() (cast_value), not the kernel.
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             return visit_dtype(a[1].dtype(), [&]<typename T>() {
               return std::vector<Tensor>{from_vector(x.to_vector<T>(), shape_of(x))};
             });
           },
       // Finite differences need a float64 output: a step of 1e-6 vanishes in the
       // rounding of narrower dtypes. The cast back of a narrower gradient is
       // tested in tests/autograd/copy_grad_test.cpp.
       .grad_samples =
           [](std::mt19937_64& rng) {
             std::vector<SampleInput> out;
             for (SampleInput& s : unary_samples(kFloat64, rng)) {
               s.args.emplace_back(kFloat64);
               out.push_back(std::move(s));
             }
             return out;
           }});
  register_op_info(
      {.name = "copy_",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             std::vector<SampleInput> out;
             out.push_back({{make_tensor({3, 4}, dt, rng), make_tensor({4}, kFloat64, rng)},
                            "broadcast float64 [4] into [3, 4]"});
             out.push_back({{make_tensor({3, 4}, dt, rng, -5, 5, Layout::NonContiguous),
                             make_tensor({4, 3}, kInt32, rng).t()},
                            "int32 transposed into non-contiguous"});
             out.push_back(
                 {{make_tensor({0, 2}, dt, rng), make_tensor({0, 2}, dt, rng)}, "zero-size"});
             return out;
           },
       .reference =
           [](const Stack& a) {
             const Tensor& dst = a[0].tensor();
             Tensor src = a[1].tensor().expand(dst.sizes());
             return std::vector<Tensor>{values_copy(src, dst.dtype())};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({2, 3}), zeros({4})}, ErrorKind::Shape, "[4] into [2, 3]"}};
           }});
  register_op_info({.name = "fill_",
                    .samples =
                        [](ScalarType dt, std::mt19937_64& rng) {
                          std::vector<SampleInput> out;
                          for (SampleInput& s : unary_samples(dt, rng)) {
                            if (s.description.find("expanded") != std::string::npos) continue;
                            s.args.emplace_back(Scalar(3));
                            out.push_back(s);
                          }
                          return out;
                        },
                    .reference =
                        [](const Stack& a) {
                          const Tensor& x = a[0].tensor();
                          return std::vector<Tensor>{
                              map_unary_f64(x, x.dtype(), [](double) { return 3.0; })};
                        }});
  register_op_info(
      {.name = "full",
       .samples =
           [](ScalarType dt, std::mt19937_64&) {
             return std::vector<SampleInput>{
                 {{std::vector<int64_t>{2, 3}, Scalar(1), dt, Device::CPU}, "[2, 3] of 1"},
                 {{std::vector<int64_t>{0}, Scalar(1), dt, Device::CPU}, "[0]"},
                 {{std::vector<int64_t>{}, Scalar(0), dt, Device::CPU}, "0-dim"}};
           },
       .reference =
           [](const Stack& a) {
             std::vector<int64_t> shape = a[0].int_list().vec();
             int64_t n = 1;
             for (int64_t s : shape) n *= s;
             return std::vector<Tensor>{
                 from_vector(std::vector<double>(static_cast<size_t>(n), a[1].scalar().to_double()),
                             shape)
                     .to(a[2].dtype())};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{std::vector<int64_t>{2, -1}, Scalar(0), kFloat32, Device::CPU},
                  ErrorKind::Value,
                  "negative size"}};
           }});
  register_op_info(
      {.name = "arange",
       .samples =
           [](ScalarType dt, std::mt19937_64&) {
             return std::vector<SampleInput>{
                 {{Scalar(0), Scalar(10), Scalar(3), dt, Device::CPU}, "0:10:3"},
                 {{Scalar(5), Scalar(0), Scalar(-1), dt, Device::CPU}, "5:0:-1"},
                 {{Scalar(2), Scalar(2), Scalar(1), dt, Device::CPU}, "empty"}};
           },
       .reference =
           [](const Stack& a) {
             std::vector<double> v;
             const double start = a[0].scalar().to_double(), end = a[1].scalar().to_double(),
                          step = a[2].scalar().to_double();
             for (double x = start; step > 0 ? x < end : x > end; x += step) v.push_back(x);
             return std::vector<Tensor>{from_vector(v).to(a[3].dtype())};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{{{Scalar(0), Scalar(5), Scalar(0), kInt64, Device::CPU},
                                            ErrorKind::Value,
                                            "zero step"},
                                           {{Scalar(0), Scalar(5), Scalar(-1), kInt64, Device::CPU},
                                            ErrorKind::Value,
                                            "wrong step sign"}};
           }});
  return true;
}();

}  // namespace
}  // namespace kiln::testing
