// OpInfos for the matrix products: mm, bmm, addmm, matmul, linear.
#include "tests/ops/linalg_ref.h"

namespace kiln::testing {
namespace {

using Shape = std::vector<int64_t>;

// Sums of products grow with k; float32 needs a little more room than the pointwise default.
std::pair<double, double> product_tolerance(ScalarType dt) {
  if (dt == kFloat32) return {1e-4, 1e-5};
  if (dt == kFloat64) return {1e-10, 1e-10};
  return default_tolerance(dt);
}

Tensor mk(Shape s, ScalarType dt, std::mt19937_64& rng, Layout layout = Layout::Contiguous) {
  return make_tensor(s, dt, rng, -5, 5, layout, /*full_range=*/true);
}

// Values large enough that sums of products wrap in 8- and 16-bit dtypes.
Tensor mk_large(Shape s, ScalarType dt, std::mt19937_64& rng) {
  return make_tensor(s, dt, rng, -120, 120, Layout::Contiguous, true);
}

std::vector<SampleInput> mm_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back({{mk({3, 4}, dt, rng), mk({4, 5}, dt, rng)}, "[3, 4] x [4, 5]"});
  s.push_back({{mk({4, 3}, dt, rng).t(), mk({4, 5}, dt, rng)}, "transposed mat1"});
  s.push_back({{mk({3, 4}, dt, rng), mk({5, 4}, dt, rng).t()}, "transposed mat2"});
  s.push_back({{mk({4, 3}, dt, rng).t(), mk({5, 4}, dt, rng).t()}, "both transposed"});
  s.push_back(
      {{mk({3, 4}, dt, rng, Layout::NonContiguous), mk({4, 5}, dt, rng, Layout::NonContiguous)},
       "non-contiguous (every other column)"});
  s.push_back({{mk({3, 4}, dt, rng, Layout::Expanded), mk({4, 5}, dt, rng)}, "expanded rows"});
  s.push_back({{mk({1, 4}, dt, rng), mk({4, 1}, dt, rng)}, "[1, 4] x [4, 1]"});
  s.push_back({{mk({0, 4}, dt, rng), mk({4, 5}, dt, rng)}, "zero rows"});
  s.push_back({{mk({3, 0}, dt, rng), mk({0, 5}, dt, rng)}, "k = 0 gives zeros"});
  s.push_back({{mk_large({6, 7}, dt, rng), mk_large({7, 5}, dt, rng)}, "large values (wrap)"});
  s.push_back({{mk({37, 70}, dt, rng), mk({70, 530}, dt, rng)}, "[37, 70] x [70, 530] (threaded)"});
  return s;
}

std::vector<SampleInput> bmm_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back({{mk({2, 3, 4}, dt, rng), mk({2, 4, 5}, dt, rng)}, "[2, 3, 4] x [2, 4, 5]"});
  s.push_back({{mk({2, 4, 3}, dt, rng).transpose(1, 2), mk({2, 5, 4}, dt, rng).transpose(1, 2)},
               "transposed matrices"});
  s.push_back(
      {{mk({3, 2, 4}, dt, rng).transpose(0, 1), mk({2, 4, 5}, dt, rng)}, "permuted batch dim"});
  s.push_back({{mk({2, 3, 4}, dt, rng, Layout::Expanded), mk({2, 4, 5}, dt, rng)},
               "expanded batch (stride 0)"});
  s.push_back(
      {{mk({2, 3, 4}, dt, rng, Layout::NonContiguous), mk({2, 4, 5}, dt, rng)}, "non-contiguous"});
  s.push_back({{mk({0, 3, 4}, dt, rng), mk({0, 4, 5}, dt, rng)}, "zero batch"});
  s.push_back({{mk({2, 3, 0}, dt, rng), mk({2, 0, 5}, dt, rng)}, "k = 0"});
  s.push_back({{mk({80, 8, 8}, dt, rng), mk({80, 8, 8}, dt, rng)}, "many small (batch-parallel)"});
  return s;
}

