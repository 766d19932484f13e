// The reference interpreter and value-range handlers of the loop IR (src/lower/handlers/): bodies
// built by hand, evaluated with the interpreter and compared with the eager ops on real tensors;
// handler scoping; value ranges (exact where the analysis should be, and always sound: every value
// the interpreter computes lies in the range).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "kiln/kiln.h"
#include "src/lower/handlers/interpreter_handler.h"
#include "src/lower/handlers/value_range_handler.h"

using namespace kiln;
using namespace kiln::lower;

namespace {

using Buffers = std::map<std::string, Tensor, std::less<>>;

std::function<Tensor(std::string_view)> lookup(const Buffers& buffers) {
  return [&buffers](std::string_view name) {
    auto it = buffers.find(name);
    return it == buffers.end() ? Tensor() : it->second;
  };
}

Pointwise pointwise(ScalarType dtype, std::vector<sym::ExprPtr> ranges, Loader fn) {
  return Pointwise{dtype, std::move(ranges), std::move(fn)};
}

sym::ExprPtr n(int64_t v) { return sym::integer(v); }

// Element i of a contiguous tensor.
Element element_at(const Tensor& t, int64_t i) {
  return visit_dtype(
      t.dtype(), [&]<typename T>() { return Element::of(static_cast<const T*>(t.data_ptr())[i]); });
}

// Elementwise equality: NaN equals NaN; floats within rtol (0: exactly equal); integers exactly.
::testing::AssertionResult same_values(const Tensor& actual, const Tensor& expected,
                                       double rtol = 0) {
  if (actual.dtype() != expected.dtype())
    return ::testing::AssertionFailure() << "dtype " << dtype_name(actual.dtype())
                                         << " vs expected " << dtype_name(expected.dtype());
  if (actual.sizes() != expected.sizes()) return ::testing::AssertionFailure() << "shapes differ";
  const Tensor a = actual.contiguous(), e = expected.contiguous();
  for (int64_t i = 0; i < a.numel(); ++i) {
    const Element x = element_at(a, i), y = element_at(e, i);
    bool ok;
    if (is_floating(x.dtype())) {
      const double u = x.to_double(), v = y.to_double();
      ok = (std::isnan(u) && std::isnan(v)) || u == v || std::fabs(u - v) <= rtol * std::fabs(v);
    } else {
      ok = visit_dtype(x.dtype(), [&]<typename T>() {
        if constexpr (is_floating_v<T>)
          return false;
        else
          return x.get<T>() == y.get<T>();
      });
    }
    if (!ok)
      return ::testing::AssertionFailure()
             << "element " << i << ": " << x.to_string() << " vs expected " << y.to_string();
  }
  return ::testing::AssertionSuccess();
}

// Edge values per dtype kind; integers wrap into the dtype (-1 is uint64's max).
const std::vector<double> kFloatValues = {0.0,    -0.0, 1.0,  -1.0,  0.5,      -0.5,      1.5,
                                          2.5,    -2.5, 3.7,  -3.7,  100.0,    1e-3,      0.999,
                                          -0.999, 20.0, 1e30, -1e30, INFINITY, -INFINITY, NAN};
const std::vector<int64_t> kIntValues = {0,   1,   -1,        2,         -2,        3,        7,
                                         -7,  8,   63,        64,        100,       -128,     127,
                                         255, 256, INT32_MIN, INT32_MAX, INT64_MIN, INT64_MAX};

Tensor values_of(ScalarType dtype) {
  if (dtype == kBool) return from_vector(std::vector<bool>{false, true});
  if (is_floating(dtype)) return from_vector(kFloatValues).to(dtype);
  return from_vector(kIntValues).to(dtype);
}

// Every pair (a, b) of values: a repeats each value, b tiles them.
std::pair<Tensor, Tensor> all_pairs(const Tensor& values) {
  const int64_t k = values.numel();
  Tensor a = values.unsqueeze(1).expand({k, k}).contiguous().reshape({k * k});
  Tensor b = values.unsqueeze(0).expand({k, k}).contiguous().reshape({k * k});
  return {a, b};
}

// The computation dtype a body uses for values of `dtype` (float16/bfloat16 compute in float32).
ScalarType compute_dtype(ScalarType dtype) {
  return dtype == kFloat16 || dtype == kBFloat16 ? kFloat32 : dtype;
}

using EagerUnary = std::function<Tensor(const Tensor&)>;
using EagerBinary = std::function<Tensor(const Tensor&, const Tensor&)>;

const std::vector<std::pair<UnaryOp, EagerUnary>>& unary_table() {
  static const std::vector<std::pair<UnaryOp, EagerUnary>> table = {
      {UnaryOp::neg, [](const Tensor& t) { return kiln::neg(t); }},
      {UnaryOp::abs, [](const Tensor& t) { return kiln::abs(t); }},
      {UnaryOp::sign, [](const Tensor& t) { return kiln::sign(t); }},
      {UnaryOp::exp, [](const Tensor& t) { return kiln::exp(t); }},
      {UnaryOp::exp2, [](const Tensor& t) { return kiln::exp2(t); }},
      {UnaryOp::expm1, [](const Tensor& t) { return kiln::expm1(t); }},
      {UnaryOp::log, [](const Tensor& t) { return kiln::log(t); }},
      {UnaryOp::log2, [](const Tensor& t) { return kiln::log2(t); }},
      {UnaryOp::log10, [](const Tensor& t) { return kiln::log10(t); }},
      {UnaryOp::log1p, [](const Tensor& t) { return kiln::log1p(t); }},
      {UnaryOp::sqrt, [](const Tensor& t) { return kiln::sqrt(t); }},
      {UnaryOp::rsqrt, [](const Tensor& t) { return kiln::rsqrt(t); }},
      {UnaryOp::reciprocal, [](const Tensor& t) { return kiln::reciprocal(t); }},
      {UnaryOp::sin, [](const Tensor& t) { return kiln::sin(t); }},
      {UnaryOp::cos, [](const Tensor& t) { return kiln::cos(t); }},
      {UnaryOp::tan, [](const Tensor& t) { return kiln::tan(t); }},
      {UnaryOp::asin, [](const Tensor& t) { return kiln::asin(t); }},
      {UnaryOp::acos, [](const Tensor& t) { return kiln::acos(t); }},
      {UnaryOp::atan, [](const Tensor& t) { return kiln::atan(t); }},
      {UnaryOp::sinh, [](const Tensor& t) { return kiln::sinh(t); }},
      {UnaryOp::cosh, [](const Tensor& t) { return kiln::cosh(t); }},
      {UnaryOp::tanh, [](const Tensor& t) { return kiln::tanh(t); }},
      {UnaryOp::erf, [](const Tensor& t) { return kiln::erf(t); }},
      {UnaryOp::erfinv, [](const Tensor& t) { return kiln::erfinv(t); }},
      {UnaryOp::sigmoid, [](const Tensor& t) { return kiln::sigmoid(t); }},
      {UnaryOp::floor, [](const Tensor& t) { return kiln::floor(t); }},
      {UnaryOp::ceil, [](const Tensor& t) { return kiln::ceil(t); }},
      {UnaryOp::round, [](const Tensor& t) { return kiln::round(t); }},
      {UnaryOp::trunc, [](const Tensor& t) { return kiln::trunc(t); }},
      {UnaryOp::frac, [](const Tensor& t) { return kiln::frac(t); }},
      {UnaryOp::logical_not, [](const Tensor& t) { return kiln::logical_not(t); }},
      {UnaryOp::bitwise_not, [](const Tensor& t) { return kiln::bitwise_not(t); }},
      {UnaryOp::isnan, [](const Tensor& t) { return kiln::isnan(t); }},
      {UnaryOp::isinf, [](const Tensor& t) { return kiln::isinf(t); }},
      {UnaryOp::isfinite, [](const Tensor& t) { return kiln::isfinite(t); }},
  };
  return table;
}

const std::vector<std::pair<BinaryOp, EagerBinary>>& binary_table() {
  static const std::vector<std::pair<BinaryOp, EagerBinary>> table = {
      {BinaryOp::add, [](const Tensor& a, const Tensor& b) { return kiln::add(a, b); }},
      {BinaryOp::sub, [](const Tensor& a, const Tensor& b) { return kiln::sub(a, b); }},
      {BinaryOp::mul, [](const Tensor& a, const Tensor& b) { return kiln::mul(a, b); }},
      {BinaryOp::truediv, [](const Tensor& a, const Tensor& b) { return kiln::div(a, b); }},
      {BinaryOp::floordiv,
       [](const Tensor& a, const Tensor& b) { return kiln::div(a, b, "floor"); }},
      {BinaryOp::truncdiv,
       [](const Tensor& a, const Tensor& b) { return kiln::div(a, b, "trunc"); }},
      {BinaryOp::remainder, [](const Tensor& a, const Tensor& b) { return kiln::remainder(a, b); }},
      {BinaryOp::fmod, [](const Tensor& a, const Tensor& b) { return kiln::fmod(a, b); }},
      {BinaryOp::pow, [](const Tensor& a, const Tensor& b) { return kiln::pow(a, b); }},
      {BinaryOp::atan2, [](const Tensor& a, const Tensor& b) { return kiln::atan2(a, b); }},
      {BinaryOp::hypot, [](const Tensor& a, const Tensor& b) { return kiln::hypot(a, b); }},
      {BinaryOp::maximum, [](const Tensor& a, const Tensor& b) { return kiln::maximum(a, b); }},
      {BinaryOp::minimum, [](const Tensor& a, const Tensor& b) { return kiln::minimum(a, b); }},
      {BinaryOp::eq, [](const Tensor& a, const Tensor& b) { return kiln::eq(a, b); }},
      {BinaryOp::ne, [](const Tensor& a, const Tensor& b) { return kiln::ne(a, b); }},
      {BinaryOp::lt, [](const Tensor& a, const Tensor& b) { return kiln::lt(a, b); }},
      {BinaryOp::le, [](const Tensor& a, const Tensor& b) { return kiln::le(a, b); }},
      {BinaryOp::gt, [](const Tensor& a, const Tensor& b) { return kiln::gt(a, b); }},
      {BinaryOp::ge, [](const Tensor& a, const Tensor& b) { return kiln::ge(a, b); }},
      {BinaryOp::logical_and,
       [](const Tensor& a, const Tensor& b) { return kiln::logical_and(a, b); }},
      {BinaryOp::logical_or,
       [](const Tensor& a, const Tensor& b) { return kiln::logical_or(a, b); }},
      {BinaryOp::logical_xor,
       [](const Tensor& a, const Tensor& b) { return kiln::logical_xor(a, b); }},
      {BinaryOp::bitwise_and,
       [](const Tensor& a, const Tensor& b) { return kiln::bitwise_and(a, b); }},
      {BinaryOp::bitwise_or,
       [](const Tensor& a, const Tensor& b) { return kiln::bitwise_or(a, b); }},
      {BinaryOp::bitwise_xor,
       [](const Tensor& a, const Tensor& b) { return kiln::bitwise_xor(a, b); }},
      {BinaryOp::lshift,
       [](const Tensor& a, const Tensor& b) { return kiln::bitwise_left_shift(a, b); }},
      {BinaryOp::rshift,
       [](const Tensor& a, const Tensor& b) { return kiln::bitwise_right_shift(a, b); }},
  };
  return table;
}

// Ops defined on integers and bool too; the others take floating operands (eager promotes
// integers to float for them, the lowering casts first).
bool takes_any_dtype(UnaryOp op) {
  switch (op) {
    case UnaryOp::neg:
    case UnaryOp::abs:
    case UnaryOp::sign:
    case UnaryOp::floor:
    case UnaryOp::ceil:
    case UnaryOp::round:
    case UnaryOp::trunc:
    case UnaryOp::logical_not:
    case UnaryOp::bitwise_not:
    case UnaryOp::isnan:
    case UnaryOp::isinf:
    case UnaryOp::isfinite:
      return true;
    default:
      return false;
  }
}

// Transcendental functions (libm, or a vector path in eager).
bool is_math_function(UnaryOp op) {
  return !takes_any_dtype(op) && op != UnaryOp::frac && op != UnaryOp::reciprocal &&
         op != UnaryOp::sqrt;
}

// exp, log, tanh, sigmoid run vectorized in eager float32/float64 (vec_math.cpp, a few ulps from
// libm); the interpreter uses libm. Other ops match exactly.
double tolerance(UnaryOp op, ScalarType dtype) {
  if (!is_math_function(op)) return 0;
  return dtype == kFloat64 ? 1e-14 : 1e-6;
}

// Casts a float16/bfloat16 load up to float32 and the result back down, as the lowering does.
Val load_compute(BufferRef ref, const Index& i) {
  return cast(load(ref, i[0]), compute_dtype(ref.dtype));
}
Val store_cast(Val v, ScalarType buffer_dtype) {
  return v.dtype == kFloat32 ? cast(v, buffer_dtype) : v;
}

const ScalarType kAllDtypes[] = {kBool,  kUInt8, kUInt16,  kUInt32,   kUInt64,  kInt8,   kInt16,
                                 kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};

}  // namespace

