// Pointwise ops with a condition, bounds or a second operand pair: where, clamp, lerp, addcmul,
// addcdiv, masked_fill, as torch.<name>. Operands broadcast; value operands promote as in
// PyTorch (tensors over 0-dim tensors over Scalars).
#pragma once

#include <optional>

#include "kiln/tensor.h"

namespace kiln {

// condition ? self : other, elementwise. condition must be bool.
Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other);
Tensor where(const Tensor& condition, const Scalar& self, const Tensor& other);
Tensor where(const Tensor& condition, const Tensor& self, const Scalar& other);
Tensor where(const Tensor& condition, const Scalar& self, const Scalar& other);

// min(max(self, min), max); at least one bound. A bound promotes the result (an int tensor
// clamped to 0.5 is float32). NaN in self or a bound gives NaN.
Tensor clamp(const Tensor& self, std::optional<Scalar> min,
             std::optional<Scalar> max = std::nullopt);
// Tensor bounds (broadcast with self); an undefined Tensor means no bound.
Tensor clamp(const Tensor& self, const Tensor& min, const Tensor& max);

// start + weight * (end - start); floating only, start and end of the same dtype.
Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight);
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);

// self + value * tensor1 * tensor2
Tensor addcmul(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
               const Scalar& value = 1);
// self + value * tensor1 / tensor2 (floating: integer tensor1 and tensor2 are an error, as in
// PyTorch; use div with a rounding mode instead).
Tensor addcdiv(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
               const Scalar& value = 1);

// self with `value` where mask (bool) is true; the result has the broadcast shape of both.
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value);

}  // namespace kiln
