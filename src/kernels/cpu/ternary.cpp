#include "src/kernels/cpu/ternary.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "src/core/tensor_factory.h"
#include "src/kernels/cpu/copy.h"
#include "src/kernels/cpu/loops.h"

namespace kiln::cpu {
namespace {

// `t` converted to `dtype` (a temporary copy only when the dtypes differ; no dispatch).
Tensor converted(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor r = empty_tensor(t.sizes(), dtype);
  copy_into(r, t);
  return r;
}

// Integer arithmetic wraps: it runs in uint64_t (never promoted to int, so no signed overflow)
// and the result is truncated modulo 2^bits. Floating computes in opmath_t.
template <typename T>
using arith_t = std::conditional_t<std::is_integral_v<T>, uint64_t, opmath_t<T>>;

// clamp of one value. NaN in x or in a bound gives NaN (as PyTorch); min > max gives max.
template <typename M>
inline M clamp_value(M x, bool has_lo, M lo, bool has_hi, M hi) {
  if constexpr (std::is_floating_point_v<M>) {
    if (has_lo && std::isnan(lo)) return lo;
    if (has_hi && std::isnan(hi)) return hi;
  }
  if (has_lo && x < lo) x = lo;
  if (has_hi && x > hi) x = hi;
  return x;
}

// Note [Branch-free select]
// c ? x : y on a data-dependent condition compiles to a branch, which a random mask (relu's
// backward, dropout) mispredicts half the time: where and masked_fill ran ~15x slower than a
// multiply. Blending the bits under a mask has no branch; reading the condition as uint8_t rather
// than bool lets GCC vectorize the loop (it finds no vector type for bool loads).
template <typename T>
inline T select(uint8_t c, T x, T y) {
  if constexpr (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8) {
    using U = std::conditional_t<
        sizeof(T) == 1, uint8_t,
        std::conditional_t<sizeof(T) == 2, uint16_t,
                           std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
    const U mask = static_cast<U>(U(0) - static_cast<U>(c));
    return std::bit_cast<T>(
        static_cast<U>((std::bit_cast<U>(x) & mask) | (std::bit_cast<U>(y) & ~mask)));
  } else {
    return c ? x : y;
  }
}

}  // namespace

void where_kernel(const Tensor& out, const Tensor& cond, const Tensor& self, const Tensor& other) {
  if (out.numel() == 0) return;
  const Tensor a = converted(self, out.dtype()), b = converted(other, out.dtype());
  visit_dtype(out.dtype(), [&]<typename T>() {
    // A one-element operand (the Scalar forms; where(c, g, 0) in backward formulas) is read
    // once, so the loop over the other two stays contiguous and vectorizes.
    if (b.numel() == 1 && a.numel() > 1) {
      const T v = *b.data_ptr<T>();
      TensorIter iter("where", {out}, {cond, a});
      cpu_kernel<T, uint8_t, T>(iter, [v](uint8_t c, T x) { return select(c, x, v); });
    } else if (a.numel() == 1 && b.numel() > 1) {
      const T v = *a.data_ptr<T>();
      TensorIter iter("where", {out}, {cond, b});
      cpu_kernel<T, uint8_t, T>(iter, [v](uint8_t c, T y) { return select(c, v, y); });
    } else {
      TensorIter iter("where", {out}, {cond, a, b});
      cpu_kernel<T, uint8_t, T, T>(iter, [](uint8_t c, T x, T y) { return select(c, x, y); });
    }
  });
}

void clamp_kernel(const Tensor& out, const Tensor& self, const Tensor& min, const Tensor& max) {
  if (out.numel() == 0) return;
  const ScalarType dt = out.dtype();
  const Tensor x = converted(self, dt);
  visit_dtype_in<dtypes::kNumeric>(dt, "clamp", [&]<typename T>() {
    using M = opmath_t<T>;
    if (min.defined() && max.defined()) {
      TensorIter iter("clamp", {out}, {x, converted(min, dt), converted(max, dt)});
      cpu_kernel<T, T, T, T>(iter, [](T v, T lo, T hi) {
        return static_cast<T>(clamp_value<M>(M(v), true, M(lo), true, M(hi)));
      });
    } else if (min.defined()) {
      TensorIter iter("clamp", {out}, {x, converted(min, dt)});
      cpu_kernel<T, T, T>(iter, [](T v, T lo) {
        return static_cast<T>(clamp_value<M>(M(v), true, M(lo), false, M(0)));
      });
    } else {
      TensorIter iter("clamp", {out}, {x, converted(max, dt)});
      cpu_kernel<T, T, T>(iter, [](T v, T hi) {
        return static_cast<T>(clamp_value<M>(M(v), false, M(0), true, M(hi)));
      });
    }
  });
}

void clamp_scalar_kernel(const Tensor& out, const Tensor& self, const std::optional<Scalar>& min,
                         const std::optional<Scalar>& max) {
  if (out.numel() == 0) return;
  const Tensor x = converted(self, out.dtype());
  TensorIter iter("clamp", {out}, {x});
  visit_dtype_in<dtypes::kNumeric>(out.dtype(), "clamp", [&]<typename T>() {
    using M = opmath_t<T>;
    const bool has_lo = min.has_value(), has_hi = max.has_value();
    const M lo = has_lo ? M(min->to<T>()) : M(0);
    const M hi = has_hi ? M(max->to<T>()) : M(0);
    cpu_kernel<T, T>(
        iter, [=](T v) { return static_cast<T>(clamp_value<M>(M(v), has_lo, lo, has_hi, hi)); });
  });
}

namespace {
// The two-sided form keeps lerp exact at both ends (weight 0 gives start, 1 gives end).
template <typename M>
inline M lerp_value(M s, M e, M w) {
  return std::abs(w) < M(0.5) ? s + w * (e - s) : e - (e - s) * (M(1) - w);
}
}  // namespace

void lerp_kernel(const Tensor& out, const Tensor& start, const Tensor& end, const Tensor& weight) {
  if (out.numel() == 0) return;
  const ScalarType dt = out.dtype();
  TensorIter iter("lerp", {out}, {converted(start, dt), converted(end, dt), converted(weight, dt)});
  visit_dtype_in<dtypes::kFloating>(dt, "lerp", [&]<typename T>() {
    using M = opmath_t<T>;
    cpu_kernel<T, T, T, T>(
        iter, [](T s, T e, T w) { return static_cast<T>(lerp_value<M>(M(s), M(e), M(w))); });
  });
}

void lerp_scalar_kernel(const Tensor& out, const Tensor& start, const Tensor& end,
                        const Scalar& weight) {
  if (out.numel() == 0) return;
  const ScalarType dt = out.dtype();
  TensorIter iter("lerp", {out}, {converted(start, dt), converted(end, dt)});
  visit_dtype_in<dtypes::kFloating>(dt, "lerp", [&]<typename T>() {
    using M = opmath_t<T>;
    const M w = weight.to<M>();
    cpu_kernel<T, T, T>(iter,
                        [w](T s, T e) { return static_cast<T>(lerp_value<M>(M(s), M(e), w)); });
  });
}

void addcmul_kernel(const Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2,
                    const Scalar& value) {
  if (out.numel() == 0) return;
  const ScalarType dt = out.dtype();
  TensorIter iter("addcmul", {out}, {converted(self, dt), converted(t1, dt), converted(t2, dt)});
  visit_dtype_in<dtypes::kNumeric>(dt, "addcmul", [&]<typename T>() {
    using A = arith_t<T>;
    const A v = static_cast<A>(value.to<T>());
    cpu_kernel<T, T, T, T>(iter, [v](T s, T a, T b) {
      return static_cast<T>(static_cast<A>(A(s) + static_cast<A>(v * static_cast<A>(A(a) * A(b)))));
    });
  });
}

void addcdiv_kernel(const Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2,
                    const Scalar& value) {
  if (out.numel() == 0) return;
  const ScalarType dt = out.dtype();
  TensorIter iter("addcdiv", {out}, {converted(self, dt), converted(t1, dt), converted(t2, dt)});
  visit_dtype_in<dtypes::kFloating>(dt, "addcdiv", [&]<typename T>() {
    using M = opmath_t<T>;
    const M v = value.to<M>();
    cpu_kernel<T, T, T, T>(iter,
                           [v](T s, T a, T b) { return static_cast<T>(M(s) + v * M(a) / M(b)); });
  });
}

void masked_fill_kernel(const Tensor& out, const Tensor& self, const Tensor& mask,
                        const Scalar& value) {
  if (out.numel() == 0) return;
  TensorIter iter("masked_fill", {out}, {converted(self, out.dtype()), mask});
  visit_dtype(out.dtype(), [&]<typename T>() {
    const T v = value.to<T>();
    cpu_kernel<T, T, uint8_t>(iter, [v](T x, uint8_t m) { return select(m, v, x); });
  });
}

}  // namespace kiln::cpu
