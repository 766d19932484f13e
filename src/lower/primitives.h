// The loop-IR primitives: one table from which every handler takes what it needs.
//
// Note [The primitive table]
// A primitive (exp, floordiv, lshift, ...) is the unit of arithmetic in a define-by-run loop
// body (Note [Define-by-run loop bodies]). Everything Kiln knows about one is in its row below or
// follows from its name:
//   - name, arity, and the operand dtypes it is defined for (a float-only function is not
//     defined on integers; the lowering casts first);
//   - its result dtype: the operands' dtype, or bool (comparisons, logical ops, isnan, ...);
//   - whether an integer zero second operand is a division by zero (an error, as in eager);
//   - its cost class, which the fusion heuristics count (DependencyHandler);
//   - its vector form on 8 float32 lanes and its form on bool lanes (masks), as format strings
//     over the operands {0} {1}, empty where the printer falls back to scalar code;
//   - its value-range rule: monotone over a domain (the handler then needs nothing else), a rule
//     written in the value-range handler, or unknown (the dtype's full range, always sound);
//   - its scalar form is not a column: it is the function `kiln::prim::<name>` of
//     src/numerics/scalar_ops.inc, which the eager kernels, the interpreter and the generated code
//     all call (Note [One definition of a primitive's semantics]); in a vectorized build the
//     generated code's scalar form of an expensive float row with a vector form is lane 0 of
//     that vector form instead (Note [One value per expression] in codegen/cpp/prelude.cpp).
// Adding a primitive: its name in KILN_LOOP_UNARY_OPS or KILN_LOOP_BINARY_OPS and its row here,
// its scalar function in scalar_ops.inc, its vector helper in codegen/cpp/prelude.cpp if the
// vector form needs one, and the lowering that emits it (ARCHITECTURE.md, "Add a primitive").
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include "kiln/dtype.h"
#include "src/numerics/scalar_ops.h"