// ---- the interpreter against eager
// ---------------------------------------------------------------

TEST(LowerInterpreter, EveryUnaryOpMatchesEagerOnEveryDtype) {
  int compared = 0;
  for (ScalarType dtype : kAllDtypes) {
    const Tensor x = values_of(dtype);
    const Buffers buffers = {{"x", x}};
    const BufferRef X{"x", dtype};
    for (const auto& [op, eager] : unary_table()) {
      if (!takes_any_dtype(op) && !is_floating(dtype)) continue;
      SCOPED_TRACE(fmt::format("{} on {}", name_of(op), dtype_name(dtype)));
      Tensor expected;
      try {
        expected = eager(x);
      } catch (const Error&) {
        // Eager rejects the dtype; so must the interpreter.
        const Pointwise pw = pointwise(dtype, {n(x.numel())},
                                       [&](const Index& i) { return unary(op, load(X, i[0])); });
        EXPECT_THROW(evaluate(pw, lookup(buffers), {}), Error);
        continue;
      }
      const ScalarType out = expected.dtype();
      const Pointwise pw = pointwise(out, {n(x.numel())}, [&](const Index& i) {
        const Val v = unary(op, load_compute(X, i));
        return produces_bool(op) ? v : store_cast(v, out);
      });
      EXPECT_TRUE(same_values(evaluate(pw, lookup(buffers), {}), expected, tolerance(op, dtype)));
      ++compared;
    }
  }
  EXPECT_GT(compared, 200);
}

