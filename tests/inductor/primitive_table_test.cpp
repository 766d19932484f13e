// The primitive table (Note [The primitive table] in src/lower/primitives.h) and the single
// definition of each primitive's semantics (Note [One definition of a primitive's semantics] in
// src/numerics/scalar_ops.h): for every primitive and every dtype its row accepts, the C++ that
// the printer generates computes what the loop-IR interpreter computes on edge values (and
// tests/lower/handlers_test.cpp compares the interpreter with the eager kernels), an integer
// division by zero sets the generated library's error bit, and the table's columns agree with the
// handlers that read them.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "src/codegen/cpp/prelude.h"
#include "src/codegen/cpp/printer.h"
#include "src/lower/handlers/element.h"
#include "src/lower/handlers/value_range_handler.h"
#include "src/lower/primitives.h"
#include "src/numerics/scalar_ops_text.h"
#include "src/runtime/compiler.h"

using namespace kiln;
using kiln::lower::BinaryOp;
using kiln::lower::Element;
using kiln::lower::UnaryOp;

namespace {

constexpr ScalarType kDtypes[] = {kBool,  kInt8,  kUInt8,  kInt16,   kUInt16,
                                  kInt32, kInt64, kUInt64, kFloat32, kFloat64};

const char* c_type(ScalarType t) {
  switch (t) {
    case kBool:
      return "bool";
    case kInt8:
      return "int8_t";
    case kUInt8:
      return "uint8_t";
    case kInt16:
      return "int16_t";
    case kUInt16:
      return "uint16_t";
    case kInt32:
      return "int32_t";
    case kInt64:
      return "int64_t";
    case kUInt64:
      return "uint64_t";
    case kFloat32:
      return "float";
    default:
      return "double";
  }
}

// Values where the semantics have edges: zero and its sign, +-1 (division by -1 wraps), the
// extremes, shift amounts around the width, halves (rounding), huge and tiny floats, inf, NaN.
std::vector<Element> edge_values(ScalarType dtype) {
  std::vector<Element> v;
  if (dtype == kBool) {
    v.push_back(Element::of(false));
    v.push_back(Element::of(true));
  } else if (is_floating(dtype)) {
    const double inf = std::numeric_limits<double>::infinity();
    for (double f : {0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -3.0, 7.0, 0.3, 1e30, -1e-30, inf, -inf,
                     std::nan("")})
      v.push_back(lower::make_float_element(f, dtype));
  } else {
    const int64_t bits = static_cast<int64_t>(element_size(dtype)) * 8;
    for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{2}, int64_t{-2}, int64_t{3},
                      int64_t{-7}, bits - 1, bits, bits + 1})
      v.push_back(lower::make_int_element(i, dtype));
    // The extremes: INT_MIN, INT_MAX (or 0 and the largest unsigned value).
    const bool is_signed = is_signed_integral(dtype);
    const uint64_t max_bits = is_signed ? (uint64_t{1} << (bits - 1)) - 1
                                        : (bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1);
    v.push_back(lower::make_int_element(static_cast<int64_t>(max_bits), dtype));
    if (is_signed) v.push_back(lower::make_int_element(-static_cast<int64_t>(max_bits) - 1, dtype));
  }
  return v;
}

// One primitive on one dtype: the generated function's name and its operands (all pairs for a
// binary primitive).
struct Case {
  std::string function;
  std::string_view name;
  bool binary = false;
  UnaryOp unary_op{};
  BinaryOp binary_op{};
  ScalarType dtype = kFloat32;
  ScalarType result = kFloat32;
  std::vector<Element> a, b;
};

// The C++ of `out[x0] = op(in0[x0], in1[x0])` as the code generator prints it, in a function.
std::string print_case(const Case& c) {
  const sym::ExprPtr x = sym::symbol("x0");
  lower::VarRanges ranges;
  ranges[x] = sym::symbol("n");
  codegen::CppPrinter printer("t", ranges, nullptr);
  {
    lower::HandlerScope scope(printer);
    const lower::Val a = lower::load({"in0", c.dtype}, x);
    const lower::Val r = c.binary ? lower::binary(c.binary_op, a, lower::load({"in1", c.dtype}, x))
                                  : lower::unary(c.unary_op, a);
    lower::ops().store({"out", c.result}, x, r);
  }
  std::string body;
  for (const std::string& line : printer.body()) body += "    " + line + "\n";
  return fmt::format(
      "extern \"C\" void {}(const {} *in0, const {} *in1, {} *out, int64_t n) {{\n"
      "  for (int64_t x0 = 0; x0 < n; ++x0) {{\n{}  }}\n}}\n",
      c.function, c_type(c.dtype), c_type(c.dtype), c_type(c.result), body);
}