std::vector<SampleInput> addmm_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back(
      {{mk({3, 5}, dt, rng), mk({3, 4}, dt, rng), mk({4, 5}, dt, rng), Scalar(1), Scalar(1)},
       "defaults"});
  s.push_back(
      {{mk({5}, dt, rng), mk({4, 3}, dt, rng).t(), mk({4, 5}, dt, rng), Scalar(2), Scalar(-3)},
       "row bias, beta 2, alpha -3"});
  s.push_back(
      {{mk({3, 1}, dt, rng), mk({3, 4}, dt, rng), mk({4, 5}, dt, rng), Scalar(1), Scalar(1)},
       "column bias"});
  s.push_back({{mk({}, dt, rng), mk({3, 4}, dt, rng), mk({4, 5}, dt, rng), Scalar(0), Scalar(1)},
               "0-dim self, beta 0"});
  s.push_back(
      {{mk({3, 5}, dt, rng), mk({3, 0}, dt, rng), mk({0, 5}, dt, rng), Scalar(3), Scalar(1)},
       "k = 0: beta * self"});
  if (is_floating(dt))
    s.push_back(
        {{mk({3, 5}, dt, rng), mk({3, 4}, dt, rng), mk({4, 5}, dt, rng), Scalar(0.5), Scalar(0.25)},
         "float beta and alpha"});
  return s;
}

std::vector<SampleInput> matmul_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back({{mk({4}, dt, rng), mk({4}, dt, rng)}, "1-D dot"});
  s.push_back({{mk({3, 4}, dt, rng), mk({4}, dt, rng)}, "matrix x vector"});
  s.push_back({{mk({4}, dt, rng), mk({4, 5}, dt, rng)}, "vector x matrix"});
  s.push_back({{mk({3, 4}, dt, rng), mk({5, 4}, dt, rng).t()}, "2-D x transposed 2-D"});
  s.push_back({{mk({2, 3, 4}, dt, rng), mk({4, 5}, dt, rng)}, "3-D x 2-D (folded)"});
  s.push_back({{mk({2, 3, 4}, dt, rng).transpose(0, 1), mk({4}, dt, rng)}, "3-D non-contig x 1-D"});
  s.push_back({{mk({4}, dt, rng), mk({2, 4, 5}, dt, rng)}, "1-D x 3-D"});
  s.push_back({{mk({3, 4}, dt, rng), mk({2, 4, 5}, dt, rng)}, "2-D x 3-D"});
  s.push_back(
      {{mk({2, 1, 3, 4}, dt, rng), mk({5, 4, 2}, dt, rng)}, "batch broadcast [2,1] with [5]"});
  s.push_back({{mk({2, 3, 4}, dt, rng, Layout::Expanded), mk({1, 4, 2}, dt, rng)},
               "expanded batch x size-1 batch"});
  s.push_back({{mk({0, 3, 4}, dt, rng), mk({4, 2}, dt, rng)}, "zero batch x 2-D"});
  s.push_back({{mk({0, 3, 4}, dt, rng), mk({1, 4, 2}, dt, rng)}, "zero batch x broadcast"});
  s.push_back({{mk({2, 3, 0}, dt, rng), mk({0, 5}, dt, rng)}, "3-D x 2-D with k = 0"});
  return s;
}

std::vector<SampleInput> linear_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back({{mk({3, 4}, dt, rng), mk({5, 4}, dt, rng), mk({5}, dt, rng)}, "2-D with bias"});
  s.push_back({{mk({3, 4}, dt, rng), mk({5, 4}, dt, rng), IValue()}, "2-D without bias"});
  s.push_back({{mk({2, 3, 4}, dt, rng), mk({5, 4}, dt, rng), mk({5}, dt, rng)}, "3-D input"});
  s.push_back({{mk({4}, dt, rng), mk({5, 4}, dt, rng), mk({5}, dt, rng)}, "1-D input"});
  s.push_back({{mk({3, 2, 4}, dt, rng).transpose(0, 1), mk({4, 5}, dt, rng).t(), IValue()},
               "non-contiguous input and weight"});
  s.push_back({{mk({0, 4}, dt, rng), mk({5, 4}, dt, rng), mk({5}, dt, rng)}, "zero batch"});
  s.push_back(
      {{mk({2, 3, 0}, dt, rng), mk({5, 0}, dt, rng), mk({5}, dt, rng)}, "in_features 0: bias"});
  s.push_back({{mk({2, 3, 4}, dt, rng), mk({0, 4}, dt, rng), IValue()}, "out_features 0"});
  return s;
}

