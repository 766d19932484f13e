// torch:: functions over tensors (ATen's namespace in LibTorch): every function of namespace kiln
// is visible as torch::name (See Note [The torch:: front end] in kiln/torch.h); what LibTorch
// spells differently is declared here and forwards to Kiln: factories taking torch::TensorOptions
// (devices, `requires_grad`) and an int64_t size, allclose/equal, the grad-mode guards.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/generator.h"
#include "kiln/kiln.h"
#include "kiln/torch/types.h"

namespace torch {

// Kiln's API under LibTorch's names. A name also declared in namespace torch (the factories
// below, torch::nn, torch::optim, torch::data, torch::autograd) hides Kiln's: lookup finds a
// namespace's own declarations before those of a using-directive.
using namespace kiln;  // NOLINT(google-build-using-namespace)

// ---- factories: LibTorch's options (device, requires_grad) and sizes given as one integer ----

using SizesRef = kiln::SymIntArrayRef;

Tensor empty(SizesRef sizes, TensorOptions options = {});
Tensor zeros(SizesRef sizes, TensorOptions options = {});
Tensor ones(SizesRef sizes, TensorOptions options = {});
Tensor full(SizesRef sizes, const Scalar& value, TensorOptions options = {});
Tensor rand(IntArrayRef sizes, TensorOptions options = {});
Tensor randn(IntArrayRef sizes, TensorOptions options = {});
Tensor randint(int64_t high, IntArrayRef sizes, TensorOptions options = kInt64);
Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, TensorOptions options = kInt64);
Tensor randperm(int64_t n, TensorOptions options = kInt64);
// `torch::zeros(n)`: LibTorch's IntArrayRef converts from one integer. (A braced `{n}` would pick
// these overloads again, so they pass a one-element view.)
inline Tensor empty(int64_t n, TensorOptions options = {}) {
  const kiln::SymInt size(n);
  return torch::empty(SizesRef(&size, 1), options);
}
inline Tensor zeros(int64_t n, TensorOptions options = {}) {
  const kiln::SymInt size(n);
  return torch::zeros(SizesRef(&size, 1), options);
}
inline Tensor ones(int64_t n, TensorOptions options = {}) {
  const kiln::SymInt size(n);
  return torch::ones(SizesRef(&size, 1), options);
}
inline Tensor rand(int64_t n, TensorOptions options = {}) {
  return torch::rand(IntArrayRef(&n, 1), options);
}
inline Tensor randn(int64_t n, TensorOptions options = {}) {
  return torch::randn(IntArrayRef(&n, 1), options);
}
// A size read from a tensor (`torch::ones(x.size(0))`) is a SymInt.
inline Tensor empty(kiln::SymInt n, TensorOptions options = {}) {
  return torch::empty(SizesRef(&n, 1), options);
}
inline Tensor zeros(kiln::SymInt n, TensorOptions options = {}) {
  return torch::zeros(SizesRef(&n, 1), options);
}
inline Tensor ones(kiln::SymInt n, TensorOptions options = {}) {
  return torch::ones(SizesRef(&n, 1), options);
}
inline Tensor rand(kiln::SymInt n, TensorOptions options = {}) {
  return torch::rand(static_cast<int64_t>(n), options);
}
inline Tensor randn(kiln::SymInt n, TensorOptions options = {}) {
  return torch::randn(static_cast<int64_t>(n), options);
}

// arange: the dtype defaults as torch.arange (int64 for integer bounds, float32 otherwise).
Tensor arange(const Scalar& end, TensorOptions options = {});
Tensor arange(const Scalar& start, const Scalar& end, TensorOptions options = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step,
              TensorOptions options = {});
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions options = {});
Tensor eye(int64_t n, TensorOptions options = {});
Tensor eye(int64_t n, int64_t m, TensorOptions options = {});

// torch::tensor: a 1-D tensor from a braced list, or a 0-dim one from a number.
Tensor tensor(std::initializer_list<double> values, TensorOptions options = {});
Tensor tensor(std::initializer_list<float> values, TensorOptions options = {});
Tensor tensor(std::initializer_list<int64_t> values, TensorOptions options = kInt64);
Tensor tensor(std::initializer_list<int> values, TensorOptions options = kInt64);
Tensor tensor(double value, TensorOptions options = kFloat64);
Tensor tensor(float value, TensorOptions options = {});
Tensor tensor(int64_t value, TensorOptions options = kInt64);
Tensor tensor(int value, TensorOptions options = kInt64);
template <typename T>
Tensor tensor(const std::vector<T>& values, TensorOptions options = kiln::scalar_type_of<T>) {
  return kiln::from_vector(values).to(options.dtype());
}

Tensor empty_like(const Tensor& t, TensorOptions options = {});
Tensor zeros_like(const Tensor& t, TensorOptions options = {});
Tensor ones_like(const Tensor& t, TensorOptions options = {});
Tensor full_like(const Tensor& t, const Scalar& value, TensorOptions options = {});
Tensor rand_like(const Tensor& t, TensorOptions options = {});
Tensor randn_like(const Tensor& t, TensorOptions options = {});
Tensor from_blob(void* data, IntArrayRef sizes, TensorOptions options = {});

// ---- comparisons LibTorch returns as bool ----

// |a - b| <= atol + rtol * |b| everywhere (NaNs equal when equal_nan), shapes broadcasting.
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
              bool equal_nan = false);
// Same shape and the same values (torch::equal).
bool equal(const Tensor& a, const Tensor& b);

// ---- autograd modes ----

using kiln::GradMode;
using kiln::NoGradGuard;
// Sets grad mode to `enabled` for its scope (torch::AutoGradMode guard(false)).
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : saved_(GradMode::is_enabled()) {
    GradMode::set_enabled(enabled);
  }
  ~AutoGradMode() { GradMode::set_enabled(saved_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool saved_;
};

}  // namespace torch
