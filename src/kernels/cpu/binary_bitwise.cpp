// Bitwise, shift and logical kernels.
//
// Note [Shifts]
// C++ leaves shifting by a negative amount or by >= the bit width undefined. Kiln defines it
// as PyTorch does: a left shift by such an amount gives 0; a right shift gives 0 for
// non-negative values and -1 for negative signed values (all sign bits). Right shifts are
// arithmetic for signed dtypes and logical for unsigned ones (uint32 0x80000000 >> 31 == 1).
// Left shifts run on the unsigned type so shifting bits out of a signed value is not UB.
#include <type_traits>

#include "src/kernels/cpu/binary_loops.h"

namespace kiln::cpu {
namespace {

template <typename T>
inline T shift_left(T x, T s) {
  constexpr int kBits = static_cast<int>(sizeof(T) * 8);
  if constexpr (std::is_signed_v<T>) {
    if (s < 0) return 0;
  }
  if (s >= static_cast<T>(kBits)) return 0;
  using W = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;
  return static_cast<T>(
      static_cast<W>(static_cast<W>(static_cast<std::make_unsigned_t<T>>(x)) << s));
}

template <typename T>
inline T shift_right(T x, T s) {
  constexpr int kBits = static_cast<int>(sizeof(T) * 8);
  if constexpr (std::is_signed_v<T>) {
    if (s < 0 || s >= static_cast<T>(kBits)) return x < 0 ? T(-1) : T(0);
    return static_cast<T>(x >> s);  // arithmetic (C++20)
  } else {
    if (s >= static_cast<T>(kBits)) return 0;
    return static_cast<T>(x >> s);
  }
}

}  // namespace

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
        if (op == BinaryOp::LeftShift) return loop(shift_left<T>);
        if (op == BinaryOp::RightShift) return loop(shift_right<T>);
      }
      throw DTypeError(fmt::format("{}: not defined for dtype {}", name, dtype_name(compute)));
    }
  });
}

void logical_kernel(std::string_view name, LogicalOp op, const Tensor& out, const Operand& a,
                    const Operand& b) {
  // Same dtype on both sides (or a single value on one): test truth in that dtype. Otherwise
  // convert both to bool first.
  auto dtype_of = [](const Operand& x) {
    return x.is_scalar() ? x.scalar().natural_dtype() : x.tensor().dtype();
  };
  ScalarType common = kBool;
  if (a.is_single() && !b.is_single())
    common = dtype_of(b);
  else if (!a.is_single() && b.is_single())
    common = dtype_of(a);
  else if (!a.is_scalar() && !b.is_scalar() && a.tensor().dtype() == b.tensor().dtype())
    common = dtype_of(a);
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
