// OpInfos for the unary pointwise ops. References are computed element by element from
// to_vector values: floating functions in float64 with the C++ standard library, integer ops
// exactly in the element's own type.
#include <cmath>
#include <limits>
#include <numbers>

#include "tests/ops/harness.h"

namespace kiln::testing {
namespace {

std::vector<int64_t> shape_of(const Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }

// Applies f to every element in its own C++ type T (exact for integers); f returns a value
// convertible to the output dtype's C++ type.
template <typename F>
Tensor map_typed(const Tensor& x, ScalarType out, const F& f) {
  return visit_dtype(x.dtype(), [&]<typename T>() {
    std::vector<T> v = x.to_vector<T>();
    return visit_dtype(out, [&]<typename R>() {
      std::vector<R> r;
      r.reserve(v.size());
      for (T e : v) r.push_back(f.template operator()<T, R>(e));
      return from_vector(r, shape_of(x));
    });
  });
}

ScalarType floating_result(ScalarType t) { return is_floating(t) ? t : kFloat32; }

// Integer inputs of floating functions are first converted to float32 (the compute dtype), so
// the reference starts from the same rounded values (a large uint32 is not exact in float32).
Tensor as_float(const Tensor& x) {
  if (is_floating(x.dtype())) return x;
  return from_vector(x.to_vector<float>(), shape_of(x));
}

// Samples: the standard shapes, a large one (parallel and vector paths), and for floating
// dtypes the special values where vector math needs care.
std::vector<SampleInput> samples(ScalarType dt, std::mt19937_64& rng, double low, double high,
                                 bool in_place = false) {
  std::vector<SampleInput> s;
  for (SampleInput& x : unary_samples(dt, rng, low, high)) {
    // Writing in place into an expanded tensor is an error (checked in error_cases).
    if (in_place && x.description.find("expanded") != std::string::npos) continue;
    s.push_back(std::move(x));
  }
  s.push_back({{make_tensor({300, 200}, dt, rng, low, high)}, "large [300, 200]"});
  if (is_integral(dt)) {
    s.push_back({{make_tensor({9, 5}, dt, rng, low, high, Layout::Contiguous, true)},
                 "full-range integers"});
  }
  if (is_floating(dt)) {
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> v = {std::nan(""), inf,  -inf,  0.0,    -0.0,   0.5,    -0.5,
                             1.5,          2.5,  -2.5,  1e30,   -1e30,  100.0,  -100.0,
                             88.72283,     88.8, -87.5, -103.9, -110,   709.7,  710.0,
                             -745.0,       3.0,  1e-30, -1e-30, 0.9999, -0.9999};
    s.push_back({{from_vector(v).to(dt)}, "special values"});
  }
  return s;
}

using RefFn = double (*)(double);

void floating_op(const std::string& name, RefFn f, double low = -5, double high = 5) {
  register_op_info(
      {.name = name,
       .samples = [=](ScalarType dt, std::mt19937_64& rng) { return samples(dt, rng, low, high); },
       .reference =
           [=](const Stack& a) {
             return std::vector<Tensor>{
                 map_unary_f64(as_float(a[0].tensor()), floating_result(a[0].tensor().dtype()), f)};
           },
       // Integer inputs give float32 results, compared with float32's tolerance.
       .tolerance = [](ScalarType dt) { return default_tolerance(floating_result(dt)); }});
}

void inplace_floating_op(const std::string& name, RefFn f, double low = -5, double high = 5) {
  register_op_info({.name = name,
                    .samples =
                        [=](ScalarType dt, std::mt19937_64& rng) {
                          return samples(dt, rng, low, high, /*in_place=*/true);
                        },
                    .reference =
                        [=](const Stack& a) {
                          const Tensor& x = a[0].tensor();
                          return std::vector<Tensor>{map_unary_f64(x, x.dtype(), f)};
                        },
                    .error_cases =
                        [name] {
                          return std::vector<ErrorCase>{
                              {{tensor({1, 2, 3})}, ErrorKind::DType, "integer tensor in place"},
                              {{tensor({1.0, 2.0}).expand({3, 2})},
                               ErrorKind::Value,
                               "expanded (overlapping) self"}};
                        }});
}

// Independent of Kiln's erfinv: bisection on std::erf.
double erfinv_ref(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return std::nan("");
  if (y == 1 || y == -1) return std::copysign(std::numeric_limits<double>::infinity(), y);
  double lo = -7, hi = 7;
  for (int i = 0; i < 200 && lo < hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (mid == lo || mid == hi) break;
    (std::erf(mid) < y ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }
double silu_ref(double x) { return x / (1 + std::exp(-x)); }
double gelu_ref(double x) { return 0.5 * x * (1 + std::erf(x / std::numbers::sqrt2)); }
double gelu_tanh_ref(double x) {
  const double k = std::sqrt(2 / std::numbers::pi);
  return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

template <typename T>
constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Exact integer negation (two's complement wrap) in T.
template <typename T>
T neg_ref(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v;  // never sampled: neg rejects bool
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(U(0) - static_cast<U>(v)));
  } else {
    return T(-static_cast<double>(v));
  }
}

// Same-dtype ops: g<T>(value) gives the expected value in T (exact), floats via double.
template <typename G>
void same_dtype_op(const std::string& name, G g, std::vector<ErrorCase> errors, double low = -5,
                   double high = 5, bool in_place = false) {
  register_op_info(
      {.name = name,
       .samples = [=](ScalarType dt,
                      std::mt19937_64& rng) { return samples(dt, rng, low, high, in_place); },
       .reference =
           [=](const Stack& a) {
             const Tensor& x = a[0].tensor();
             return std::vector<Tensor>{map_typed(x, x.dtype(), [&]<typename T, typename R>(T v) {
               return static_cast<R>(g.template operator()<T>(v));
             })};
           },
       .error_cases = [=] { return errors; }});
}

template <typename P>
void bool_op(const std::string& name, P p) {
  register_op_info(
      {.name = name,
       .samples = [](ScalarType dt, std::mt19937_64& rng) { return samples(dt, rng, -5, 5); },
       .reference =
           [=](const Stack& a) {
             const Tensor& x = a[0].tensor();
             return std::vector<Tensor>{
                 map_unary_f64(x, kBool, [&](double v) { return p(v) ? 1.0 : 0.0; })};
           }});
}

Tensor bool_tensor() { return tensor({1, 0}).to(kBool); }

const auto kNeg = []<typename T>(T v) { return neg_ref(v); };
const auto kAbs = []<typename T>(T v) {
  if constexpr (is_int_v<T>) {
    return v < T(0) ? neg_ref(v) : v;
  } else {
    return T(std::fabs(static_cast<double>(v)));
  }
};
const auto kRelu = []<typename T>(T v) {
  if constexpr (is_floating_v<T>) {
    if (std::isnan(static_cast<double>(v))) return v;
  }
  return v > T(0) ? v : T(0);
};

// Round half to even, written independently of nearbyint.
double round_half_even(double v) {
  if (!std::isfinite(v)) return v;
  double r = std::floor(v + 0.5);
  if (r - v == 0.5 && std::fmod(r, 2.0) != 0) r -= 1;
  return r;
}

template <double (*F)(double)>
constexpr auto rounding_ref = []<typename T>(T v) {
  if constexpr (std::is_integral_v<T>) {
    return v;
  } else {
    return T(F(static_cast<double>(v)));
  }
};
double floor_d(double v) { return std::floor(v); }
double ceil_d(double v) { return std::ceil(v); }
double trunc_d(double v) { return std::trunc(v); }

double max_finite(ScalarType t) {
  switch (t) {
    case kFloat16:
      return 65504.0;
    case kBFloat16:
      return 3.3895313892515355e38;
    case kFloat32:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

const bool registered = [] {
  floating_op("exp", [](double x) { return std::exp(x); });
  floating_op("exp2", [](double x) { return std::exp2(x); });
  floating_op("expm1", [](double x) { return std::expm1(x); });
  floating_op(
      "log", [](double x) { return std::log(x); }, 0.01, 10);
  floating_op(
      "log2", [](double x) { return std::log2(x); }, 0.01, 10);
  floating_op(
      "log10", [](double x) { return std::log10(x); }, 0.01, 10);
  floating_op(
      "log1p", [](double x) { return std::log1p(x); }, -0.9, 5);
  floating_op(
      "sqrt", [](double x) { return std::sqrt(x); }, 0, 10);
  floating_op(
      "rsqrt", [](double x) { return 1 / std::sqrt(x); }, 0.01, 10);
  floating_op("sin", [](double x) { return std::sin(x); });
  floating_op("cos", [](double x) { return std::cos(x); });
  floating_op(
      "tan", [](double x) { return std::tan(x); }, -1.5, 1.5);
  floating_op(
      "asin", [](double x) { return std::asin(x); }, -1, 1);
  floating_op(
      "acos", [](double x) { return std::acos(x); }, -1, 1);
  floating_op("atan", [](double x) { return std::atan(x); });
  floating_op("sinh", [](double x) { return std::sinh(x); });
  floating_op("cosh", [](double x) { return std::cosh(x); });
  floating_op("tanh", [](double x) { return std::tanh(x); });
  floating_op("sigmoid", sigmoid_ref);
  floating_op("erf", [](double x) { return std::erf(x); });
  floating_op("erfinv", erfinv_ref, -0.99, 0.99);
  floating_op("reciprocal", [](double x) { return 1 / x; });
  floating_op("silu", silu_ref);
  inplace_floating_op("exp_", [](double x) { return std::exp(x); });
  inplace_floating_op("sigmoid_", sigmoid_ref);
  inplace_floating_op("tanh_", [](double x) { return std::tanh(x); });
  inplace_floating_op(
      "sqrt_", [](double x) { return std::sqrt(x); }, 0, 10);

  same_dtype_op("neg", kNeg, {{{bool_tensor()}, ErrorKind::DType, "neg of bool"}});
  same_dtype_op("neg_", kNeg,
                {{{bool_tensor()}, ErrorKind::DType, "neg_ of bool"},
                 {{tensor({1.0, 2.0}).expand({3, 2})}, ErrorKind::Value, "expanded self"}},
                -5, 5, true);
  same_dtype_op("abs", kAbs, {{{bool_tensor()}, ErrorKind::DType, "abs of bool"}});
  same_dtype_op("relu", kRelu, {{{bool_tensor()}, ErrorKind::DType, "relu of bool"}});
  same_dtype_op("relu_", kRelu,
                {{{bool_tensor()}, ErrorKind::DType, "relu_ of bool"},
                 {{tensor({1, 2}).expand({3, 2})}, ErrorKind::Value, "expanded self"}},
                -5, 5, true);
  same_dtype_op("sign",
                []<typename T>(T v) {
                  if constexpr (std::is_same_v<T, bool>) {
                    return v;
                  } else {
                    const double x = static_cast<double>(v);
                    return T(x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0);  // NaN -> 0, as PyTorch
                  }
                },
                {});
  same_dtype_op("floor", rounding_ref<floor_d>,
                {{{bool_tensor()}, ErrorKind::DType, "floor of bool"}});
  same_dtype_op("ceil", rounding_ref<ceil_d>,
                {{{bool_tensor()}, ErrorKind::DType, "ceil of bool"}});
  same_dtype_op("round", rounding_ref<round_half_even>,
                {{{bool_tensor()}, ErrorKind::DType, "round of bool"}});
  same_dtype_op("trunc", rounding_ref<trunc_d>,
                {{{bool_tensor()}, ErrorKind::DType, "trunc of bool"}});
  same_dtype_op("frac",
                []<typename T>(T v) {
                  const double x = static_cast<double>(v);
                  return T(x - std::trunc(x));
                },
                {{{tensor({1, 2})}, ErrorKind::DType, "frac of int64"}});
  same_dtype_op("bitwise_not",
                []<typename T>(T v) {
                  if constexpr (std::is_same_v<T, bool>) {
                    return !v;
                  } else if constexpr (is_int_v<T>) {
                    return static_cast<T>(~v);
                  } else {
                    return v;  // never sampled: bitwise_not rejects floating dtypes
                  }
                },
                {{{tensor({1.0, 2.0})}, ErrorKind::DType, "bitwise_not of float32"}});

  bool_op("logical_not", [](double v) { return v == 0; });
  bool_op("isnan", [](double v) { return std::isnan(v); });
  bool_op("isinf", [](double v) { return std::isinf(v); });
  bool_op("isfinite", [](double v) { return std::isfinite(v); });

  register_op_info(
      {.name = "gelu",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             std::vector<SampleInput> out;
             for (const char* mode : {"none", "tanh"}) {
               for (SampleInput s : samples(dt, rng, -5, 5)) {
                 s.args.emplace_back(std::string(mode));
                 s.description += std::string(" approximate=") + mode;
                 out.push_back(std::move(s));
               }
             }
             return out;
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             const bool tanh = a[1].string() == "tanh";
             return std::vector<Tensor>{
                 map_unary_f64(x, x.dtype(), tanh ? gelu_tanh_ref : gelu_ref)};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{tensor({1.0}), std::string("fast")}, ErrorKind::Value, "unknown approximate"},
                 {{tensor({1, 2}), std::string("none")}, ErrorKind::DType, "gelu of int64"}};
           }});
  register_op_info(
      {.name = "softplus",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             std::vector<SampleInput> out;
             for (SampleInput s : samples(dt, rng, -5, 5)) {
               SampleInput t = s;
               s.args.emplace_back(Scalar(1));
               s.args.emplace_back(Scalar(20));
               out.push_back(std::move(s));
               t.args.emplace_back(Scalar(2.0));
               t.args.emplace_back(Scalar(1.0));
               t.description += " beta=2 threshold=1";
               out.push_back(std::move(t));
             }
             return out;
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             const double beta = a[1].scalar().to_double(), th = a[2].scalar().to_double();
             return std::vector<Tensor>{map_unary_f64(x, x.dtype(), [=](double v) {
               return v * beta > th ? v : std::log1p(std::exp(v * beta)) / beta;
             })};
           },
       .error_cases =
           [] {
             return std::vector<ErrorCase>{
                 {{tensor({1, 2}), Scalar(1), Scalar(20)}, ErrorKind::DType, "softplus of int64"}};
           }});
  register_op_info(
      {.name = "nan_to_num",
       .samples =
           [](ScalarType dt, std::mt19937_64& rng) {
             std::vector<SampleInput> out;
             for (SampleInput s : samples(dt, rng, -5, 5)) {
               SampleInput t = s;
               s.args.emplace_back(std::nullopt);
               s.args.emplace_back(std::nullopt);
               s.args.emplace_back(std::nullopt);
               out.push_back(std::move(s));
               t.args.emplace_back(1.5);
               t.args.emplace_back(100.0);
               t.args.emplace_back(-7.0);
               t.description += " nan=1.5 posinf=100 neginf=-7";
               out.push_back(std::move(t));
             }
             return out;
           },
       .reference =
           [](const Stack& a) {
             const Tensor& x = a[0].tensor();
             const double hi = a[2].is_none() ? max_finite(x.dtype()) : a[2].to_double();
             const double lo = a[3].is_none() ? -max_finite(x.dtype()) : a[3].to_double();
             const double nv = a[1].is_none() ? 0.0 : a[1].to_double();
             if (!is_floating(x.dtype())) {
               return std::vector<Tensor>{map_typed(
                   x, x.dtype(), []<typename T, typename R>(T v) { return static_cast<R>(v); })};
             }
             return std::vector<Tensor>{map_unary_f64(x, x.dtype(), [=](double v) {
               return std::isnan(v) ? nv : v == INFINITY ? hi : v == -INFINITY ? lo : v;
             })};
           }});
  return true;
}();

}  // namespace
}  // namespace kiln::testing