RefValues t_of(const RefValues& m) {  // transpose of a 2-D RefValues
  RefValues r = m;
  const int64_t rows = m.shape[0], cols = m.shape[1];
  r.shape = {cols, rows};
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const size_t from = static_cast<size_t>(i * cols + j), to = static_cast<size_t>(j * rows + i);
      if (m.floating) {
        r.f[to] = m.f[from];
      } else {
        r.u[to] = m.u[from];
      }
    }
  return r;
}

// out = beta * broadcast(self) + alpha * prod, in place on prod.
void add_scaled(RefValues& prod, const RefValues& self, const Scalar& beta, const Scalar& alpha) {
  const int64_t rows = prod.shape[0], cols = prod.shape[1];
  const auto& ss = self.shape;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      int64_t si = 0;
      if (ss.size() == 2) si = (ss[0] == 1 ? 0 : i) * ss[1] + (ss[1] == 1 ? 0 : j);
      if (ss.size() == 1) si = ss[0] == 1 ? 0 : j;
      const size_t o = static_cast<size_t>(i * cols + j);
      if (prod.floating) {
        const double sv = beta.to_double() == 0 ? 0.0 : beta.to_double() * self.f[si];
        prod.f[o] = sv + alpha.to_double() * prod.f[o];
      } else {
        const uint64_t b = static_cast<uint64_t>(beta.to_int64()),
                       a = static_cast<uint64_t>(alpha.to_int64());
        prod.u[o] = b * self.u[si] + a * prod.u[o];
      }
    }
}

std::vector<ErrorCase> mm_errors() {
  return {{{zeros({2, 3}), zeros({4, 5})}, ErrorKind::Shape, "inner dims 3 != 4"},
          {{zeros({2, 3, 4}), zeros({4, 5})}, ErrorKind::Shape, "3-D self"},
          {{zeros({3}), zeros({3, 5})}, ErrorKind::Shape, "1-D self"},
          {{zeros({2, 3}), zeros({3, 5}, kFloat64)}, ErrorKind::DType, "float32 x float64"},
          {{zeros({2, 3}, kBool), zeros({3, 5}, kBool)}, ErrorKind::DType, "bool"}};
}