TEST(LowerInterpreter, EveryBinaryOpMatchesEagerOnEveryDtype) {
  int compared = 0;
  for (ScalarType dtype : kAllDtypes) {
    auto [a, b] = all_pairs(values_of(dtype));
    const BufferRef A{"a", dtype}, B{"b", dtype};
    for (const auto& [op, eager] : binary_table()) {
      // truediv, atan2 and hypot promote integers to float in eager; the lowering casts first.
      const bool float_only =
          op == BinaryOp::truediv || op == BinaryOp::atan2 || op == BinaryOp::hypot;
      if (float_only && !is_floating(dtype)) continue;
      SCOPED_TRACE(fmt::format("{} on {}", name_of(op), dtype_name(dtype)));
      Tensor lhs = a, rhs = b;
      const bool divides = op == BinaryOp::floordiv || op == BinaryOp::truncdiv ||
                           op == BinaryOp::remainder || op == BinaryOp::fmod;
      if (divides && is_integral(dtype)) {
        // Integer division by zero raises (tested below); keep the other pairs.
        const Tensor keep = kiln::ne(rhs, kiln::zeros({1}, dtype).expand(rhs.sizes()));
        lhs = lhs.index({keep});
        rhs = rhs.index({keep});
      }
      const Buffers buffers = {{"a", lhs}, {"b", rhs}};
      Tensor expected;
      try {
        expected = eager(lhs, rhs);
      } catch (const Error&) {
        const Pointwise pw = pointwise(dtype, {n(lhs.numel())}, [&](const Index& i) {
          return binary(op, load(A, i[0]), load(B, i[0]));
        });
        EXPECT_THROW(evaluate(pw, lookup(buffers), {}), Error);
        continue;
      }
      const ScalarType out = expected.dtype();
      const Pointwise pw = pointwise(out, {n(lhs.numel())}, [&](const Index& i) {
        const Val v = binary(op, load_compute(A, i), load_compute(B, i));
        return produces_bool(op) ? v : store_cast(v, out);
      });
      EXPECT_TRUE(same_values(evaluate(pw, lookup(buffers), {}), expected));
      ++compared;
    }
  }
  EXPECT_GT(compared, 250);
}

TEST(LowerInterpreter, IntegerDivisionByZeroRaisesAsEager) {
  const Buffers buffers = {{"a", kiln::tensor({7, -7}, kInt32)},
                           {"b", kiln::tensor({2, 0}, kInt32)}};
  EXPECT_THROW(kiln::div(buffers.at("a"), buffers.at("b"), "floor"), ValueError);
  for (BinaryOp op :
       {BinaryOp::floordiv, BinaryOp::truncdiv, BinaryOp::remainder, BinaryOp::fmod}) {
    const Pointwise pw = pointwise(kInt32, {n(2)}, [&](const Index& i) {
      return binary(op, load({"a", kInt32}, i[0]), load({"b", kInt32}, i[0]));
    });
    try {
      evaluate(pw, lookup(buffers), {});
      ADD_FAILURE() << name_of(op) << " by zero did not raise";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("division by zero"), std::string::npos) << e.what();
    }
  }
}

