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
#include "src/lower/primitives.h"
#include "src/sym/expr.h"

namespace kiln::lower {

struct Val {
  int32_t id = -1;
  ScalarType dtype = kFloat32;
};

// The primitives (UnaryOp, BinaryOp) and what each handler needs to know about them: Note [The
// primitive table] in src/lower/primitives.h.

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
