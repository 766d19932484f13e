#include "kiln/torch/tensor_ops.h"

namespace torch {

Tensor empty(SizesRef sizes, TensorOptions options) {
  return kiln::empty(sizes, options.kiln_options());
}
Tensor zeros(SizesRef sizes, TensorOptions options) {
  return kiln::zeros(sizes, options.kiln_options());
}
Tensor ones(SizesRef sizes, TensorOptions options) {
  return kiln::ones(sizes, options.kiln_options());
}
Tensor full(SizesRef sizes, const Scalar& value, TensorOptions options) {
  // As torch.full: the dtype follows the value when none is given (int64 for an integer).
  const ScalarType fallback = value.is_bool() ? kBool : value.is_integral() ? kInt64 : kFloat32;
  return kiln::full(sizes, value, options.kiln_options(fallback));
}
Tensor rand(IntArrayRef sizes, TensorOptions options) {
  return kiln::rand(sizes, options.kiln_options());
}
Tensor randn(IntArrayRef sizes, TensorOptions options) {
  return kiln::randn(sizes, options.kiln_options());
}
Tensor randint(int64_t high, IntArrayRef sizes, TensorOptions options) {
  return kiln::randint(0, high, sizes, options.kiln_options(kInt64));
}
Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, TensorOptions options) {
  return kiln::randint(low, high, sizes, options.kiln_options(kInt64));
}
Tensor randperm(int64_t n, TensorOptions options) {
  KILN_CHECK(n >= 0, ValueError, "randperm: n must be >= 0, got {}", n);
  // The order of n float64 draws: a uniform permutation (ties have probability ~n^2 / 2^54).
  const kiln::TensorOptions o = options.kiln_options(kInt64);
  Tensor order = kiln::argsort(kiln::rand({n}, kiln::kFloat64), 0, false, true);
  return o.requires_grad_ ? order.to(o.dtype_).requires_grad_() : order.to(o.dtype_);
}

Tensor arange(const Scalar& end, TensorOptions options) {
  return torch::arange(0, end, 1, options);
}
Tensor arange(const Scalar& start, const Scalar& end, TensorOptions options) {
  return torch::arange(start, end, 1, options);
}
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions options) {
  const bool integral = start.is_integral() && end.is_integral() && step.is_integral();
  return kiln::arange(start, end, step, options.kiln_options(integral ? kInt64 : kFloat32));
}
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions options) {
  return kiln::linspace(start, end, steps, options.kiln_options());
}
Tensor eye(int64_t n, TensorOptions options) {
  return kiln::eye(n, std::nullopt, options.kiln_options());
}
Tensor eye(int64_t n, int64_t m, TensorOptions options) {
  return kiln::eye(n, m, options.kiln_options());
}

namespace {
Tensor with_options(Tensor t, const TensorOptions& options) {
  const kiln::TensorOptions o = options.kiln_options(t.dtype());
  if (o.dtype_ != t.dtype()) t = t.to(o.dtype_);
  if (o.requires_grad_) t.requires_grad_();
  return t;
}
}  // namespace

Tensor tensor(std::initializer_list<double> values, TensorOptions options) {
  return with_options(kiln::tensor(values, options.dtype()), options);
}
Tensor tensor(std::initializer_list<float> values, TensorOptions options) {
  return with_options(kiln::from_vector(std::vector<float>(values)), options);
}
Tensor tensor(std::initializer_list<int64_t> values, TensorOptions options) {
  return with_options(kiln::tensor(values, options.dtype()), options);
}
Tensor tensor(std::initializer_list<int> values, TensorOptions options) {
  return with_options(kiln::tensor(values, options.dtype()), options);
}
Tensor tensor(double value, TensorOptions options) {
  return with_options(kiln::scalar_tensor(value, options.dtype()), options);
}
Tensor tensor(float value, TensorOptions options) {
  return with_options(kiln::scalar_tensor(value, options.dtype()), options);
}
Tensor tensor(int64_t value, TensorOptions options) {
  return with_options(kiln::scalar_tensor(value, options.dtype()), options);
}
Tensor tensor(int value, TensorOptions options) {
  return with_options(kiln::scalar_tensor(int64_t{value}, options.dtype()), options);
}

Tensor empty_like(const Tensor& t, TensorOptions options) {
  return torch::empty(t.sym_sizes(), options.has_dtype() ? options : options.dtype(t.dtype()));
}
Tensor zeros_like(const Tensor& t, TensorOptions options) {
  return torch::zeros(t.sym_sizes(), options.has_dtype() ? options : options.dtype(t.dtype()));
}
Tensor ones_like(const Tensor& t, TensorOptions options) {
  return torch::ones(t.sym_sizes(), options.has_dtype() ? options : options.dtype(t.dtype()));
}
Tensor full_like(const Tensor& t, const Scalar& value, TensorOptions options) {
  return torch::full(t.sym_sizes(), value,
                     options.has_dtype() ? options : options.dtype(t.dtype()));
}
Tensor rand_like(const Tensor& t, TensorOptions options) {
  return torch::rand(t.sizes(), options.has_dtype() ? options : options.dtype(t.dtype()));
}
Tensor randn_like(const Tensor& t, TensorOptions options) {
  return torch::randn(t.sizes(), options.has_dtype() ? options : options.dtype(t.dtype()));
}
Tensor from_blob(void* data, IntArrayRef sizes, TensorOptions options) {
  return with_options(kiln::from_blob(data, sizes, options.dtype()), options);
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  const Tensor x = a.to(kiln::kFloat64), y = b.to(kiln::kFloat64);
  Tensor close = (x - y).abs() <= (y.abs() * rtol + atol);
  if (equal_nan) close = kiln::logical_or(close, kiln::logical_and(x.isnan(), y.isnan()));
  return close.all().item<bool>();
}

bool equal(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes()) return false;
  return (a == b).all().item<bool>();
}

}  // namespace torch
