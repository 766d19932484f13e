// Comparison kernels: eq, ne, lt, le, gt, ge.
//
// Note [Exact comparisons]
// A comparison computes in the promoted dtype, like PyTorch. Between tensors that is exact:
// promotion picks a type holding both operands (and refuses uint64 with a signed type). But a
// Scalar or 0-dim operand does not widen the dtype (uint8 tensor < 1000 computes in uint8), and
// converting it would wrap (1000 -> 232, -1 -> 255). So a single integer value outside the
// compute dtype's range is not converted: every element is then on the same side of it, and the
// result is a constant (uint64 tensor > -1 is all true). Floating compute dtypes follow PyTorch
// (the value is rounded to the compute dtype).
#include <limits>
#include <type_traits>

#include "src/kernels/cpu/binary_loops.h"

namespace kiln::cpu {
namespace {

// The op with its operands swapped: v < x  <=>  x > v.
CompareOp mirrored(CompareOp op) {
  switch (op) {
    case CompareOp::Lt:
      return CompareOp::Gt;
    case CompareOp::Le:
      return CompareOp::Ge;
    case CompareOp::Gt:
      return CompareOp::Lt;
    case CompareOp::Ge:
      return CompareOp::Le;
    default:
      return op;
  }
}

// x <op> v for every x of the compute dtype when v lies below (or above) all of them.
bool constant_result(CompareOp op, bool value_below) {
  switch (op) {
    case CompareOp::Eq:
      return false;
    case CompareOp::Ne:
      return true;
    case CompareOp::Lt:
    case CompareOp::Le:
      return !value_below;
    case CompareOp::Gt:
    case CompareOp::Ge:
      return value_below;
  }
  return false;
}

// -1 when the single integer operand lies below T's range, +1 above, 0 inside (or when it is
// not a single integer value).
template <typename T>
int out_of_range(const Operand& x) {
  if constexpr (is_floating_v<T> || std::is_same_v<T, bool>) {
    return 0;
  } else {
    if (!x.is_single() || !x.is_integer_valued()) return 0;
    const __int128 v = x.exact_integer();
    if (v < static_cast<__int128>(std::numeric_limits<T>::min())) return -1;
    if (v > static_cast<__int128>(std::numeric_limits<T>::max())) return 1;
    return 0;
  }
}

void fill_bool(const Tensor& out, bool value) {
  if (out.numel() == 0) return;
  bool* p = static_cast<bool*>(out.data_ptr());  // a fresh contiguous output
  std::fill(p, p + out.numel(), value);
}

}  // namespace

void compare_kernel(std::string_view name, CompareOp op, const Tensor& out, const Operand& a,
                    const Operand& b, ScalarType compute) {
  visit_dtype(compute, [&]<typename T>() {
    if (const int r = out_of_range<T>(b); r != 0) return fill_bool(out, constant_result(op, r < 0));
    if (const int r = out_of_range<T>(a); r != 0)
      return fill_bool(out, constant_result(mirrored(op), r < 0));
    using M = opmath_t<T>;
    auto loop = [&](auto f) { binary_loop<bool, T>(name, out, a, b, f); };
    switch (op) {
      case CompareOp::Eq:
        return loop([](T x, T y) { return M(x) == M(y); });
      case CompareOp::Ne:
        return loop([](T x, T y) { return M(x) != M(y); });
      case CompareOp::Lt:
        return loop([](T x, T y) { return M(x) < M(y); });
      case CompareOp::Le:
        return loop([](T x, T y) { return M(x) <= M(y); });
      case CompareOp::Gt:
        return loop([](T x, T y) { return M(x) > M(y); });
      case CompareOp::Ge:
        return loop([](T x, T y) { return M(x) >= M(y); });
    }
  });
}

}  // namespace kiln::cpu
