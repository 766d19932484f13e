// The primitives on one element (element.h): each is its row of the primitive table (Note [The
// primitive table]) and its function in kiln::prim, which the eager kernels and the generated
// code share (Note [One definition of a primitive's semantics]).
#include "src/lower/handlers/element.h"

#include <fmt/format.h>

#include <type_traits>

#include "kiln/error.h"
#include "src/core/cast.h"
#include "src/numerics/scalar_ops.h"

namespace kiln::lower {
namespace {

[[noreturn]] void unsupported(std::string_view op, ScalarType dtype) {
  throw DTypeError(fmt::format(
      "lower interpreter: {} is not defined for dtype {}; the lowering must cast the operand first "
      "(math functions take floating operands, bitwise ops integer or bool ones)",
      op, dtype_name(dtype)));
}

// The result of a primitive computed in M (float for float16/bfloat16) as an element of T, or of
// bool for predicates.
template <typename T, typename R>
Element result_element(R r) {
  if constexpr (std::is_same_v<R, bool>) {
    return Element::of(r);
  } else {
    return Element::of(static_cast<T>(r));
  }
}

// Applies `f`, the primitive's scalar function (Note [One definition of a primitive's
// semantics]), when the primitive's row accepts T; instantiated only for accepted types.
template <UnaryOp op, typename T, typename F>
Element unary_element(T v, F f) {
  if constexpr ((primitive(op).operands & operand_class_v<T>) == 0) {
    unsupported(name_of(op), scalar_type_of<T>);
  } else {
    using M = opmath_t<T>;
    return result_element<T>(f(static_cast<M>(v)));
  }
}

template <BinaryOp op, typename T, typename F>
Element binary_element(T x, T y, F f) {
  if constexpr ((primitive(op).operands & operand_class_v<T>) == 0) {
    unsupported(name_of(op), scalar_type_of<T>);
  } else {
    if constexpr (primitive(op).divides && operand_class_v<T> == kIntOperands) {
      KILN_CHECK(y != T(0), ValueError,
                 "lower interpreter: integer division by zero in {} of dtype {} (dividend {}); "
                 "eager raises the same error (ZeroDivisionError)",
                 name_of(op), dtype_name(scalar_type_of<T>), Element::of(x).to_string());
    }
    using M = opmath_t<T>;
    return result_element<T>(f(static_cast<M>(x), static_cast<M>(y)));
  }
}

}  // namespace

double Element::to_double() const {
  return visit_dtype(dtype_, [&]<typename T>() { return cast_value<double>(get<T>()); });
}

int64_t Element::to_int64() const {
  return visit_dtype(dtype_, [&]<typename T>() { return cast_value<int64_t>(get<T>()); });
}

std::string Element::to_string() const {
  std::string v = visit_dtype(dtype_, [&]<typename T>() -> std::string {
    const T x = get<T>();
    if constexpr (std::is_same_v<T, bool>)
      return x ? "true" : "false";
    else if constexpr (is_floating_v<T>)
      return fmt::format("{}", static_cast<opmath_t<T>>(x));
    else
      return fmt::format("{}", x);
  });
  return fmt::format("{} ({})", v, dtype_name(dtype_));
}

Element make_int_element(int64_t i, ScalarType dtype) {
  return visit_dtype(dtype, [&]<typename T>() {
    if constexpr (is_floating_v<T> || std::is_same_v<T, bool>)
      return Element::of(cast_value<T>(i));
    else
      return Element::of(static_cast<T>(i));  // modular: uint64 takes the bit pattern
  });
}

Element make_float_element(double f, ScalarType dtype) {
  return visit_dtype(dtype, [&]<typename T>() { return Element::of(cast_value<T>(f)); });
}

Element convert(Element x, ScalarType dtype) {
  if (x.dtype() == dtype) return x;
  return visit_dtype(x.dtype(), [&]<typename From>() {
    const From v = x.get<From>();
    return visit_dtype(dtype, [&]<typename To>() { return Element::of(cast_value<To>(v)); });
  });
}

bool truth(Element x) {
  return visit_dtype(x.dtype(), [&]<typename T>() { return cast_value<bool>(x.get<T>()); });
}

Element apply(UnaryOp op, Element x) {
  return visit_dtype(x.dtype(), [&]<typename T>() -> Element {
    const T v = x.get<T>();
    switch (op) {
#define KILN_UNARY_CASE(name) \
  case UnaryOp::name:         \
    return unary_element<UnaryOp::name>(v, [](auto a) { return prim::name(a); });
      KILN_LOOP_UNARY_OPS(KILN_UNARY_CASE)
#undef KILN_UNARY_CASE
    }
    __builtin_unreachable();
  });
}

Element apply(BinaryOp op, Element a, Element b) {
  KILN_CHECK(a.dtype() == b.dtype(), DTypeError,
             "lower interpreter: {} got operands of dtypes {} and {}; loop-IR operands share one "
             "dtype (the lowering inserts to_dtype where eager promotes)",
             name_of(op), dtype_name(a.dtype()), dtype_name(b.dtype()));
  return visit_dtype(a.dtype(), [&]<typename T>() -> Element {
    const T x = a.get<T>(), y = b.get<T>();
    switch (op) {
#define KILN_BINARY_CASE(name) \
  case BinaryOp::name:         \
    return binary_element<BinaryOp::name>(x, y, [](auto p, auto q) { return prim::name(p, q); });
      KILN_LOOP_BINARY_OPS(KILN_BINARY_CASE)
#undef KILN_BINARY_CASE
    }
    __builtin_unreachable();
  });
}

}  // namespace kiln::lower