TEST(LowerInterpreter, CastsFollowKilnCastRules) {
  // float -> uint8 wraps through int64 (-1.0 -> 255), NaN -> 0, float -> float16 rounds to nearest.
  const Tensor x = kiln::tensor({-1.0, 300.7, NAN, 65519.0, 1e-8, -2.5}, kFloat32);
  const Buffers buffers = {{"x", x}};
  for (ScalarType to : {kUInt8, kInt8, kInt64, kBool, kFloat16, kBFloat16, kFloat64, kUInt64}) {
    SCOPED_TRACE(dtype_name(to));
    const Pointwise pw = pointwise(to, {n(6)}, [&](const Index& i) {
      return cast(load({"x", kFloat32}, i[0]), to);
    });
    EXPECT_TRUE(same_values(evaluate(pw, lookup(buffers), {}), x.to(to)));
  }
}

TEST(LowerInterpreter, ConstantsIndexExprAndWhere) {
  // out[i] = i < 3 ? x[i] * 2 : -1.5 ; and uint64 constants keep their bit pattern.
  const Tensor x = kiln::tensor({1.0, 2.0, 3.0, 4.0, 5.0}, kFloat64);
  const Buffers buffers = {{"x", x}};
  const Pointwise pw = pointwise(kFloat64, {n(5)}, [](const Index& i) {
    const Val cond = binary(BinaryOp::lt, ops().index_expr(i[0], kInt64), constant(3, kInt64));
    const Val twice = binary(BinaryOp::mul, load({"x", kFloat64}, i[0]), constant(2, kFloat64));
    return where(cond, twice, constant(-1.5, kFloat64));
  });
  EXPECT_TRUE(same_values(evaluate(pw, lookup(buffers), {}),
                          kiln::tensor({2.0, 4.0, 6.0, -1.5, -1.5}, kFloat64)));

  const Pointwise big =
      pointwise(kUInt64, {n(1)}, [](const Index&) { return ops().constant_int(-1, kUInt64); });
  EXPECT_EQ(evaluate(big, lookup(buffers), {}).data_ptr<uint64_t>()[0], UINT64_MAX);
}

TEST(LowerInterpreter, LoadsThroughStridesOffsetsAndSymbolicSizes) {
  // A transposed view with a storage offset: the body indexes it with its own strides, relative
  // to its data pointer. The size of dim 0 is a symbol.
  const Tensor base = kiln::arange(20, kInt64).reshape({4, 5});
  const Tensor view = base.slice(0, 1, 4).t();  // (5, 3), strides (1, 5), offset 5
  const Buffers buffers = {{"v", view}};
  const sym::ExprPtr s0 = sym::symbol("s0");
  const Pointwise pw = pointwise(kInt64, {s0, n(3)}, [](const Index& i) {
    return load({"v", kInt64}, sym::add(i[0], sym::mul(i[1], n(5))));
  });
  EXPECT_TRUE(same_values(evaluate(pw, lookup(buffers), {{s0, 5}}), view.contiguous()));
  // Without a value for s0 the size cannot be evaluated.
  EXPECT_THROW(evaluate(pw, lookup(buffers), {}), ValueError);
}

TEST(LowerInterpreter, ComputedBufferRunsItsLoops) {
  const Tensor x = kiln::tensor({1.0, -2.0, 3.0}, kFloat32);
  const Buffers buffers = {{"arg0", x}};
  ComputedBuffer node("buf0", Layout::contiguous(kFloat32, {n(3)}),
                      pointwise(kFloat32, {n(3)}, [](const Index& i) {
                        return unary(UnaryOp::abs, load({"arg0", kFloat32}, i[0]));
                      }));
  EXPECT_TRUE(same_values(evaluate(node, lookup(buffers), {}), kiln::abs(x)));
}

TEST(LowerInterpreter, CapturesStores) {
  InterpreterHandler h(tensor_reader([](std::string_view) { return Tensor(); }));
  h.bind(sym::symbol("i0"), 4);
  {
    HandlerScope scope(h);
    ops().store({"out", kInt32}, sym::add(sym::symbol("i0"), n(1)), constant(7, kInt64));
  }
  ASSERT_EQ(h.stores().size(), 1u);
  EXPECT_EQ(h.stores()[0].buffer, "out");
  EXPECT_EQ(h.stores()[0].offset, 5);
  EXPECT_EQ(h.stores()[0].value.dtype(), kInt32);  // converted to the buffer's dtype
  EXPECT_EQ(h.stores()[0].value.to_int64(), 7);
}