const bool registered = [] {
  register_op_info(
      {.name = "mm",
       .samples = mm_samples,
       .reference =
           [](const Stack& a) {
             return std::vector<Tensor>{ref_tensor(
                 ref_batched_matmul(ref_values(a[0].tensor()), ref_values(a[1].tensor())),
                 a[0].tensor().dtype())};
           },
       .error_cases = mm_errors,
       .tolerance = product_tolerance});
  register_op_info(
      {.name = "bmm",
       .samples = bmm_samples,
       .reference =
           [](const Stack& a) {
             return std::vector<Tensor>{ref_tensor(
                 ref_batched_matmul(ref_values(a[0].tensor()), ref_values(a[1].tensor())),
                 a[0].tensor().dtype())};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({2, 3, 4}), zeros({3, 4, 5})}, ErrorKind::Shape, "batch 2 != 3"},
                 {{zeros({2, 3, 4}), zeros({2, 5, 5})}, ErrorKind::Shape, "inner 4 != 5"},
                 {{zeros({3, 4}), zeros({4, 5})}, ErrorKind::Shape, "2-D operands"},
                 {{zeros({2, 3, 4}, kInt32), zeros({2, 4, 5})},
                  ErrorKind::DType,
                  "int32 x float32"}};
           },
       .tolerance = product_tolerance});
  register_op_info(
      {.name = "addmm",
       .samples = addmm_samples,
       .reference =
           [](const Stack& a) {
             RefValues prod =
                 ref_batched_matmul(ref_values(a[1].tensor()), ref_values(a[2].tensor()));
             add_scaled(prod, ref_values(a[0].tensor()), a[3].scalar(), a[4].scalar());
             return std::vector<Tensor>{ref_tensor(prod, a[1].tensor().dtype())};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({2, 5}), zeros({2, 3}), zeros({4, 5}), Scalar(1), Scalar(1)},
                  ErrorKind::Shape,
                  "inner"},
                 {{zeros({3, 5}), zeros({2, 3}), zeros({3, 5}), Scalar(1), Scalar(1)},
                  ErrorKind::Shape,
                  "self [3, 5] vs product [2, 5]"},
                 {{zeros({2, 5}, kInt32), zeros({2, 3}, kInt32), zeros({3, 5}, kInt32), Scalar(0.5),
                   Scalar(1)},
                  ErrorKind::DType,
                  "float beta with int32"},
                 {{zeros({2, 5}, kFloat64), zeros({2, 3}), zeros({3, 5}), Scalar(1), Scalar(1)},
                  ErrorKind::DType,
                  "self float64, mats float32"}};
           },
       .tolerance = product_tolerance});
  register_op_info(
      {.name = "matmul",
       .samples = matmul_samples,
       .reference =
           [](const Stack& a) {
             RefValues x = ref_values(a[0].tensor()), y = ref_values(a[1].tensor());
             const bool x1 = x.shape.size() == 1, y1 = y.shape.size() == 1;
             if (x1) x.shape.insert(x.shape.begin(), 1);
             if (y1) y.shape.push_back(1);
             RefValues r = ref_batched_matmul(x, y);
             if (y1) r.shape.pop_back();
             if (x1) r.shape.erase(r.shape.end() - (y1 ? 1 : 2));
             return std::vector<Tensor>{ref_tensor(r, a[0].tensor().dtype())};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({3}), zeros({4})}, ErrorKind::Shape, "dot of 3 and 4"},
                 {{zeros({2, 3, 4}), zeros({5, 2})}, ErrorKind::Shape, "inner"},
                 {{zeros({2, 3, 4}), zeros({3, 4, 2})}, ErrorKind::Shape, "batch 2 vs 3"},
                 {{zeros({}), zeros({4})}, ErrorKind::Shape, "0-dim"},
                 {{zeros({2, 3}), zeros({3}, kFloat64)}, ErrorKind::DType, "mixed dtypes"}};
           },
       .tolerance = product_tolerance});
  register_op_info(
      {.name = "linear",
       .samples = linear_samples,
       .reference =
           [](const Stack& a) {
             RefValues x = ref_values(a[0].tensor()), w = t_of(ref_values(a[1].tensor()));
             const std::vector<int64_t> in_shape = x.shape;
             const int64_t in = in_shape.back();
             x.shape = {numel_of(Shape(in_shape.begin(), in_shape.end() - 1)), in};
             RefValues r = ref_batched_matmul(x, w);
             if (!a[2].is_none()) add_scaled(r, ref_values(a[2].tensor()), Scalar(1), Scalar(1));
             r.shape = in_shape;
             r.shape.back() = w.shape[1];
             return std::vector<Tensor>{ref_tensor(r, a[0].tensor().dtype())};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{zeros({3, 4}), zeros({5, 3}), IValue()}, ErrorKind::Shape, "in_features 4 vs 3"},
                 {{zeros({3, 4}), zeros({4}), IValue()}, ErrorKind::Shape, "1-D weight"},
                 {{zeros({3, 4}), zeros({5, 4}), zeros({4})}, ErrorKind::Shape, "bias size"},
                 {{zeros({3, 4}), zeros({5, 4}, kFloat64), IValue()}, ErrorKind::DType, "mixed"}};
           },
       .tolerance = product_tolerance});
  return true;
}();

}  // namespace
}  // namespace kiln::testing
