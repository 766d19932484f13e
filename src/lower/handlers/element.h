// One typed scalar of the loop IR and the meaning of each primitive on it: the single place that
// says what add, floordiv, pow, maximum, ... compute for one element of a given dtype. The
// reference interpreter (interpreter_handler.h) is built on it, and tests compare it with the
// eager kernels (src/kernels/cpu/unary*.cpp, binary*.cpp), whose semantics it follows exactly:
// modular integer arithmetic, Python-style floordiv/remainder, PyTorch's shift and integer pow
// rules, NaN-propagating maximum/minimum, round half to even. float16/bfloat16 compute in float
// and round back (as eager does).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "kiln/dtype.h"
#include "src/lower/ops_handler.h"

namespace kiln::lower {

// A value of one dtype, held in its C++ type (bool, uint8_t, ..., Half, float, double).
class Element {
 public:
  Element() = default;
  template <typename T>
  static Element of(T v) {
    static_assert(sizeof(T) <= sizeof(uint64_t));
    Element e;
    e.dtype_ = scalar_type_of<T>;
    std::memcpy(&e.bits_, &v, sizeof(T));
    return e;
  }
  ScalarType dtype() const { return dtype_; }
  // The value as T, which must be the C++ type of dtype().
  template <typename T>
  T get() const {
    T v;
    std::memcpy(static_cast<void*>(&v), &bits_, sizeof(T));
    return v;
  }
  // Converted with kiln's cast rules (src/core/cast.h); for printing and tests.
  double to_double() const;
  int64_t to_int64() const;
  // "3", "-0.5", "nan", "true" with the dtype: "3 (int32)".
  std::string to_string() const;

 private:
  ScalarType dtype_ = kFloat32;
  uint64_t bits_ = 0;
};

// The constants of OpsHandler::constant_int / constant_float.
Element make_int_element(int64_t i, ScalarType dtype);   // integral: i's bit pattern, modular
Element make_float_element(double f, ScalarType dtype);  // rounded to dtype (kiln's cast rules)
// Conversion with kiln's cast rules (Note [Casting to integers] in src/core/cast.h).
Element convert(Element x, ScalarType dtype);
bool truth(Element x);  // x != 0 (NaN is true)

// The primitives on one element. Operands of a binary op share a dtype (DTypeError otherwise, as
// for an op the dtype does not support: the message names the op and the dtype). Integer
// division or remainder by zero is a ValueError, as in eager.
Element apply(UnaryOp op, Element x);
Element apply(BinaryOp op, Element a, Element b);

}  // namespace kiln::lower
