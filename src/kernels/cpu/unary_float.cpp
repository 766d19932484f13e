// Floating unary kernels: exp, log, trigonometric, sigmoid, gelu, erf, ... Integer and bool
// inputs are first converted to the output's floating dtype (see Note [Pointwise dtype handling]
// in src/ops/pointwise_utils.h); float16/bfloat16 compute in float.
//
// Contiguous float32/float64 exp, log, tanh, sigmoid, silu and gelu(tanh) take the Highway vector
// path (src/kernels/cpu/vec_math.cpp); everything else runs the generic cpu_kernel loop over the
// C++ standard library functions.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "src/core/tensor_factory.h"
#include "src/kernels/cpu/copy.h"
#include "src/kernels/cpu/loops.h"
#include "src/kernels/cpu/unary.h"
#include "src/kernels/cpu/vec_math.h"
#include "src/numerics/scalar_ops.h"
#include "src/util/parallel.h"

namespace kiln::cpu {
namespace {

template <typename F>
void map_floating(std::string_view op, const Tensor& out, const Tensor& x, const F& f) {
  TensorIter iter(op, {out}, {x});
  visit_dtype_in<dtypes::kFloating>(out.dtype(), op, [&]<typename T>() {
    using M = opmath_t<T>;
    cpu_kernel<T, T>(iter, [&](T v) { return static_cast<T>(f(static_cast<M>(v))); });
  });
}

// Splits [0, n) into chunks run in parallel above the grain; the vector loops run per chunk.
template <typename T>
void run_vector(UnaryOp op, const T* in, T* out, int64_t n) {
  constexpr int64_t kChunk = 4096;
  if (n <= kParallelGrain) {
    vec_unary(op, in, out, n);
    return;
  }
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  parallel::parallel_for_if(true, 0, chunks, [&](int64_t c_begin, int64_t c_end) {
    for (int64_t c = c_begin; c < c_end; ++c) {
      const int64_t begin = c * kChunk;
      vec_unary(op, in + begin, out + begin, std::min(kChunk, n - begin));
    }
  });
}

constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi), gelu's tanh form
constexpr double kGeluKappa = 0.044715;

}  // namespace

double erfinv(double y) { return prim::erfinv_double(y); }

void floating_unary_kernel(UnaryOp op, const Tensor& out, const Tensor& in) {
  if (out.numel() == 0) return;
  Tensor x = in;
  if (in.dtype() != out.dtype()) {
    x = empty_tensor(in.sizes(), out.dtype());
    copy_into(x, in);
  }
  if (out.is_contiguous() && x.is_contiguous() && has_vec_path(op, out.dtype())) {
    if (out.dtype() == kFloat32) {
      run_vector(op, x.data_ptr<float>(), out.data_ptr<float>(), out.numel());
    } else {
      run_vector(op, x.data_ptr<double>(), out.data_ptr<double>(), out.numel());
    }
    return;
  }
  switch (op) {
    case UnaryOp::Exp:
      return map_floating("exp", out, x, [](auto v) { return std::exp(v); });
    case UnaryOp::Exp2:
      return map_floating("exp2", out, x, [](auto v) { return std::exp2(v); });
    case UnaryOp::Expm1:
      return map_floating("expm1", out, x, [](auto v) { return std::expm1(v); });
    case UnaryOp::Log:
      return map_floating("log", out, x, [](auto v) { return std::log(v); });
    case UnaryOp::Log2:
      return map_floating("log2", out, x, [](auto v) { return std::log2(v); });
    case UnaryOp::Log10:
      return map_floating("log10", out, x, [](auto v) { return std::log10(v); });
    case UnaryOp::Log1p:
      return map_floating("log1p", out, x, [](auto v) { return std::log1p(v); });
    case UnaryOp::Sqrt:
      return map_floating("sqrt", out, x, [](auto v) { return std::sqrt(v); });
    case UnaryOp::Rsqrt:
      return map_floating("rsqrt", out, x, [](auto v) { return decltype(v)(1) / std::sqrt(v); });
    case UnaryOp::Sin:
      return map_floating("sin", out, x, [](auto v) { return std::sin(v); });
    case UnaryOp::Cos:
      return map_floating("cos", out, x, [](auto v) { return std::cos(v); });
    case UnaryOp::Tan:
      return map_floating("tan", out, x, [](auto v) { return std::tan(v); });
    case UnaryOp::Asin:
      return map_floating("asin", out, x, [](auto v) { return std::asin(v); });
    case UnaryOp::Acos:
      return map_floating("acos", out, x, [](auto v) { return std::acos(v); });
    case UnaryOp::Atan:
      return map_floating("atan", out, x, [](auto v) { return std::atan(v); });
    case UnaryOp::Sinh:
      return map_floating("sinh", out, x, [](auto v) { return std::sinh(v); });
    case UnaryOp::Cosh:
      return map_floating("cosh", out, x, [](auto v) { return std::cosh(v); });
    case UnaryOp::Tanh:
      return map_floating("tanh", out, x, [](auto v) { return std::tanh(v); });
    case UnaryOp::Sigmoid:
      return map_floating("sigmoid", out, x, [](auto v) {
        using M = decltype(v);
        return M(1) / (M(1) + std::exp(-v));
      });
    case UnaryOp::Silu:
      return map_floating("silu", out, x, [](auto v) {
        using M = decltype(v);
        return v / (M(1) + std::exp(-v));
      });
    case UnaryOp::GeluErf:
      return map_floating("gelu", out, x, [](auto v) {
        using M = decltype(v);
        return M(0.5) * v * (M(1) + std::erf(v * M(std::numbers::sqrt2 / 2)));
      });
    case UnaryOp::GeluTanh:
      return map_floating("gelu", out, x, [](auto v) {
        using M = decltype(v);
        const M inner = M(kSqrt2OverPi) * (v + M(kGeluKappa) * v * v * v);
        return M(0.5) * v * (M(1) + std::tanh(inner));
      });
    case UnaryOp::Erf:
      return map_floating("erf", out, x, [](auto v) { return std::erf(v); });
    case UnaryOp::Erfinv:
      return map_floating("erfinv", out, x, [](auto v) {
        return static_cast<decltype(v)>(erfinv(static_cast<double>(v)));
      });
    case UnaryOp::Reciprocal:
      return map_floating("reciprocal", out, x, [](auto v) { return decltype(v)(1) / v; });
    default:
      break;
  }
  throw Error("floating_unary_kernel: internal error, op is not a floating function");
}

void softplus_kernel(const Tensor& out, const Tensor& in, double beta, double threshold) {
  if (out.numel() == 0) return;
  TensorIter iter("softplus", {out}, {in});
  visit_dtype_in<dtypes::kFloating>(out.dtype(), "softplus", [&]<typename T>() {
    using M = opmath_t<T>;
    const M b = static_cast<M>(beta), th = static_cast<M>(threshold);
    cpu_kernel<T, T>(iter, [=](T v) {
      const M x = static_cast<M>(v);
      return static_cast<T>(x * b > th ? x : std::log1p(std::exp(x * b)) / b);
    });
  });
}

}  // namespace kiln::cpu
