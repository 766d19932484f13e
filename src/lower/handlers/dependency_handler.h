// The dependency-collecting handler (Note [Define-by-run loop bodies]): runs a body and records
// exactly which buffers it reads and writes, at which index expressions, and how many operations
// it performs (the realization rules and the fusion decisions use both).
#pragma once

#include <string>
#include <vector>

#include "src/lower/ops_handler.h"

namespace kiln::lower {

struct MemoryAccess {
  std::string buffer;
  sym::ExprPtr index;
  ScalarType dtype;
  friend bool operator==(const MemoryAccess&, const MemoryAccess&) = default;
};

class DependencyHandler : public OpsHandler {
 public:
  const std::vector<MemoryAccess>& reads() const { return reads_; }
  const std::vector<MemoryAccess>& writes() const { return writes_; }
  // Operations other than loads, stores and constants.
  int op_count() const { return op_count_; }
  // Unary ops that cost far more than an add (exp, log, tanh, erf, ...).
  int expensive_op_count() const { return expensive_; }
  std::vector<ReductionType> reductions() const { return reductions_; }

  Val load(BufferRef buffer, sym::ExprPtr index) override;
  void store(BufferRef buffer, sym::ExprPtr index, Val value) override;
  Val index_expr(sym::ExprPtr expr, ScalarType dtype) override;
  Val constant_int(int64_t i, ScalarType dtype) override;
  Val constant_float(double f, ScalarType dtype) override;
  Val to_dtype(Val x, ScalarType dtype) override;
  Val unary(UnaryOp op, Val x) override;
  Val binary(BinaryOp op, Val a, Val b) override;
  Val where(Val cond, Val a, Val b) override;
  Val reduction(ReductionType type, Val value) override;
  void store_reduction(BufferRef buffer, sym::ExprPtr index, Val value) override;

 private:
  Val make(ScalarType dtype) { return Val{next_id_++, dtype}; }
  std::vector<MemoryAccess> reads_;
  std::vector<MemoryAccess> writes_;
  std::vector<ReductionType> reductions_;
  int op_count_ = 0;
  int expensive_ = 0;
  int32_t next_id_ = 0;
};

}  // namespace kiln::lower
