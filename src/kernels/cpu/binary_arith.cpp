// Arithmetic binary kernels: add, sub, mul, div (true, floor, trunc), remainder, fmod, pow,
// maximum, minimum, atan2, hypot.
//
// Integer add/sub/mul wrap (Note [Integer arithmetic without UB] in src/numerics/scalar_ops.inc).
// Division checks its divisor for zero before the loop (ValueError, never a SIGFPE).
#include <cmath>
#include <limits>
#include <type_traits>

#include "src/core/tensor_factory.h"
#include "src/kernels/cpu/binary_loops.h"
#include "src/kernels/cpu/copy.h"
#include "src/numerics/scalar_ops.h"

namespace kiln::cpu {

__int128 Operand::exact_integer() const {
  if (tensor_ == nullptr) {
    if (scalar_.kind() == Scalar::Kind::UInt) return static_cast<__int128>(scalar_.to_uint64());
    return static_cast<__int128>(scalar_.to_int64());
  }
  return visit_dtype(tensor_->dtype(), [&]<typename S>() -> __int128 {
    if constexpr (is_floating_v<S>) {
      return 0;  // not reached: callers check the operand is integral
    } else {
      return static_cast<__int128>(*static_cast<const S*>(tensor_->data_ptr()));
    }
  });
}

namespace {

// The scalar semantics are the primitives' (Note [One definition of a primitive's semantics] in
// src/numerics/scalar_ops.h); divisors are checked for zero before a loop runs.
using prim::wrap_add, prim::wrap_mul, prim::wrap_sub;

// Runs a floating op in opmath (float for Half/BFloat16).
template <typename T, typename F>
void float_loop(std::string_view name, const Tensor& out, const Operand& a, const Operand& b,
                const F& f) {
  using M = opmath_t<T>;
  binary_loop<T, T>(name, out, a, b, [f](T x, T y) { return T(f(M(x), M(y))); });
}

template <typename T>
void float_kernel(std::string_view name, BinaryOp op, const Tensor& out, const Operand& a,
                  const Operand& b, const Scalar& alpha) {
  using M = opmath_t<T>;
  switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Sub: {
      M s = alpha.to<M>();
      if (op == BinaryOp::Sub) s = -s;
      if (s == M(1)) return float_loop<T>(name, out, a, b, [](M x, M y) { return x + y; });
      return float_loop<T>(name, out, a, b, [s](M x, M y) { return x + s * y; });
    }
    case BinaryOp::Mul:
      return float_loop<T>(name, out, a, b, [](M x, M y) { return x * y; });
    case BinaryOp::Div:
      return float_loop<T>(name, out, a, b, [](M x, M y) { return x / y; });
    case BinaryOp::DivFloor:
      return float_loop<T>(name, out, a, b, prim::floordiv<M>);
    case BinaryOp::DivTrunc:
      return float_loop<T>(name, out, a, b, [](M x, M y) { return std::trunc(x / y); });
    case BinaryOp::Remainder:
      return float_loop<T>(name, out, a, b, prim::remainder<M>);
    case BinaryOp::Fmod:
      return float_loop<T>(name, out, a, b, [](M x, M y) { return std::fmod(x, y); });
    case BinaryOp::Pow:
      // Note [Power of one half]: as PyTorch, a Scalar exponent of 0.5 is sqrt and -0.5 is
      // 1 / sqrt, which differ from pow at -inf (NaN, where pow gives inf) and at -0.0.
      if (b.is_scalar() && b.scalar().is_floating()) {
        const double e = b.scalar().to_double();
        if (e == 0.5) return float_loop<T>(name, out, a, b, [](M x, M) { return std::sqrt(x); });
        if (e == -0.5)
          return float_loop<T>(name, out, a, b, [](M x, M) { return M(1) / std::sqrt(x); });
      }
      return float_loop<T>(name, out, a, b, [](M x, M y) { return std::pow(x, y); });
    case BinaryOp::Maximum:
      return float_loop<T>(name, out, a, b, prim::maximum<M>);
    case BinaryOp::Minimum:
      return float_loop<T>(name, out, a, b, prim::minimum<M>);
    case BinaryOp::Atan2:
      return float_loop<T>(name, out, a, b, [](M x, M y) { return std::atan2(x, y); });
    case BinaryOp::Hypot:
      return float_loop<T>(name, out, a, b, [](M x, M y) { return std::hypot(x, y); });
    default:
      break;
  }
  throw DTypeError(
      fmt::format("{}: not defined for floating dtype {}", name, dtype_name(scalar_type_of<T>)));
}

// True when the divisor operand has a zero element (checked before any element is written).
template <typename T>
bool has_zero(std::string_view name, const Operand& b) {
  if (b.is_single()) return b.value<T>() == T(0);
  const Tensor& t = b.tensor();
  if (t.numel() == 0) return false;
  constexpr ScalarType kT = scalar_type_of<T>;
  if (t.dtype() == kT && t.is_contiguous()) {
    const T* p = static_cast<const T*>(t.data_ptr());
    bool zero = false;
    for (int64_t i = 0, n = t.numel(); i < n; ++i) zero |= (p[i] == T(0));
    return zero;
  }
  Tensor c = t.dtype() == kT ? t : t.to(kT);
  bool zero = false;
  TensorIter iter(name, {c}, {});
  iter.serial_for_each(
      [&](char** data, const int64_t* strides, int64_t n) {
        for (int64_t i = 0; i < n; ++i)
          zero |= *reinterpret_cast<const T*>(data[0] + i * strides[0]) == T(0);
      },
      0, iter.numel());
  return zero;
}

template <typename T>
void integer_kernel(std::string_view name, BinaryOp op, const Tensor& out, const Operand& a,
                    const Operand& b, const Scalar& alpha) {
  auto loop = [&](auto f) { binary_loop<T, T>(name, out, a, b, f); };
  switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Sub: {
      // alpha converts modulo 2^bits like any operand; a - alpha*b == a + (-alpha)*b mod 2^bits.
      T s = alpha.to<T>();
      if (op == BinaryOp::Sub) s = wrap_sub(T(0), s);
      if (s == T(1)) return loop([](T x, T y) { return wrap_add(x, y); });
      return loop([s](T x, T y) { return wrap_add(x, wrap_mul(s, y)); });
    }
    case BinaryOp::Mul:
      return loop([](T x, T y) { return wrap_mul(x, y); });
    case BinaryOp::Maximum:
      return loop(prim::maximum<T>);
    case BinaryOp::Minimum:
      return loop(prim::minimum<T>);
    case BinaryOp::Pow: {
      KILN_CHECK(
          !(b.is_scalar() && b.scalar().kind() == Scalar::Kind::Int && b.scalar().to_int64() < 0),
          ValueError,
          "{}: integers to negative integer powers are not allowed (exponent {}); use a "
          "floating base, e.g. t.to(kiln::kFloat32)",
          name, b.scalar().str());
      return loop(prim::pow<T>);
    }
    case BinaryOp::DivFloor:
    case BinaryOp::DivTrunc:
    case BinaryOp::Remainder:
    case BinaryOp::Fmod: {
      // Note [Division by zero in an empty result]
      // The error means "an element was divided by zero", so an empty result divides nothing
      // and raises nothing, whatever the divisor holds (a 0-dim zero broadcast to [7, 0], or a
      // [3] divisor against [0, 3]). A non-empty result reads every element of each operand
      // (broadcasting only repeats elements), so then any zero in the divisor is used. Generated
      // code, which flags the error per computed element (Note [Runtime errors in generated
      // code]), and PyTorch, which checks inside its loop, agree with this.
      KILN_CHECK(out.numel() == 0 || !has_zero<T>(name, b), ValueError,
                 "{}: integer division by zero (ZeroDivisionError); the divisor of dtype {} has a "
                 "zero element. Divide floating tensors to get inf/nan instead",
                 name, dtype_name(scalar_type_of<T>));
      if (op == BinaryOp::DivFloor) return loop(prim::floordiv<T>);
      if (op == BinaryOp::DivTrunc) return loop(prim::truncdiv<T>);
      if (op == BinaryOp::Remainder) return loop(prim::remainder<T>);
      return loop(prim::fmod<T>);
    }
    default:
      break;
  }
  throw DTypeError(
      fmt::format("{}: not defined for integer dtype {}", name, dtype_name(scalar_type_of<T>)));
}

