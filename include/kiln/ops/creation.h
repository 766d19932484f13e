// Tensor factories, as in LibTorch: kiln::zeros({2, 3}, kiln::kUInt16).
#pragma once

#include <concepts>
#include <optional>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

Tensor empty(SymIntArrayRef sizes, TensorOptions options = {});
Tensor zeros(SymIntArrayRef sizes, TensorOptions options = {});
Tensor ones(SymIntArrayRef sizes, TensorOptions options = {});
Tensor full(SymIntArrayRef sizes, const Scalar& value, TensorOptions options = {});
// [start, end) in steps of `step`. The dtype defaults to int64 when all bounds are integers and
// to float32 otherwise, as torch.arange.
Tensor arange(const Scalar& end, std::optional<TensorOptions> options = std::nullopt);
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1,
              std::optional<TensorOptions> options = std::nullopt);
// arange over SymInt bounds (`arange(x.size(0))` while tracing stays symbolic); the step must be
// concrete. The templates take a SymInt argument exactly, so integer literals still pick the
// Scalar overloads above.
Tensor sym_arange(SymInt start, SymInt end, SymInt step = 1,
                  std::optional<TensorOptions> options = std::nullopt);
template <std::same_as<SymInt> S>
Tensor arange(S end, std::optional<TensorOptions> options = std::nullopt) {
  return sym_arange(0, end, 1, options);
}
template <std::same_as<SymInt> S>
Tensor arange(int64_t start, S end, std::optional<TensorOptions> options = std::nullopt) {
  return sym_arange(start, end, 1, options);
}
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions options = {});
Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, TensorOptions options = {});

Tensor empty_like(const Tensor& t, std::optional<ScalarType> dtype = std::nullopt);
Tensor zeros_like(const Tensor& t, std::optional<ScalarType> dtype = std::nullopt);
Tensor ones_like(const Tensor& t, std::optional<ScalarType> dtype = std::nullopt);
Tensor full_like(const Tensor& t, const Scalar& value,
                 std::optional<ScalarType> dtype = std::nullopt);

// A tensor holding a copy of `values` with the given shape (default: 1-D).
template <typename T>
Tensor from_vector(const std::vector<T>& values,
                   std::optional<std::vector<int64_t>> sizes = std::nullopt);
// A 1-D tensor from a braced list: kiln::tensor({1.0, 2.0}, kFloat64). Values convert to dtype.
Tensor tensor(std::initializer_list<double> values, ScalarType dtype = kFloat32);
Tensor tensor(std::initializer_list<int64_t> values, ScalarType dtype = kInt64);
Tensor tensor(std::initializer_list<int> values, ScalarType dtype = kInt64);
// A 0-dim tensor.
Tensor scalar_tensor(const Scalar& value, std::optional<ScalarType> dtype = std::nullopt);
// Wraps memory owned by the caller (no copy); it must outlive the tensor.
Tensor from_blob(void* data, IntArrayRef sizes, ScalarType dtype);

}  // namespace kiln
