// The C++ printing handler (Note [Define-by-run loop bodies] in src/lower/ops_handler.h): running
// a loop body under it appends C++ statements that compute the body for the current loop
// variables, in scalar form or, in vector mode, for 8 consecutive values of the innermost loop
// variable at once (Note [Generated vector math] in prelude.cpp).
#pragma once

#include <initializer_list>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "src/lower/handlers/value_range_handler.h"
#include "src/lower/index_simplify.h"
#include "src/lower/ops_handler.h"

namespace kiln::codegen {

// Thrown by the printer in vector mode for a body it cannot vectorize (the emitter then uses the
// scalar loop alone). Never escapes codegen.
struct NotVectorizable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The C type of a value of `dtype` in generated code (float16/bfloat16 compute as float).
const char* value_type(ScalarType dtype);
// The C type of an element of a buffer of `dtype` in memory.
const char* memory_type(ScalarType dtype);
// An index expression as C++ (int64 arithmetic).
std::string cpp_expr(sym::ExprPtr e, const lower::VarRanges& ranges);

// Kernel-local buffers (Note [Local buffers] in src/sched/memory_plan.cpp): indexed with the
// kernel's outer loop variables set to 0.
struct LocalBuffers {
  std::set<std::string> names;
  std::vector<sym::ExprPtr> outer_vars;
};

class CppPrinter : public lower::OpsHandler {
 public:
  // `vector_var`: the loop variable whose 8 consecutive values one vector statement computes;
  // nullptr for scalar code. `ranges` are the loop variables' ranges (for index simplification).
  // Names of statements and accumulators get `prefix`, so several bodies can share a scope.
  CppPrinter(std::string prefix, const lower::VarRanges& ranges, sym::ExprPtr vector_var);

  // Statements before the loops (accumulator declarations), in the loop body, and after the
  // loops (reduction stores).
  const std::vector<std::string>& before() const { return before_; }
  const std::vector<std::string>& body() const { return body_; }
  const std::vector<std::string>& after() const { return after_; }
  // Vector mode: the scalar statements of the body, which do not depend on the vector variable
  // (a row's mean, a scalar operand); the emitter hoists them out of the vector loop.
  const std::vector<std::string>& invariant() const { return invariant_; }

  lower::Val load(lower::BufferRef buffer, sym::ExprPtr index) override;
  void store(lower::BufferRef buffer, sym::ExprPtr index, lower::Val value) override;
  lower::Val index_expr(sym::ExprPtr expr, ScalarType dtype) override;
  lower::Val constant_int(int64_t i, ScalarType dtype) override;
  lower::Val constant_float(double f, ScalarType dtype) override;
  lower::Val to_dtype(lower::Val x, ScalarType dtype) override;
  lower::Val unary(lower::UnaryOp op, lower::Val x) override;
  lower::Val binary(lower::BinaryOp op, lower::Val a, lower::Val b) override;
  lower::Val where(lower::Val cond, lower::Val a, lower::Val b) override;
  lower::Val reduction(lower::ReductionType type, lower::Val value) override;
  void store_reduction(lower::BufferRef buffer, sym::ExprPtr index, lower::Val value) override;

  // For a vectorized reduction: the statements that fold the vector accumulators into the
  // scalar ones (which the scalar printer of the same body declared), run between the vector
  // loop and the scalar tail loop.
  const std::vector<std::string>& fold() const { return fold_; }
  // Buffers whose vector stores are non-temporal (Note [Streaming stores in generated code] in
  // codegen.cpp), each with the C condition under which it streams ("true", or a flag computed
  // from symbolic sizes at the kernel's start).
  void set_streaming(std::map<std::string, std::string> conditions) {
    streaming_ = std::move(conditions);
  }
  void set_local_buffers(LocalBuffers local) { local_ = std::move(local); }
  // The linear index of the reduction loop (for argmax/argmin), set by the emitter.
  void set_reduction_linear_index(std::string expr) { rlinear_ = std::move(expr); }
  // Note [Reductions across lanes]: the vector variable is an output dim, not a reduced one;
  // each lane accumulates its own output element and the result is stored as a vector.
  void set_lane_reduction(bool on) { lane_reduction_ = on; }
  // Note [Masked vector tails] in codegen.cpp: vector loads and stores touch only the first
  // `kiln_rem` lanes (a variable the emitter declares).
  void set_masked_tail(bool on) { masked_tail_ = on; }
  // Note [Casts the value ranges prove]
  // A float -> integer conversion prints as kiln_f2i, whose branches give Kiln's total semantics
  // (NaN -> 0, out of range wraps through int64; Note [Casting to integers] in src/core/cast.h).
  // Where the value ranges of the body (lower::ValueRangeHandler, run over the same body with
  // the kernel's loop ranges) prove the operand is never NaN and always truncates into the
  // target's range, both semantics agree and it prints as a plain C++ conversion (one cvttss2si,
  // vectorizable). `verdicts[k]` is the handler's verdict on the body's k-th to_dtype call; one
  // whose dtypes differ from the printer's k-th call (the two runs diverged) proves nothing, and
  // casts_seen() lets the caller check that both saw as many.
  void set_proven_casts(std::vector<lower::ValueRangeHandler::CastVerdict> verdicts) {
    proven_casts_ = std::move(verdicts);
  }
  size_t casts_seen() const { return casts_seen_; }

 private:
  struct Repr {
    std::string expr;
    bool vector = false;
  };
  lower::Val emit(ScalarType dtype, bool vector, const std::string& expr);
  lower::Val primitive_call(const lower::Primitive& p, std::initializer_list<lower::Val> operands);
  lower::Val load_at_lane_offsets(lower::BufferRef buffer, sym::ExprPtr index);
  lower::Val literal(ScalarType dtype, std::string expr);
  const Repr& repr(lower::Val v) const { return vals_.at(v.id); }
  // The operand as a vector expression (splats a scalar).
  std::string vec(lower::Val v) const;
  bool vector_mode() const { return vector_var_ != nullptr; }
  void vector_min_max(bool max, const std::string& vacc, const std::string& x);
  static std::string nan_lanes(const std::string& vacc);
  std::string index(sym::ExprPtr e) const {
    return cpp_expr(lower::simplify_index(e, ranges_), ranges_);
  }

  std::string prefix_;
  lower::VarRanges ranges_;
  sym::ExprPtr vector_var_;
  std::vector<Repr> vals_;
  std::vector<std::string> before_, body_, after_, fold_, invariant_;
  std::string rlinear_ = "0";
  std::map<std::string, std::string> streaming_;
  LocalBuffers local_;
  // `index` as the buffer is addressed: a kernel-local one without its outer part.
  sym::ExprPtr address(std::string_view buffer, sym::ExprPtr index) const;
  bool lane_reduction_ = false;
  bool masked_tail_ = false;
  std::vector<lower::ValueRangeHandler::CastVerdict> proven_casts_;
  size_t casts_seen_ = 0;
  int reductions_ = 0;
  size_t body_mark_ = 0;  // body_ statements after this one follow the last reduction
  size_t invariant_mark_ = 0;
};

}  // namespace kiln::codegen
