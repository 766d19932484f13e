// CPU kernels of the binary pointwise ops (src/ops/binary_*.cpp). Meta has already chosen the
// compute dtype and created the output; a kernel converts each operand to the compute dtype
// (see Note [Pointwise dtype handling] in src/ops/pointwise_utils.h) and fills the output.
#pragma once

#include <cstdint>
#include <string_view>

#include "kiln/tensor.h"

namespace kiln::cpu {

// One input of a binary kernel: a tensor, or a Scalar (the `2` in `t * 2`). A one-element
// operand (a Scalar, a 0-dim tensor, a wrapped number) is read once and held in a register.
class Operand {
 public:
  Operand(const Tensor& t) : tensor_(&t) {}  // NOLINT: implicit on purpose
  Operand(const Scalar& s) : scalar_(s) {}   // NOLINT
  bool is_scalar() const { return tensor_ == nullptr; }
  const Tensor& tensor() const { return *tensor_; }
  const Scalar& scalar() const { return scalar_; }
  // One value, broadcast against everything.
  bool is_single() const { return tensor_ == nullptr || tensor_->numel() == 1; }
  bool is_integer_valued() const {
    return tensor_ == nullptr ? !scalar_.is_floating()
                              : kiln::is_integral_or_bool(tensor_->dtype());
  }
  // The single value converted to T (cast_value semantics). Requires is_single().
  template <typename T>
  T value() const;
  // The exact single integer value as a 128-bit integer. Requires is_single() and an integral
  // or bool operand.
  __int128 exact_integer() const;

 private:
  const Tensor* tensor_ = nullptr;
  Scalar scalar_;
};

enum class BinaryOp : uint8_t {
  Add,  // a + alpha * b
  Sub,  // a - alpha * b
  Mul,
  Div,  // true division (floating compute dtypes only)
  DivFloor,
  DivTrunc,
  Remainder,  // sign of the divisor (Python %)
  Fmod,       // sign of the dividend (C fmod)
  Pow,
  Maximum,
  Minimum,
  Atan2,
  Hypot,
  BitwiseAnd,
  BitwiseOr,
  BitwiseXor,
  LeftShift,
  RightShift,
};

enum class CompareOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge };
enum class LogicalOp : uint8_t { And, Or, Xor };

// out = op(a, b) computed in `compute` (out's dtype may differ: it is cast element-wise then).
// alpha is used by Add and Sub. Integer division by zero raises ValueError before any element
// is written. `name` names the op in errors.
void binary_kernel(std::string_view name, BinaryOp op, const Tensor& out, const Operand& a,
                   const Operand& b, ScalarType compute, const Scalar& alpha = 1);

// out (bool) = a <op> b, comparing the mathematical values; see Note [Exact comparisons].
void compare_kernel(std::string_view name, CompareOp op, const Tensor& out, const Operand& a,
                    const Operand& b, ScalarType compute);

// out (bool) = truth(a) <op> truth(b).
void logical_kernel(std::string_view name, LogicalOp op, const Tensor& out, const Operand& a,
                    const Operand& b);

}  // namespace kiln::cpu