void bool_kernel(std::string_view name, BinaryOp op, const Tensor& out, const Operand& a,
                 const Operand& b, const Scalar& alpha) {
  auto loop = [&](auto f) { binary_loop<bool, bool>(name, out, a, b, f); };
  switch (op) {
    case BinaryOp::Add: {
      if (!alpha.to<bool>()) return loop([](bool x, bool) { return x; });
      return loop([](bool x, bool y) { return x || y; });
    }
    case BinaryOp::Mul:
    case BinaryOp::Minimum:
      return loop([](bool x, bool y) { return x && y; });
    case BinaryOp::Maximum:
      return loop([](bool x, bool y) { return x || y; });
    default:
      break;
  }
  throw DTypeError(
      fmt::format("{}: not defined for bool operands; convert to an integer dtype first", name));
}

}  // namespace

void binary_kernel(std::string_view name, BinaryOp op, const Tensor& out, const Operand& a,
                   const Operand& b, ScalarType compute, const Scalar& alpha) {
  if (out.dtype() != compute) {
    // In-place ops whose compute dtype is wider than self (uint8 self += int64 tensor): compute,
    // then convert into self.
    Tensor tmp = empty_tensor(out.sizes(), compute);
    binary_kernel(name, op, tmp, a, b, compute, alpha);
    copy_into(out, tmp);
    return;
  }
  if (op >= BinaryOp::BitwiseAnd) {
    binary_bitwise_kernel(name, op, out, a, b, compute);
    return;
  }
  visit_dtype(compute, [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      bool_kernel(name, op, out, a, b, alpha);
    } else if constexpr (is_floating_v<T>) {
      float_kernel<T>(name, op, out, a, b, alpha);
    } else {
      integer_kernel<T>(name, op, out, a, b, alpha);
    }
  });
}

}  // namespace kiln::cpu
