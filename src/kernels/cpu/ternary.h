// CPU kernels of where, clamp, lerp, addcmul, addcdiv and masked_fill (src/ops/ternary.cpp).
// Value operands are converted to out's dtype (the compute dtype) first; condition and mask
// operands are bool. All operands broadcast to out's shape.
#pragma once

#include <optional>

#include "kiln/tensor.h"

namespace kiln::cpu {

void where_kernel(const Tensor& out, const Tensor& cond, const Tensor& self, const Tensor& other);
// An undefined bound is absent.
void clamp_kernel(const Tensor& out, const Tensor& self, const Tensor& min, const Tensor& max);
void clamp_scalar_kernel(const Tensor& out, const Tensor& self, const std::optional<Scalar>& min,
                         const std::optional<Scalar>& max);
void lerp_kernel(const Tensor& out, const Tensor& start, const Tensor& end, const Tensor& weight);
void lerp_scalar_kernel(const Tensor& out, const Tensor& start, const Tensor& end,
                        const Scalar& weight);
void addcmul_kernel(const Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2,
                    const Scalar& value);
void addcdiv_kernel(const Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2,
                    const Scalar& value);
void masked_fill_kernel(const Tensor& out, const Tensor& self, const Tensor& mask,
                        const Scalar& value);

}  // namespace kiln::cpu