TEST(LowerInterpreter, BadLoadsAreValueErrorsNamingBufferOffsetAndExtent) {
  const Tensor x = kiln::arange(6, kFloat32);
  const Buffers buffers = {{"x", x}, {"s", x.slice(0, 2, 4)}};
  auto run = [&](BufferRef ref, int64_t offset) {
    const Pointwise pw =
        pointwise(ref.dtype, {n(1)}, [=](const Index&) { return load(ref, n(offset)); });
    return evaluate(pw, lookup(buffers), {});
  };
  auto message = [&](BufferRef ref, int64_t offset) -> std::string {
    try {
      run(ref, offset);
    } catch (const ValueError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message({"x", kFloat32}, 6).find("'x' at element offset 6 is out of bounds"),
            std::string::npos);
  EXPECT_NE(message({"x", kFloat32}, 6).find("reaches 6 elements"), std::string::npos);
  EXPECT_NE(message({"x", kFloat32}, -1).find("offset -1"), std::string::npos);
  // A slice reaches only its own elements, though its storage goes on.
  EXPECT_NE(message({"s", kFloat32}, 2).find("reaches 2 elements"), std::string::npos);
  EXPECT_EQ(run({"s", kFloat32}, 1).data_ptr<float>()[0], 3.0f);
  EXPECT_NE(message({"nope", kFloat32}, 0).find("'nope', which is unknown"), std::string::npos);
  EXPECT_NE(message({"x", kInt32}, 0).find("is loaded as dtype int32 but its tensor is float32"),
            std::string::npos);
}

TEST(LowerInterpreter, BodyDtypeMustMatchTheNode) {
  const Buffers buffers = {{"x", kiln::tensor({1.0}, kFloat32)}};
  const Pointwise pw = pointwise(kFloat16, {n(1)}, [](const Index& i) {
    return load({"x", kFloat32}, i[0]);
  });
  EXPECT_THROW(evaluate(pw, lookup(buffers), {}), ValueError);
  const Pointwise mixed = pointwise(kFloat32, {n(1)}, [](const Index& i) {
    return binary(BinaryOp::add, load({"x", kFloat32}, i[0]), constant(1, kFloat64));
  });
  EXPECT_THROW(evaluate(mixed, lookup(buffers), {}), DTypeError);
}

// ---- reductions --------------------------------------------------------------------------------

namespace {

// rows of x reduced over the last dim: out[i0] = reduce over r0 of body(x[i0, r0]).
Reduction row_reduction(ReductionType type, ScalarType result, const Tensor& x,
                        ScalarType value_dtype) {
  const int64_t cols = x.size(1);
  const ScalarType xdtype = x.dtype();
  return Reduction{
      result, {n(x.size(0))}, {n(cols)}, type, [=](const Index& i, const Index& r) {
        return cast(load({"x", xdtype}, sym::add(sym::mul(i[0], n(cols)), r[0])), value_dtype);
      }};
}

Tensor rows_with_nan_and_ties() {
  return kiln::tensor({3.0,       1.0,  3.0,       0.0, -2.0,  // ties for the max
                       1.0,       NAN,  5.0,       NAN, -1.0,  // NaNs
                       -INFINITY, -1.0, -INFINITY, 2.0, 2.0,   // ties for the min and max
                       0.0,       0.0,  0.0,       0.0, 0.0,   // all zero
                       0.25,      1e6,  -3.5,      7.0, 1e-3},
                      kFloat32)
      .reshape({5, 5});
}

}  // namespace

TEST(LowerInterpreter, ReductionsMatchEagerWithNaNAndTies) {
  const Tensor xf = rows_with_nan_and_ties();
  for (ScalarType dtype : {kFloat32, kFloat64, kFloat16, kInt32, kUInt8, kInt64, kBool}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = dtype == kBool ? kiln::ne(xf, kiln::zeros({1})) : xf.to(dtype);
    const Buffers buffers = {{"x", x}};
    const ScalarType v = compute_dtype(dtype);
    auto check = [&](ReductionType type, ScalarType value_dtype, const Tensor& expected,
                     double rtol = 0) {
      SCOPED_TRACE(name_of(type));
      const Reduction red =
          row_reduction(type, reduction_result_dtype(type, value_dtype), x, value_dtype);
      Tensor got = evaluate(red, lookup(buffers), {});
      if (got.dtype() != expected.dtype())
        got = got.to(expected.dtype());  // float16 accumulates in float
      EXPECT_TRUE(same_values(got, expected, rtol));
    };
    const double rtol = is_floating(dtype) ? 1e-6 : 0;
    if (dtype != kBool) {
      const ScalarType sum_dtype = is_floating(dtype) ? v : kInt64;  // eager sums integers in int64
      check(ReductionType::sum, sum_dtype, kiln::sum(x, {1}), rtol);
      check(ReductionType::prod, sum_dtype, kiln::prod(x, 1), rtol);
    }
    check(ReductionType::max, v, kiln::amax(x, {1}).to(v));
    check(ReductionType::min, v, kiln::amin(x, {1}).to(v));
    check(ReductionType::argmax, v, kiln::argmax(x, 1));
    check(ReductionType::argmin, v, kiln::argmin(x, 1));
    check(ReductionType::any, v, kiln::any(x, 1));
    check(ReductionType::all, v, kiln::all(x, 1));
  }
}

TEST(LowerInterpreter, WelfordReductionsMatchEagerMeanAndVariance) {
  // Finite rows (Welford's update turns an infinite value into NaN, as in generated code) and a
  // NaN row.
  const Tensor xf =
      kiln::tensor({3.0, 1.0, 3.0, 0.0, -2.0, 1.0, NAN, 5.0, 2.0, -1.0, 0.25, 1e3, -3.5, 7.0, 1e-3},
                   kFloat32)
          .reshape({3, 5});
  for (ScalarType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor x = xf.to(dtype);
    const Buffers buffers = {{"x", x}};
    const ScalarType v = compute_dtype(dtype);
    const double rtol = dtype == kFloat64 ? 1e-12 : dtype == kFloat32 ? 1e-5 : 1e-2;
    const Tensor mean =
        evaluate(row_reduction(ReductionType::welford_mean, v, x, v), lookup(buffers), {});
    EXPECT_TRUE(same_values(mean, kiln::mean(x, {1}).to(v), rtol));
    const Tensor m2 =
        evaluate(row_reduction(ReductionType::welford_m2, v, x, v), lookup(buffers), {});
    EXPECT_TRUE(same_values(m2, kiln::mul(kiln::var(x, {1}, 0).to(v), 5.0), rtol));
  }
}

TEST(LowerInterpreter, ArgmaxCountsRowMajorOverSeveralReductionDims) {
  const Tensor x = kiln::tensor({1, 9, 3, 9, 0, 2, 5, 5, 8, -1, 8, 0}, kInt64).reshape({2, 2, 3});
  const Buffers buffers = {{"x", x}};
  const sym::ExprPtr s0 = sym::symbol("s0");
  auto body = [](const Index& i, const Index& r) {
    return load({"x", kInt64},
                sym::add(sym::add(sym::mul(i[0], n(6)), sym::mul(r[0], n(3))), r[1]));
  };
  const Reduction argmax{kInt64, {s0}, {n(2), n(3)}, ReductionType::argmax, body};
  EXPECT_TRUE(same_values(evaluate(argmax, lookup(buffers), {{s0, 2}}),
                          kiln::argmax(x.reshape({2, 6}), 1)));
  const Reduction sum{kInt64, {s0}, {n(2), n(3)}, ReductionType::sum, body};
  EXPECT_TRUE(same_values(evaluate(sum, lookup(buffers), {{s0, 2}}), kiln::sum(x, {1, 2})));
}

TEST(LowerInterpreter, FusedReductionsKeepSeparateAccumulators) {
  // One body feeding welford_mean and welford_m2 (as a fused var kernel does): the k-th
  // reduction call of an iteration goes to accumulator k.
  const Tensor x = kiln::tensor({1.0, 2.0, 4.0, 7.0}, kFloat64);
  InterpreterHandler h(tensor_reader([&](std::string_view) { return x; }));
  const sym::ExprPtr r0 = sym::symbol("r0");
  HandlerScope scope(h);
  h.begin_element();
  Val mean, m2, count;
  for (int64_t r = 0; r < 4; ++r) {
    h.bind(r0, r);
    h.begin_iteration();
    const Val v = load({"x", kFloat64}, r0);
    mean = ops().reduction(ReductionType::welford_mean, v);
    m2 = ops().reduction(ReductionType::welford_m2, v);
    count = ops().reduction(ReductionType::sum, constant(1, kInt64));
  }
  EXPECT_DOUBLE_EQ(h.value(mean).to_double(), 3.5);
  EXPECT_DOUBLE_EQ(h.value(m2).to_double(), 21.0);  // 6.25 + 2.25 + 0.25 + 12.25
  EXPECT_EQ(h.value(count).to_int64(), 4);
}

TEST(LowerInterpreter, EmptyReductionsGiveIdentityOrRaise) {
  const Buffers buffers = {{"x", kiln::zeros({0}, kFloat32)}};
  auto red = [](ReductionType type, ScalarType dtype) {
    return Reduction{dtype, {n(2)}, {n(0)}, type, [](const Index&, const Index& r) {
                       return load({"x", kFloat32}, r[0]);
                     }};
  };
  EXPECT_TRUE(same_values(evaluate(red(ReductionType::sum, kFloat32), lookup(buffers), {}),
                          kiln::zeros({2}, kFloat32)));
  EXPECT_TRUE(same_values(evaluate(red(ReductionType::prod, kFloat32), lookup(buffers), {}),
                          kiln::ones({2}, kFloat32)));
  EXPECT_TRUE(same_values(evaluate(red(ReductionType::all, kBool), lookup(buffers), {}),
                          kiln::ones({2}, kBool)));
  EXPECT_TRUE(same_values(evaluate(red(ReductionType::any, kBool), lookup(buffers), {}),
                          kiln::zeros({2}, kBool)));
  EXPECT_THROW(evaluate(red(ReductionType::max, kFloat32), lookup(buffers), {}), ValueError);
  EXPECT_THROW(evaluate(red(ReductionType::argmin, kInt64), lookup(buffers), {}), ValueError);
}

// ---- handler scopes ----------------------------------------------------------------------------

TEST(LowerHandlerScope, NestedScopesRestoreThePreviousHandler) {
  InterpreterHandler outer(tensor_reader([](std::string_view) { return Tensor(); }));
  ValueRangeHandler inner({});
  EXPECT_THROW(ops(), ValueError);  // none installed
  {
    HandlerScope a(outer);
    EXPECT_EQ(&ops(), &outer);
    {
      HandlerScope b(inner);
      EXPECT_EQ(&ops(), &inner);
    }
    EXPECT_EQ(&ops(), &outer);
    // An exception leaving the inner scope restores the outer handler too.
    try {
      HandlerScope b(inner);
      throw ValueError("boom");
    } catch (const ValueError&) {
    }
    EXPECT_EQ(&ops(), &outer);
    // The same when the body itself throws under the inner handler (interpreter: unknown buffer).
    {
      InterpreterHandler failing(tensor_reader([](std::string_view) { return Tensor(); }));
      EXPECT_THROW(
          {
            HandlerScope c(failing);
            load({"missing", kFloat32}, n(0));
          },
          ValueError);
    }
    EXPECT_EQ(&ops(), &outer);
  }
  EXPECT_THROW(ops(), ValueError);
}

// ---- value ranges ------------------------------------------------------------------------------

namespace {

sym::ValueRange R(int64_t lo, int64_t hi) { return sym::ValueRange::between(lo, hi); }
ValueInterval I(int64_t lo, int64_t hi, ScalarType dtype = kInt64) {
  return ValueInterval::between(lo, hi, dtype);
}
ValueInterval F(double lo, double hi, ScalarType dtype = kFloat32, bool nan = false) {
  return ValueInterval::between_float(lo, hi, dtype, nan);
}

}  // namespace

TEST(LowerValueRange, IndexExpressionsFollowLoopAndSymbolRanges) {
  const sym::ExprPtr s0 = sym::symbol("s0"), s1 = sym::symbol("s1");
  // A flat index i0 * s1 + i1 over (s0, s1).
  auto flat = [&](const Index& i) {
    return ops().index_expr(sym::add(sym::mul(i[0], s1), i[1]), kInt64);
  };
  const ValueInterval small = bound(flat, {s0, s1}, {{s0, R(2, 1000)}, {s1, R(2, 1000)}});
  EXPECT_EQ(small, I(0, 999 * 1000 + 999));
  EXPECT_TRUE(small.fits_in(kInt32));
  const ValueInterval large = bound(flat, {s0, s1}, {{s0, R(2, 100000)}, {s1, R(2, 100000)}});
  EXPECT_FALSE(large.fits_in(kInt32));
  EXPECT_TRUE(large.is_nonnegative());
  // An unbounded size symbol leaves the index unbounded above.
  EXPECT_EQ(bound(flat, {s0, s1}, {{s0, R(2, 10)}}), ValueInterval::full(kInt64));
  // Constant sizes need no symbol ranges; the index converts to the requested dtype.
  EXPECT_EQ(bound([](const Index& i) { return ops().index_expr(i[0], kInt32); }, {n(128)}),
            I(0, 127, kInt32));
  EXPECT_EQ(bound([](const Index& i) { return ops().index_expr(i[0], kUInt8); }, {n(1000)}),
            ValueInterval::full(kUInt8));
  EXPECT_EQ(bound([](const Index& i) { return ops().index_expr(i[0], kFloat32); }, {n(5)}),
            F(0, 4));
}

TEST(LowerValueRange, IntegerArithmeticIsExactUntilItCouldWrap) {
  const BufferRef U8{"u8", kUInt8}, I8{"i8", kInt8};
  // uint8 load widened to int32, + 1, * 2: exactly [2, 512].
  EXPECT_EQ(bound(
                [&](const Index& i) {
                  const Val v =
                      binary(BinaryOp::add, cast(load(U8, i[0]), kInt32), constant(1, kInt32));
                  return binary(BinaryOp::mul, v, constant(2, kInt32));
                },
                {n(4)}),
            I(2, 512, kInt32));
  // int8 + int8 may wrap: the full range.
  EXPECT_EQ(
      bound([&](const Index& i) { return binary(BinaryOp::add, load(I8, i[0]), load(I8, i[0])); },
            {n(4)}),
      ValueInterval::full(kInt8));
  // floordiv and remainder by a positive constant.
  auto index = [](const Index& i) { return ops().index_expr(i[0], kInt64); };
  EXPECT_EQ(
      bound(
          [&](const Index& i) { return binary(BinaryOp::floordiv, index(i), constant(8, kInt64)); },
          {n(1024)}),
      I(0, 127));
  EXPECT_EQ(bound(
                [&](const Index& i) {
                  return binary(BinaryOp::remainder, index(i), constant(8, kInt64));
                },
                {n(1024)}),
            I(0, 7));
  EXPECT_EQ(bound(
                [&](const Index& i) {
                  return binary(BinaryOp::remainder, index(i), constant(-8, kInt64));
                },
                {n(1024)}),
            I(-7, 0));
  EXPECT_EQ(bound(
                [&](const Index& i) {
                  return binary(BinaryOp::fmod, unary(UnaryOp::neg, index(i)), constant(8, kInt64));
                },
                {n(1024)}),
            I(-7, 0));
  EXPECT_EQ(
      bound([&](const Index& i) { return binary(BinaryOp::rshift, index(i), constant(4, kInt64)); },
            {n(1024)}),
      I(0, 63));
  EXPECT_EQ(bound(
                [&](const Index& i) {
                  return binary(BinaryOp::bitwise_and, index(i), constant(15, kInt64));
                },
                {n(1024)}),
            I(0, 15));
  EXPECT_EQ(
      bound([&](const Index& i) { return binary(BinaryOp::pow, index(i), constant(2, kInt64)); },
            {n(10)}),
      I(0, 81));
  // Constants are exact, uint64 ones included.
  EXPECT_EQ(bound([](const Index&) { return ops().constant_int(-1, kUInt64); }, {n(1)}).to_string(),
            "[18446744073709551615, 18446744073709551615] (uint64)");
  EXPECT_EQ(bound(
                [](const Index&) {
                  return binary(BinaryOp::mul, constant(7, kInt16), constant(-3, kInt16));
                },
                {n(1)}),
            I(-21, -21, kInt16));
}

TEST(LowerValueRange, ComparisonsAndWhereAreDecidedWhenTheRangesDecide) {
  auto index = [](const Index& i) { return ops().index_expr(i[0], kInt64); };
  // i0 < 100 over [0, 9] is always true: where picks its first branch only.
  EXPECT_EQ(
      bound([&](const Index& i) { return binary(BinaryOp::lt, index(i), constant(100, kInt64)); },
            {n(10)}),
      I(1, 1, kBool));
  EXPECT_EQ(bound(
                [&](const Index& i) {
                  return where(binary(BinaryOp::lt, index(i), constant(100, kInt64)),
                               constant(1, kInt32), constant(-5, kInt32));
                },
                {n(10)}),
            I(1, 1, kInt32));
  EXPECT_EQ(bound(
                [&](const Index& i) {
                  return where(binary(BinaryOp::lt, index(i), constant(5, kInt64)),
                               constant(1, kInt32), constant(-5, kInt32));
                },
                {n(10)}),
            I(-5, 1, kInt32));
}

TEST(LowerValueRange, FloatRangesTrackNaNAndMonotoneFunctions) {
  const BufferRef X{"x", kFloat32};
  auto x = [&](const Index& i) { return load(X, i[0]); };
  // A load of unknown data: everything, NaN included; exp keeps NaN possible and is >= 0.
  const ValueInterval e = bound([&](const Index& i) { return unary(UnaryOp::exp, x(i)); }, {n(4)});
  EXPECT_TRUE(e.maybe_nan);
  EXPECT_EQ(e.lo, 0.0);
  EXPECT_FALSE(e.is_nonnegative());  // NaN
  // With x known in [0, 1] (no NaN): sqrt stays in [0, 1], x * x + 1 in [1, 2], exactly.
  const BufferRanges unit = {{"x", F(0, 1)}};
  EXPECT_EQ(bound([&](const Index& i) { return unary(UnaryOp::sqrt, x(i)); }, {n(4)}, {}, unit),
            F(0, 1));
  EXPECT_EQ(bound(
                [&](const Index& i) {
                  return binary(BinaryOp::add, binary(BinaryOp::mul, x(i), x(i)),
                                constant(1, kFloat32));
                },
                {n(4)}, {}, unit),
            F(1, 2));
  // relu(x) = maximum(x, 0) is non-negative unless x may be NaN.
  auto relu = [&](const Index& i) {
    return binary(BinaryOp::maximum, x(i), constant(0, kFloat32));
  };
  EXPECT_FALSE(bound(relu, {n(4)}).is_nonnegative());
  EXPECT_TRUE(bound(relu, {n(4)}, {}, {{"x", F(-5, 5)}}).is_nonnegative());
  // log of a range reaching below 0 may be NaN; sigmoid is within [0, 1]; 0 * inf may be NaN.
  EXPECT_TRUE(bound([&](const Index& i) { return unary(UnaryOp::log, x(i)); }, {n(4)}, {},
                    {{"x", F(-1, 1)}})
                  .maybe_nan);
  const ValueInterval s = bound([&](const Index& i) { return unary(UnaryOp::sigmoid, x(i)); },
                                {n(4)}, {}, {{"x", F(-1e30, 1e30)}});
  EXPECT_GE(s.lo, 0.0);
  EXPECT_LE(s.hi, 1.0 + 1e-6);
  EXPECT_FALSE(s.maybe_nan);
  EXPECT_TRUE(
      bound(
          [&](const Index& i) { return binary(BinaryOp::mul, x(i), constant(INFINITY, kFloat32)); },
          {n(4)}, {}, unit)
          .maybe_nan);
  // Casting [0, 300.5] to uint8 may wrap; [0, 200.5] truncates to [0, 200].
  EXPECT_EQ(
      bound([&](const Index& i) { return cast(x(i), kUInt8); }, {n(4)}, {}, {{"x", F(0, 300.5)}}),
      ValueInterval::full(kUInt8));
  EXPECT_EQ(
      bound([&](const Index& i) { return cast(x(i), kUInt8); }, {n(4)}, {}, {{"x", F(0, 200.5)}}),
      I(0, 200, kUInt8));
  // float32 endpoints are float32 values (0.1 rounds outward).
  const ValueInterval tenth = F(0.1, 0.1);
  EXPECT_LE(tenth.lo, 0.1);
  EXPECT_GE(tenth.hi, 0.1);
  EXPECT_EQ(static_cast<double>(static_cast<float>(tenth.lo)), tenth.lo);
}

TEST(LowerValueRange, Reductions) {
  const sym::ExprPtr s0 = sym::symbol("s0");
  auto body = [](const Index&, const Index& r) { return cast(load({"x", kUInt8}, r[0]), kInt64); };
  EXPECT_EQ(bound(Reduction{kInt64, {n(4)}, {n(16)}, ReductionType::sum, body}), I(0, 16 * 255));
  EXPECT_EQ(bound(Reduction{kInt64, {n(4)}, {s0}, ReductionType::argmax, body}, {{s0, R(2, 50)}}),
            I(0, 49));
  EXPECT_EQ(bound(Reduction{kInt64, {n(4)}, {s0}, ReductionType::max, body}, {{s0, R(2, 50)}}),
            I(0, 255));
  EXPECT_EQ(bound(Reduction{kBool, {n(4)}, {n(3)}, ReductionType::any, body}), I(0, 1, kBool));
  // A sum that could wrap is the full range (uint64 values over up to 2^63 elements: the bound
  // itself overflows 128 bits).
  auto ubody = [](const Index&, const Index& r) { return load({"x", kUInt64}, r[0]); };
  EXPECT_EQ(bound(Reduction{kUInt64, {n(4)}, {s0}, ReductionType::sum, ubody},
                  {{s0, R(1, INT64_MAX - 1)}}),
            ValueInterval::full(kUInt64));
  // An unbounded reduction length makes a sum of positive values unbounded.
  EXPECT_EQ(bound(Reduction{kInt64, {n(4)}, {s0}, ReductionType::sum, body}),
            ValueInterval::full(kInt64));
  auto fbody = [](const Index&, const Index& r) { return load({"x", kFloat32}, r[0]); };
  const ValueInterval m2 = bound(
      Reduction{kFloat32, {n(4)}, {n(8)}, ReductionType::welford_m2, fbody}, {}, {{"x", F(-1, 1)}});
  EXPECT_TRUE(m2.is_nonnegative());
}

// Soundness: every value the interpreter computes lies in the range the analysis gives, with the
// loads' ranges taken from the actual data.
TEST(LowerValueRange, ContainsEveryInterpretedValue) {
  for (ScalarType dtype : {kInt32, kUInt8, kInt64, kFloat32, kFloat64}) {
    Tensor x = values_of(dtype);
    if (is_floating(dtype)) x = x.index({kiln::isfinite(x)});  // finite data, NaN-free ranges
    auto [a, b] = all_pairs(x);
    const Buffers buffers = {{"a", a}, {"b", b}};
    BufferRanges ranges;
    for (const auto& [name, t] : buffers) {
      ranges[name] = is_floating(dtype)
                         ? F(kiln::amin(t).to(kFloat64).item<double>(),
                             kiln::amax(t).to(kFloat64).item<double>(), dtype)
                         : ValueInterval::between(kiln::amin(t).to(kInt64).item<int64_t>(),
                                                  kiln::amax(t).to(kInt64).item<int64_t>(), dtype);
    }
    auto check = [&](const std::string& what, const Loader& fn) {
      SCOPED_TRACE(fmt::format("{} on {}", what, dtype_name(dtype)));
      const ValueInterval r = bound(fn, {n(a.numel())}, {}, ranges);
      Tensor values;
      try {
        values = evaluate(pointwise(r.dtype, {n(a.numel())}, fn), lookup(buffers), {});
      } catch (const Error&) {
        return;  // undefined for these operands (division by zero): nothing to contain
      }
      for (int64_t i = 0; i < values.numel(); ++i) {
        const Element v = element_at(values, i);
        bool inside;
        if (r.is_integral()) {
          const __int128 w = visit_dtype(v.dtype(), [&]<typename T>() -> __int128 {
            if constexpr (is_floating_v<T>)
              return 0;
            else
              return static_cast<__int128>(v.get<T>());
          });
          inside = r.ilo <= w && w <= r.ihi;
        } else {
          const double d = v.to_double();
          inside = std::isnan(d) ? r.maybe_nan : (r.lo <= d && d <= r.hi);
        }
        if (!inside) {
          ADD_FAILURE() << "value " << v.to_string() << " (a = " << element_at(a, i).to_string()
                        << ", b = " << element_at(b, i).to_string() << ") outside "
                        << r.to_string();
          return;
        }
      }
    };
    const BufferRef A{"a", dtype}, B{"b", dtype};
    for (const auto& [op, eager] : unary_table()) {
      if (!takes_any_dtype(op) && !is_floating(dtype)) continue;
      if (is_floating(dtype) && op == UnaryOp::bitwise_not) continue;
      check(std::string(name_of(op)),
            [&, op = op](const Index& i) { return unary(op, load(A, i[0])); });
    }
    for (const auto& [op, eager] : binary_table()) {
      check(std::string(name_of(op)),
            [&, op = op](const Index& i) { return binary(op, load(A, i[0]), load(B, i[0])); });
    }
  }
}