namespace kiln::lower {

// clang-format off
#define KILN_LOOP_UNARY_OPS(X)                                                                 \
  X(neg) X(abs) X(sign) X(exp) X(exp2) X(expm1) X(log) X(log2) X(log10) X(log1p) X(sqrt)       \
  X(rsqrt) X(reciprocal) X(sin) X(cos) X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(tanh)  \
  X(erf) X(erfinv) X(sigmoid) X(floor) X(ceil) X(round) X(trunc) X(frac) X(logical_not)        \
  X(bitwise_not) X(isnan) X(isinf) X(isfinite)
#define KILN_LOOP_BINARY_OPS(X)                                                                \
  X(add) X(sub) X(mul) X(truediv) X(floordiv) X(truncdiv) X(remainder) X(fmod) X(pow) X(atan2) \
  X(hypot) X(maximum) X(minimum) X(eq) X(ne) X(lt) X(le) X(gt) X(ge) X(logical_and)            \
  X(logical_or) X(logical_xor) X(bitwise_and) X(bitwise_or) X(bitwise_xor) X(lshift) X(rshift)
// clang-format on

enum class UnaryOp : uint8_t {
#define KILN_ENUM_ENTRY(name) name,
  KILN_LOOP_UNARY_OPS(KILN_ENUM_ENTRY)
};
enum class BinaryOp : uint8_t { KILN_LOOP_BINARY_OPS(KILN_ENUM_ENTRY) };
#undef KILN_ENUM_ENTRY

// Operand dtype classes, as bits of Primitive::operands.
inline constexpr uint8_t kFloatOperands =
    1;                                      // float16, bfloat16 (computed as float), float, double
inline constexpr uint8_t kIntOperands = 2;  // signed and unsigned integers
inline constexpr uint8_t kBoolOperands = 4;
inline constexpr uint8_t kNumberOperands = kFloatOperands | kIntOperands;
inline constexpr uint8_t kAnyOperands = kNumberOperands | kBoolOperands;

enum class ResultDtype : uint8_t { same, boolean };
enum class Cost : uint8_t { cheap, expensive };

enum class RangeKind : uint8_t {
  unknown,     // the dtype's full range (and maybe NaN)
  increasing,  // floating operands: `f` is increasing on [domain_lo, domain_hi], NaN outside
  decreasing,  // the same, decreasing
  rule,        // written in the value-range handler
};

struct RangeRule {
  RangeKind kind = RangeKind::unknown;
  double (*f)(double) = nullptr;
  double domain_lo = -std::numeric_limits<double>::infinity();
  double domain_hi = std::numeric_limits<double>::infinity();
  // libm rounds `f` correctly (sqrt, floor): the bounds need no extra ulps.
  bool correctly_rounded = false;
};

struct Primitive {
  std::string_view name;
  uint8_t arity = 1;
  uint8_t operands = kFloatOperands;
  ResultDtype result = ResultDtype::same;
  bool divides = false;  // an integer zero second operand is a division by zero
  Cost cost = Cost::cheap;
  std::string_view vector;  // on float32x8 lanes; "" when none
  std::string_view mask;    // on bool lanes (ki8 masks); "" when none
  RangeRule range;
};

namespace primitive_rows {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr RangeRule rule{.kind = RangeKind::rule};
constexpr RangeRule increasing(double (*f)(double), double lo = -kInf, double hi = kInf) {
  return {.kind = RangeKind::increasing, .f = f, .domain_lo = lo, .domain_hi = hi};
}
constexpr RangeRule exact_increasing(double (*f)(double), double lo = -kInf) {
  return {.kind = RangeKind::increasing, .f = f, .domain_lo = lo, .correctly_rounded = true};
}
constexpr Primitive unary(std::string_view name, uint8_t operands, Cost cost,
                          std::string_view vector, RangeRule range) {
  return {.name = name, .operands = operands, .cost = cost, .vector = vector, .range = range};
}
constexpr Primitive math(std::string_view name, std::string_view vector, RangeRule range) {
  return unary(name, kFloatOperands, Cost::expensive, vector, range);
}
constexpr Primitive predicate(std::string_view name, std::string_view vector = "",
                              std::string_view mask = "") {
  return {.name = name,
          .operands = kAnyOperands,
          .result = ResultDtype::boolean,
          .vector = vector,
          .mask = mask,
          .range = rule};
}
constexpr Primitive binary(std::string_view name, uint8_t operands, std::string_view vector,
                           Cost cost = Cost::cheap) {
  return {.name = name,
          .arity = 2,
          .operands = operands,
          .cost = cost,
          .vector = vector,
          .range = rule};
}
constexpr Primitive division(std::string_view name) {
  return {.name = name, .arity = 2, .operands = kNumberOperands, .divides = true, .range = rule};
}
constexpr Primitive comparison(std::string_view name, uint8_t operands, std::string_view vector,
                               std::string_view mask = "") {
  return {.name = name,
          .arity = 2,
          .operands = operands,
          .result = ResultDtype::boolean,
          .vector = vector,
          .mask = mask,
          .range = rule};
}
constexpr Primitive bitwise(std::string_view name, std::string_view mask) {
  return {.name = name,
          .arity = 2,
          .operands = kIntOperands | kBoolOperands,
          .mask = mask,
          .range = rule};
}

using prim::acos, prim::asin, prim::atan, prim::ceil, prim::erf, prim::erfinv, prim::exp,
    prim::exp2, prim::expm1, prim::floor, prim::log, prim::log10, prim::log1p, prim::log2,
    prim::round, prim::sigmoid, prim::sinh, prim::sqrt, prim::tanh, prim::trunc;

// clang-format off
inline constexpr Primitive kUnary[] = {
  unary("neg", kNumberOperands, Cost::cheap, "(-{0})", rule),
  unary("abs", kNumberOperands, Cost::cheap, "kiln_abs({0})", rule),
  unary("sign", kAnyOperands, Cost::cheap, "", rule),
  math("exp", "kiln_exp({0})", increasing(exp<double>)),
  math("exp2", "Sleef_exp2f8_u10avx2({0})", increasing(exp2<double>)),
  math("expm1", "Sleef_expm1f8_u10avx2({0})", increasing(expm1<double>)),
  math("log", "Sleef_logf8_u10avx2({0})", increasing(log<double>, 0)),
  math("log2", "Sleef_log2f8_u10avx2({0})", increasing(log2<double>, 0)),
  math("log10", "Sleef_log10f8_u10avx2({0})", increasing(log10<double>, 0)),
  math("log1p", "Sleef_log1pf8_u10avx2({0})", increasing(log1p<double>, -1)),
  math("sqrt", "kiln_sqrt({0})", exact_increasing(sqrt<double>, 0)),
  math("rsqrt", "(1.0f / kiln_sqrt({0}))", rule),
  math("reciprocal", "(1.0f / {0})", rule),
  math("sin", "Sleef_sinf8_u10avx2({0})", rule),
  math("cos", "Sleef_cosf8_u10avx2({0})", rule),
  math("tan", "Sleef_tanf8_u10avx2({0})", rule),
  math("asin", "Sleef_asinf8_u10avx2({0})", increasing(asin<double>, -1, 1)),
  math("acos", "Sleef_acosf8_u10avx2({0})",
       {.kind = RangeKind::decreasing, .f = acos<double>, .domain_lo = -1, .domain_hi = 1}),
  math("atan", "Sleef_atanf8_u10avx2({0})", increasing(atan<double>)),
  math("sinh", "kiln_sinh({0})", increasing(sinh<double>)),
  math("cosh", "kiln_cosh({0})", rule),
  math("tanh", "Sleef_tanhf8_u10avx2({0})", increasing(tanh<double>)),
  math("erf", "kiln_erf({0})", increasing(erf<double>)),
  math("erfinv", "", increasing(erfinv<double>, -1, 1)),
  math("sigmoid", "kiln_sigmoid({0})", increasing(sigmoid<double>)),
  unary("floor", kNumberOperands, Cost::cheap, "", exact_increasing(floor<double>)),
  unary("ceil", kNumberOperands, Cost::cheap, "", exact_increasing(ceil<double>)),
  unary("round", kNumberOperands, Cost::cheap, "", exact_increasing(round<double>)),
  unary("trunc", kNumberOperands, Cost::cheap, "", exact_increasing(trunc<double>)),
  unary("frac", kFloatOperands, Cost::cheap, "", rule),
  predicate("logical_not", "", "(~{0})"),
  {.name = "bitwise_not", .operands = kIntOperands | kBoolOperands, .mask = "(~{0})",
   .range = rule},
  predicate("isnan", "({0} != {0})"),
  predicate("isinf"),
  predicate("isfinite"),
};

inline constexpr Primitive kBinary[] = {
  binary("add", kAnyOperands, "({0} + {1})"),
  binary("sub", kNumberOperands, "({0} - {1})"),
  binary("mul", kAnyOperands, "({0} * {1})"),
  binary("truediv", kFloatOperands, "({0} / {1})"),
  division("floordiv"),
  division("truncdiv"),
  division("remainder"),
  division("fmod"),
  binary("pow", kNumberOperands, "Sleef_powf8_u10avx2({0}, {1})", Cost::expensive),
  binary("atan2", kFloatOperands, "Sleef_atan2f8_u10avx2({0}, {1})", Cost::expensive),
  binary("hypot", kFloatOperands, "Sleef_hypotf8_u05avx2({0}, {1})", Cost::expensive),
  binary("maximum", kAnyOperands, "kiln_maximum({0}, {1})"),
  binary("minimum", kAnyOperands, "kiln_minimum({0}, {1})"),
  comparison("eq", kAnyOperands, "({0} == {1})"),
  comparison("ne", kAnyOperands, "({0} != {1})", "({0} ^ {1})"),
  comparison("lt", kAnyOperands, "({0} < {1})"),
  comparison("le", kAnyOperands, "({0} <= {1})"),
  comparison("gt", kAnyOperands, "({0} > {1})"),
  comparison("ge", kAnyOperands, "({0} >= {1})"),
  comparison("logical_and", kAnyOperands, "", "({0} & {1})"),
  comparison("logical_or", kAnyOperands, "", "({0} | {1})"),
  comparison("logical_xor", kAnyOperands, "", "({0} ^ {1})"),
  bitwise("bitwise_and", "({0} & {1})"),
  bitwise("bitwise_or", "({0} | {1})"),
  bitwise("bitwise_xor", "({0} ^ {1})"),
  binary("lshift", kIntOperands, ""),
  binary("rshift", kIntOperands, ""),
};
// clang-format on

// Each row sits at its enum value (checked below).
#define KILN_NAME_ENTRY(name) #name,
inline constexpr std::string_view kUnaryNames[] = {KILN_LOOP_UNARY_OPS(KILN_NAME_ENTRY)};
inline constexpr std::string_view kBinaryNames[] = {KILN_LOOP_BINARY_OPS(KILN_NAME_ENTRY)};
#undef KILN_NAME_ENTRY
template <size_t N, size_t M>
constexpr bool rows_match(const Primitive (&rows)[N], const std::string_view (&names)[M]) {
  if (N != M) return false;
  for (size_t i = 0; i < N; ++i)
    if (rows[i].name != names[i]) return false;
  return true;
}
static_assert(rows_match(kUnary, kUnaryNames), "kUnary's rows must follow KILN_LOOP_UNARY_OPS");
static_assert(rows_match(kBinary, kBinaryNames), "kBinary's rows must follow KILN_LOOP_BINARY_OPS");

}  // namespace primitive_rows

constexpr const Primitive& primitive(UnaryOp op) {
  return primitive_rows::kUnary[static_cast<size_t>(op)];
}
constexpr const Primitive& primitive(BinaryOp op) {
  return primitive_rows::kBinary[static_cast<size_t>(op)];
}
constexpr std::string_view name_of(UnaryOp op) { return primitive(op).name; }
constexpr std::string_view name_of(BinaryOp op) { return primitive(op).name; }
// Comparisons and logical ops (their result is bool whatever the operand dtype).
constexpr bool produces_bool(UnaryOp op) { return primitive(op).result == ResultDtype::boolean; }
constexpr bool produces_bool(BinaryOp op) { return primitive(op).result == ResultDtype::boolean; }

// The operand class of a dtype (a C++ type for the interpreter's instantiations).
constexpr uint8_t operand_class(ScalarType dtype) {
  if (dtype == kBool) return kBoolOperands;
  return is_floating(dtype) ? kFloatOperands : kIntOperands;
}
template <typename T>
inline constexpr uint8_t operand_class_v = std::is_same_v<T, bool> ? kBoolOperands
                                           : is_floating_v<T>      ? kFloatOperands
                                                                   : kIntOperands;
constexpr bool accepts(const Primitive& p, ScalarType dtype) {
  return (p.operands & operand_class(dtype)) != 0;
}

}  // namespace kiln::lower