std::vector<unsigned char> to_bytes(const std::vector<Element>& values, ScalarType dtype) {
  const size_t size = static_cast<size_t>(element_size(dtype));
  std::vector<unsigned char> bytes(values.size() * size + 8);
  for (size_t i = 0; i < values.size(); ++i) {
    visit_dtype(dtype, [&]<typename T>() {
      const T v = values[i].get<T>();
      std::memcpy(bytes.data() + i * size, &v, size);
    });
  }
  return bytes;
}

Element from_bytes(const std::vector<unsigned char>& bytes, size_t i, ScalarType dtype) {
  return visit_dtype(dtype, [&]<typename T>() {
    T v;
    std::memcpy(static_cast<void*>(&v), bytes.data() + i * sizeof(T), sizeof(T));
    return Element::of(v);
  });
}

// Integers and bools bit for bit; floats bit for bit (NaN as NaN) for the cheap primitives, whose
// semantics are exact, and within a few ulps for libm's functions (the system compiler may
// contract a multiply-add differently from Kiln's build).
bool same(Element generated, Element interpreted, bool exact) {
  if (generated.dtype() != interpreted.dtype()) return false;
  if (!is_floating(generated.dtype())) return generated.to_int64() == interpreted.to_int64();
  const double g = generated.to_double(), i = interpreted.to_double();
  if (std::isnan(g) || std::isnan(i)) return std::isnan(g) && std::isnan(i);
  if (exact) return g == i && std::signbit(g) == std::signbit(i);
  const double tolerance = generated.dtype() == kFloat32 ? 4e-7 : 1e-15;
  return g == i || std::fabs(g - i) <= tolerance * std::fabs(i);
}

bool is_integer_division(const Case& c) {
  return c.binary && lower::primitive(c.binary_op).divides && !is_floating(c.dtype) &&
         c.dtype != kBool;
}

}  // namespace

TEST(PrimitiveTable, GeneratedCodeComputesWhatTheInterpreterComputesOnEveryAcceptedDtype) {
  std::vector<Case> cases;
  auto add = [&](Case c) {
    c.function = fmt::format("case_{}", cases.size());
    cases.push_back(std::move(c));
  };
  for (ScalarType dtype : kDtypes) {
    const std::vector<Element> values = edge_values(dtype);
#define KILN_UNARY_CASE(op)                                           \
  if (lower::accepts(lower::primitive(UnaryOp::op), dtype))           \
    add({.name = #op,                                                 \
         .unary_op = UnaryOp::op,                                     \
         .dtype = dtype,                                              \
         .result = lower::produces_bool(UnaryOp::op) ? kBool : dtype, \
         .a = values,                                                 \
         .b = values});
    KILN_LOOP_UNARY_OPS(KILN_UNARY_CASE)
#undef KILN_UNARY_CASE
    std::vector<Element> a, b;
    for (const Element& x : values)
      for (const Element& y : values) a.push_back(x), b.push_back(y);
#define KILN_BINARY_CASE(op)                                           \
  if (lower::accepts(lower::primitive(BinaryOp::op), dtype))           \
    add({.name = #op,                                                  \
         .binary = true,                                               \
         .binary_op = BinaryOp::op,                                    \
         .dtype = dtype,                                               \
         .result = lower::produces_bool(BinaryOp::op) ? kBool : dtype, \
         .a = a,                                                       \
         .b = b});
    KILN_LOOP_BINARY_OPS(KILN_BINARY_CASE)
#undef KILN_BINARY_CASE
  }
  // Every primitive is tested on at least one dtype.
  EXPECT_GE(cases.size(),
            std::size(lower::primitive_rows::kUnary) + std::size(lower::primitive_rows::kBinary));

  std::string source = codegen::prelude(false);
  for (const Case& c : cases) source += print_case(c);
  runtime::CompilerOptions options = runtime::default_compiler_options();
  options.vectorize = false;
  const auto library = runtime::compile_and_load(source, options);
  auto* errors = static_cast<int*>(library->symbol("kiln_runtime_errors"));

  int compared = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("{} on {}", c.name, dtype_name(c.dtype)));
    using Fn = void (*)(const void*, const void*, void*, int64_t);
    const auto fn = reinterpret_cast<Fn>(library->symbol(c.function));
    const auto a = to_bytes(c.a, c.dtype), b = to_bytes(c.b, c.dtype);
    const bool exact = c.binary ? lower::primitive(c.binary_op).cost == lower::Cost::cheap
                                : lower::primitive(c.unary_op).cost == lower::Cost::cheap;
    for (size_t i = 0; i < c.a.size(); ++i) {
      // One element per call, so that a division by zero is seen on its own element.
      std::vector<unsigned char> out(16);
      *errors = 0;
      const size_t at = i * static_cast<size_t>(element_size(c.dtype));
      fn(a.data() + at, b.data() + at, out.data(), 1);
      const Element generated = from_bytes(out, 0, c.result);
      const std::string operands =
          c.binary ? c.a[i].to_string() + ", " + c.b[i].to_string() : c.a[i].to_string();
      if (is_integer_division(c) && c.b[i].to_int64() == 0) {
        // The interpreter raises, as eager; the generated code sets its error bit.
        EXPECT_THROW(lower::apply(c.binary_op, c.a[i], c.b[i]), ValueError) << operands;
        EXPECT_EQ(*errors, 1) << operands;
        continue;
      }
      const Element interpreted =
          c.binary ? lower::apply(c.binary_op, c.a[i], c.b[i]) : lower::apply(c.unary_op, c.a[i]);
      EXPECT_EQ(*errors, 0) << operands;
      EXPECT_TRUE(same(generated, interpreted, exact))
          << operands << ": generated " << generated.to_string() << ", interpreter "
          << interpreted.to_string();
      ++compared;
    }
  }
  EXPECT_GT(compared, 5000);
}

