// Highway vector loops for exp, log, tanh, sigmoid, silu, gelu(tanh), sqrt and rsqrt (static
// dispatch: the library is built with -march=native, so HWY_NAMESPACE is the build machine's best
// target).
//
// Note [Vector math accuracy]
// Highway's contrib math documents these maximum errors: Exp 1 ulp, Log 1 ulp, Expm1 and Tanh
// 4 ulp, over float32 [-FLT_MAX, 104] / float64 [-DBL_MAX, 706] for Exp. Outside those ranges
// and for special values (NaN, +-inf, log of 0 or of negatives) Highway gives unspecified
// results, so each function below patches them to the IEEE/C library answer. Composite formulas
// (sigmoid = 1 / (1 + exp(-x)), silu = x * sigmoid(x), gelu's tanh form) add a few ulps of
// rounding: measured against float64 references they stay within 8 ulp in float32, i.e. well
// inside the op harness tolerance (rtol 1.3e-6). The tail of each array goes through the same
// vector code on a padded buffer, so a value's result does not depend on where it sits.
#include "src/kernels/cpu/vec_math.h"

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include <algorithm>
#include <limits>

namespace kiln::cpu {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

template <class D, class V = hn::Vec<D>>
V exp_v(D d, V x) {
  using T = hn::TFromD<D>;
  // Above log(max finite) the result overflows; Highway's range reduction is not valid there.
  const V overflow = hn::Set(d, T(sizeof(T) == 4 ? 88.72283f : 709.782712893384));
  const V inf = hn::Set(d, std::numeric_limits<T>::infinity());
  V y = hn::Exp(d, hn::Min(x, overflow));
  y = hn::IfThenElse(hn::Gt(x, overflow), inf, y);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

template <class D, class V = hn::Vec<D>>
V log_v(D d, V x) {
  using T = hn::TFromD<D>;
  const V zero = hn::Zero(d);
  const V inf = hn::Set(d, std::numeric_limits<T>::infinity());
  V y = hn::Log(d, x);
  y = hn::IfThenElse(hn::Eq(x, zero), hn::Neg(inf), y);
  y = hn::IfThenElse(hn::Eq(x, inf), inf, y);
  // NaN for negative inputs; NaN inputs stay themselves.
  y = hn::IfThenElse(hn::Lt(x, zero), hn::Set(d, std::numeric_limits<T>::quiet_NaN()), y);
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

template <class D, class V = hn::Vec<D>>
V tanh_v(D d, V x) {
  return hn::IfThenElse(hn::IsNaN(x), x, hn::Tanh(d, x));
}

template <class D, class V = hn::Vec<D>>
V sigmoid_v(D d, V x) {
  const V one = hn::Set(d, hn::TFromD<D>(1));
  return hn::Div(one, hn::Add(one, exp_v(d, hn::Neg(x))));
}

template <class D, class V = hn::Vec<D>>
V silu_v(D d, V x) {
  const V one = hn::Set(d, hn::TFromD<D>(1));
  return hn::Div(x, hn::Add(one, exp_v(d, hn::Neg(x))));
}

template <class D, class V = hn::Vec<D>>
V gelu_tanh_v(D d, V x) {
  using T = hn::TFromD<D>;
  const V half = hn::Set(d, T(0.5));
  const V one = hn::Set(d, T(1));
  const V beta = hn::Set(d, T(0.79788456080286535588));  // sqrt(2 / pi)
  const V kappa = hn::Set(d, T(0.044715));
  const V x3 = hn::Mul(hn::Mul(x, x), x);
  const V inner = hn::Mul(beta, hn::MulAdd(kappa, x3, x));
  return hn::Mul(hn::Mul(half, x), hn::Add(one, tanh_v(d, inner)));
}

template <typename T, typename F>
void vec_loop(const T* in, T* out, int64_t n, const F& f) {
  const hn::ScalableTag<T> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(f(d, hn::LoadU(d, in + i)), d, out + i);
  if (i < n) {
    HWY_ALIGN T buf[HWY_MAX_BYTES / sizeof(T)] = {};
    std::copy(in + i, in + n, buf);
    hn::Store(f(d, hn::Load(d, buf)), d, buf);
    std::copy(buf, buf + (n - i), out + i);
  }
}

template <typename T>
void vec_unary_impl(UnaryOp op, const T* in, T* out, int64_t n) {
  switch (op) {
    case UnaryOp::Exp:
      return vec_loop(in, out, n, [](auto d, auto v) { return exp_v(d, v); });
    case UnaryOp::Log:
      return vec_loop(in, out, n, [](auto d, auto v) { return log_v(d, v); });
    case UnaryOp::Tanh:
      return vec_loop(in, out, n, [](auto d, auto v) { return tanh_v(d, v); });
    case UnaryOp::Sigmoid:
      return vec_loop(in, out, n, [](auto d, auto v) { return sigmoid_v(d, v); });
    case UnaryOp::Silu:
      return vec_loop(in, out, n, [](auto d, auto v) { return silu_v(d, v); });
    case UnaryOp::GeluTanh:
      return vec_loop(in, out, n, [](auto d, auto v) { return gelu_tanh_v(d, v); });
    // IEEE square root (correctly rounded; NaN for negatives), as std::sqrt.
    case UnaryOp::Sqrt:
      return vec_loop(in, out, n, [](auto d, auto v) { return hn::Sqrt(v); });
    case UnaryOp::Rsqrt:
      return vec_loop(in, out, n, [](auto d, auto v) {
        return hn::Div(hn::Set(d, hn::TFromD<decltype(d)>(1)), hn::Sqrt(v));
      });
    default:
      break;
  }
}

}  // namespace

bool has_vec_path(UnaryOp op, ScalarType dtype) {
  if (dtype != kFloat32 && dtype != kFloat64) return false;
  switch (op) {
    case UnaryOp::Exp:
    case UnaryOp::Log:
    case UnaryOp::Tanh:
    case UnaryOp::Sigmoid:
    case UnaryOp::Silu:
    case UnaryOp::GeluTanh:
    case UnaryOp::Sqrt:
    case UnaryOp::Rsqrt:
      return true;
    default:
      return false;
  }
}

void vec_unary(UnaryOp op, const float* in, float* out, int64_t n) {
  vec_unary_impl(op, in, out, n);
}
void vec_unary(UnaryOp op, const double* in, double* out, int64_t n) {
  vec_unary_impl(op, in, out, n);
}

}  // namespace kiln::cpu
