// The abstract ops handler of the define-by-run loop IR (DESIGN.md section 5, lower).
//
// Note [Define-by-run loop bodies]
// A loop-IR node's body is a C++ callable `inner_fn(index)` that computes the value of one element
// by calling ops() (load, arithmetic, index_expr, ...). The body never sees what those calls do:
// the same body runs under the C++ printing handler (src/codegen/cpp), the dependency collector
// (exact read sets with index expressions), the reference interpreter (evaluates one element) and
// the value-range analysis. Fusing two nodes is composing their callables: a consumer's load of a
// producer that is not realized calls the producer's inner_fn instead (ir.cpp, make_loader).
//
// The handler in force is a thread-local, installed with HandlerScope, which restores the previous
// handler when it goes out of scope (handlers nest: the printer runs a body under a wrapper that
// renames loads, and so on). ops() throws when no handler is installed.
//
// Note [Typed values]
// A Val is an opaque id with its dtype; each handler keeps its own representation per id (a C++
// expression, a scalar, a range). Arithmetic takes operands of one dtype and produces that dtype
// (comparisons and logical ops produce bool); the lowering inserts to_dtype where the eager op
// would promote, so every handler sees explicit casts. float16 and bfloat16 values are computed in
// float32 (the lowering casts loads of them up and stores down), as PyTorch's Inductor does.
#pragma once

#include <cstdint>
#include <string_view>

#include "kiln/dtype.h"
#include "src/sym/expr.h"

namespace kiln::lower {

struct Val {
  int32_t id = -1;
  ScalarType dtype = kFloat32;
};

// Unary primitives. Math functions take floating operands; neg/abs/sign on integers; logical_not
// and isnan/isinf/isfinite produce bool; bitwise_not on integers and bool.
// clang-format off
#define KILN_LOOP_UNARY_OPS(X)                                                                 \
  X(neg) X(abs) X(sign) X(exp) X(exp2) X(expm1) X(log) X(log2) X(log10) X(log1p) X(sqrt)       \
  X(rsqrt) X(reciprocal) X(sin) X(cos) X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(tanh)  \
  X(erf) X(erfinv) X(sigmoid) X(floor) X(ceil) X(round) X(trunc) X(frac) X(logical_not)        \
  X(bitwise_not) X(isnan) X(isinf) X(isfinite)
// clang-format on

// Binary primitives, both operands of one dtype. truediv on floats; floordiv, truncdiv and
// remainder (sign of the divisor, as Python and PyTorch) on integers and floats; fmod has the
// sign of the dividend. Comparisons and logical ops produce bool. Shifts on integers follow the
// eager kernels (a shift by >= the bit width gives 0, or -1 for a negative signed right shift).
// clang-format off
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

std::string_view name_of(UnaryOp op);
std::string_view name_of(BinaryOp op);
// Comparisons and logical ops (their result is bool whatever the operand dtype).
bool produces_bool(UnaryOp op);
bool produces_bool(BinaryOp op);

// Reductions over the reduction loop. argmax/argmin produce int64 (first index of the extreme;
// NaN counts as the extreme, as in eager). welford_mean/welford_m2 are the mean and the sum of
// squared deviations of the values (Welford's update in generated code).
enum class ReductionType : uint8_t {
  sum,
  prod,
  max,
  min,
  argmax,
  argmin,
  any,
  all,
  welford_mean,
  welford_m2,
};
std::string_view name_of(ReductionType r);
ScalarType reduction_result_dtype(ReductionType r, ScalarType value_dtype);

// A buffer as the bodies see it: its name in the lowered program ("arg0", "buf3") and dtype.
struct BufferRef {
  std::string_view name;
  ScalarType dtype;
};

class OpsHandler {
 public:
  virtual ~OpsHandler() = default;

  // Element `index` (a flat offset in elements, over the loop variables and size symbols).
  virtual Val load(BufferRef buffer, sym::ExprPtr index) = 0;
  virtual void store(BufferRef buffer, sym::ExprPtr index, Val value) = 0;
  // The integer value of an index expression (e.g. arange, iota, masks of tril).
  virtual Val index_expr(sym::ExprPtr expr, ScalarType dtype) = 0;
  // A constant of `dtype`. Integral dtypes use `i` (unsigned 64-bit values through the bit
  // pattern); floating ones use `f` (which may be inf or NaN).
  virtual Val constant_int(int64_t i, ScalarType dtype) = 0;
  virtual Val constant_float(double f, ScalarType dtype) = 0;
  virtual Val to_dtype(Val x, ScalarType dtype) = 0;
  virtual Val unary(UnaryOp op, Val x) = 0;
  virtual Val binary(BinaryOp op, Val a, Val b) = 0;
  // cond ? a : b, cond bool, a and b of one dtype.
  virtual Val where(Val cond, Val a, Val b) = 0;
  // Inside a reduction body: feeds `value` (one element of the reduction loop) into the
  // accumulator and returns the reduced value (usable only by store_reduction).
  virtual Val reduction(ReductionType type, Val value) = 0;
  virtual void store_reduction(BufferRef buffer, sym::ExprPtr index, Val value) = 0;
};

// The handler in force on this thread; throws kiln::ValueError when there is none.
OpsHandler& ops();

// Installs a handler for the dynamic extent of the scope (Note [Define-by-run loop bodies]).
class HandlerScope {
 public:
  explicit HandlerScope(OpsHandler& handler);
  ~HandlerScope();
  HandlerScope(const HandlerScope&) = delete;
  HandlerScope& operator=(const HandlerScope&) = delete;

 private:
  OpsHandler* previous_;
};

// Convenience wrappers over ops(), for bodies.
Val load(BufferRef b, sym::ExprPtr index);
Val constant(double v, ScalarType dtype);  // integral dtypes take the value truncated
Val cast(Val x, ScalarType dtype);         // no-op when the dtype already matches
Val unary(UnaryOp op, Val x);
Val binary(BinaryOp op, Val a, Val b);
Val where(Val cond, Val a, Val b);

}  // namespace kiln::lower