TEST(PrimitiveTable, RowsFollowTheEnumsAndDescribeTheirPrimitives) {
  // The rows sit at their enum values (also a static_assert) and say what the handlers do.
  EXPECT_EQ(lower::name_of(UnaryOp::frac), "frac");
  EXPECT_EQ(lower::name_of(BinaryOp::rshift), "rshift");
  EXPECT_TRUE(lower::produces_bool(BinaryOp::lt));
  EXPECT_FALSE(lower::produces_bool(BinaryOp::add));
  EXPECT_TRUE(lower::primitive(BinaryOp::remainder).divides);
  EXPECT_FALSE(lower::primitive(BinaryOp::truediv).divides);
  EXPECT_FALSE(lower::accepts(lower::primitive(UnaryOp::exp), kInt32));
  EXPECT_TRUE(lower::accepts(lower::primitive(UnaryOp::floor), kInt32));
  EXPECT_FALSE(lower::accepts(lower::primitive(BinaryOp::lshift), kFloat32));
  // A primitive on a dtype its row does not accept is an error in every handler, never code.
  codegen::CppPrinter printer("t", {}, nullptr);
  lower::HandlerScope scope(printer);
  const lower::Val i = lower::load({"in0", kInt32}, sym::integer(0));
  EXPECT_THROW(lower::unary(UnaryOp::exp, i), DTypeError);
  EXPECT_THROW(lower::apply(UnaryOp::exp, lower::make_int_element(1, kInt32)), DTypeError);
}

TEST(PrimitiveTable, ValueRangesOfMonotoneRowsNeedNoRuleOfTheirOwn) {
  // exp's row says "increasing": the handler bounds it from the row alone.
  const auto x = lower::ValueInterval::between_float(-1.0, 2.0, kFloat64, false);
  const auto r = lower::range_unary(UnaryOp::exp, x);
  EXPECT_LE(r.lo, std::exp(-1.0));
  EXPECT_GE(r.hi, std::exp(2.0));
  EXPECT_GT(r.lo, 0.36);
  EXPECT_LT(r.hi, 7.4);
  EXPECT_FALSE(r.maybe_nan);
  // log's domain starts at 0: a negative operand may give NaN.
  const auto l = lower::range_unary(
      UnaryOp::log, lower::ValueInterval::between_float(-1.0, 2.0, kFloat64, false));
  EXPECT_TRUE(l.maybe_nan);
}

TEST(PrimitiveTable, TheGeneratedPreludeCarriesTheSameSemanticsText) {
  // Note [One definition of a primitive's semantics]: the text Kiln compiled is the text every
  // generated file carries.
  const std::string text = codegen::prelude(false);
  EXPECT_NE(text.find(prim::kScalarOpsText), std::string::npos);
  EXPECT_NE(text.find("template <class T> KILN_PRIM T floordiv(T a, T b)"), std::string::npos);
}
