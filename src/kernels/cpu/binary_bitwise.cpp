// Bitwise, shift and logical kernels.
//
// Shifts follow Note [Shifts] in src/numerics/scalar_ops.inc (kiln::prim::lshift, rshift).
#include <type_traits>

#include "src/kernels/cpu/binary_loops.h"
#include "src/numerics/scalar_ops.h"

namespace kiln::cpu {

void binary_bitwise_kernel(std::string_view name, BinaryOp op, const Tensor& out, const Operand& a,
                           const Operand& b, ScalarType compute) {
  KILN_CHECK(is_integral_or_bool(compute), DTypeError,
             "{}: needs integer or bool operands, got compute dtype {}", name, dtype_name(compute));
  visit_dtype(compute, [&]<typename T>() {
    if constexpr (!is_floating_v<T>) {
      auto loop = [&](auto f) { binary_loop<T, T>(name, out, a, b, f); };
      switch (op) {
        case BinaryOp::BitwiseAnd:
          return loop([](T x, T y) { return static_cast<T>(x & y); });
        case BinaryOp::BitwiseOr:
          return loop([](T x, T y) { return static_cast<T>(x | y); });
        case BinaryOp::BitwiseXor:
          return loop([](T x, T y) { return static_cast<T>(x ^ y); });
        default:
          break;
      }
      if constexpr (!std::is_same_v<T, bool>) {
        if (op == BinaryOp::LeftShift) return loop(prim::lshift<T>);
        if (op == BinaryOp::RightShift) return loop(prim::rshift<T>);
      }
      throw DTypeError(fmt::format("{}: not defined for dtype {}", name, dtype_name(compute)));
    }
  });
}

void logical_kernel(std::string_view name, LogicalOp op, const Tensor& out, const Operand& a,
                    const Operand& b) {
  // Each operand's truth is taken in its own dtype (PyTorch's rule): logical_xor(int64 [0, 1],
  // float 0-dim 0.3) is [true, false]. Converting a single value to the other side's dtype first
  // would make 0.3 the integer 0 (kiln-fuzz seed 20261216 index 534). So the truth test runs in
  // the operands' dtype when they share it, and otherwise on both converted to bool.
  auto dtype_of = [](const Operand& x) {
    return x.is_scalar() ? x.scalar().natural_dtype() : x.tensor().dtype();
  };
  const ScalarType common = dtype_of(a) == dtype_of(b) ? dtype_of(a) : kBool;
  visit_dtype(common, [&]<typename T>() {
    auto loop = [&](auto f) { binary_loop<bool, T>(name, out, a, b, f); };
    auto truth = [](T x) { return cast_value<bool>(x); };
    switch (op) {
      case LogicalOp::And:
        return loop([truth](T x, T y) { return truth(x) && truth(y); });
      case LogicalOp::Or:
        return loop([truth](T x, T y) { return truth(x) || truth(y); });
      case LogicalOp::Xor:
        return loop([truth](T x, T y) { return truth(x) != truth(y); });
    }
  });
}

}  // namespace kiln::cpu
