// Unary kernels that keep the dtype or return bool: neg, abs, sign, relu, rounding, bitwise_not,
// logical_not, isnan/isinf/isfinite, nan_to_num. Floating functions live in unary_float.cpp.
//
// Signed integer negation goes through the unsigned type so INT_MIN wraps to itself instead of
// overflowing (as PyTorch's two's-complement result); unsigned negation is modular.
#include "src/kernels/cpu/unary.h"
#include "src/numerics/scalar_ops.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "src/kernels/cpu/copy.h"
#include "src/kernels/cpu/loops.h"

namespace kiln::cpu {
namespace {

// The largest finite value of T (float16 saturates at 65504, bfloat16 near 3.39e38) and the lowest.
template <typename T>
T max_finite() {
  if constexpr (std::is_same_v<T, Half>)
    return Half::from_bits(0x7bff);
  else if constexpr (std::is_same_v<T, BFloat16>)
    return BFloat16::from_bits(0x7f7f);
  else
    return std::numeric_limits<T>::max();
}
template <typename T>
T lowest_finite() {
  if constexpr (std::is_same_v<T, Half>)
    return Half::from_bits(0xfbff);
  else if constexpr (std::is_same_v<T, BFloat16>)
    return BFloat16::from_bits(0xff7f);
  else
    return std::numeric_limits<T>::lowest();
}

// v through a primitive's scalar function (Note [One definition of a primitive's semantics] in
// src/numerics/scalar_ops.h), computed in opmath.
template <typename T, typename F>
T through(T v, const F& f) {
  return static_cast<T>(f(static_cast<opmath_t<T>>(v)));
}

// Applies f (templated on the element type) to every element, out and in of the same dtype.
template <DTypeSet Allowed, typename F>
void map_same_dtype(std::string_view op, const Tensor& out, const Tensor& in, const F& f) {
  TensorIter iter(op, {out}, {in});
  visit_dtype_in<Allowed>(out.dtype(), op, [&]<typename T>() {
    cpu_kernel<T, T>(iter, [&](T v) { return f.template operator()<T>(v); });
  });
}

// Applies a predicate, writing bool.
template <typename F>
void map_to_bool(std::string_view op, const Tensor& out, const Tensor& in, const F& f) {
  TensorIter iter(op, {out}, {in});
  visit_dtype(in.dtype(), [&]<typename T>() {
    cpu_kernel<bool, T>(iter, [&](T v) { return f.template operator()<T>(v); });
  });
}

// Rounds floating values with g; integers are already whole numbers, so they are copied.
template <typename G>
void rounding(std::string_view op, const Tensor& out, const Tensor& in, const G& g) {
  if (!is_floating(in.dtype())) {
    copy_into(out, in);
    return;
  }
  map_same_dtype<dtypes::kFloating>(
      op, out, in, [&]<typename T>(T v) { return static_cast<T>(g(static_cast<opmath_t<T>>(v))); });
}

}  // namespace

void unary_kernel(UnaryOp op, const Tensor& out, const Tensor& in) {
  if (out.numel() == 0) return;
  if (is_floating_function(op)) {
    floating_unary_kernel(op, out, in);
    return;
  }
  switch (op) {
    case UnaryOp::Neg:
      map_same_dtype<dtypes::kNumeric>("neg", out, in, []<typename T>(T v) {
        return through(v, [](auto x) { return prim::neg(x); });
      });
      return;
    case UnaryOp::Abs:
      if (is_unsigned(in.dtype())) return copy_into(out, in);
      map_same_dtype<dtypes::kNumeric>("abs", out, in, []<typename T>(T v) {
        return through(v, [](auto x) { return prim::abs(x); });
      });
      return;
    case UnaryOp::Sign:
      map_same_dtype<dtypes::kAll>("sign", out, in, []<typename T>(T v) {
        return through(v, [](auto x) { return prim::sign(x); });
      });
      return;
    case UnaryOp::Relu:
      if (is_unsigned(in.dtype())) return copy_into(out, in);
      map_same_dtype<dtypes::kNumeric>("relu", out, in, []<typename T>(T v) {
        using M = opmath_t<T>;
        const M x = static_cast<M>(v);
        if constexpr (is_floating_v<T>) {
          if (std::isnan(x)) return v;  // NaN propagates, as clamp_min does
        }
        return x > M(0) ? v : T(0);
      });
      return;
    case UnaryOp::Floor:
      return rounding("floor", out, in, [](auto x) { return prim::floor(x); });
    case UnaryOp::Ceil:
      return rounding("ceil", out, in, [](auto x) { return prim::ceil(x); });
    case UnaryOp::Round:
      return rounding("round", out, in, [](auto x) { return prim::round(x); });
    case UnaryOp::Trunc:
      return rounding("trunc", out, in, [](auto x) { return prim::trunc(x); });
    case UnaryOp::Frac:
      map_same_dtype<dtypes::kFloating>("frac", out, in, []<typename T>(T v) {
        return through(v, [](auto x) { return prim::frac(x); });
      });
      return;
    case UnaryOp::BitwiseNot:
      map_same_dtype<dtypes::kIntegralAndBool>(
          "bitwise_not", out, in, []<typename T>(T v) { return prim::bitwise_not(v); });
      return;
    case UnaryOp::LogicalNot:
      map_to_bool("logical_not", out, in,
                  []<typename T>(T v) { return static_cast<opmath_t<T>>(v) == opmath_t<T>(0); });
      return;
    case UnaryOp::IsNan:
      if (!is_floating(in.dtype())) return fill(out, false);
      map_to_bool("isnan", out, in,
                  []<typename T>(T v) { return std::isnan(static_cast<opmath_t<T>>(v)); });
      return;
    case UnaryOp::IsInf:
      if (!is_floating(in.dtype())) return fill(out, false);
      map_to_bool("isinf", out, in,
                  []<typename T>(T v) { return std::isinf(static_cast<opmath_t<T>>(v)); });
      return;
    case UnaryOp::IsFinite:
      if (!is_floating(in.dtype())) return fill(out, true);
      map_to_bool("isfinite", out, in,
                  []<typename T>(T v) { return std::isfinite(static_cast<opmath_t<T>>(v)); });
      return;
    default:
      break;
  }
  throw Error("unary_kernel: internal error, unhandled op");
}

void nan_to_num_kernel(const Tensor& out, const Tensor& in, std::optional<double> nan,
                       std::optional<double> posinf, std::optional<double> neginf) {
  if (out.numel() == 0) return;
  if (!is_floating(in.dtype())) return copy_into(out, in);
  TensorIter iter("nan_to_num", {out}, {in});
  visit_dtype_in<dtypes::kFloating>(out.dtype(), "nan_to_num", [&]<typename T>() {
    using M = opmath_t<T>;
    const T hi = posinf ? T(static_cast<M>(*posinf)) : max_finite<T>();
    const T lo = neginf ? T(static_cast<M>(*neginf)) : lowest_finite<T>();
    const T nv = T(static_cast<M>(nan.value_or(0.0)));
    cpu_kernel<T, T>(iter, [=](T v) {
      const M x = static_cast<M>(v);
      if (std::isnan(x)) return nv;
      if (std::isinf(x)) return x > M(0) ? hi : lo;
      return v;
    });
  });
}

}  // namespace kiln::cpu
