// The reference interpreter of the loop IR: runs a body at one concrete index and computes the
// element's value exactly as the eager kernels would (element.h). Generated kernels are checked
// against it (tests of src/codegen), and it is the executable definition of what a body means.
//
// Note [Interpreting a define-by-run body]
// A body is called with symbolic indices (loop variables i0, i1, ..., r0, r1, ...; see
// loop_symbols.h) exactly as under the other handlers. The interpreter gives every symbol a value
// through bind() before the call, so each index expression a body passes to load or index_expr is
// evaluated with sym::evaluate at that point. Each Val is an id into a table of Elements that lives
// until begin_element(). Reductions: the driver calls the reduction body once per reduction index
// (begin_iteration() before each call) and feeds its value to reduction(); the k-th reduction()
// call of an iteration accumulates into accumulator k, so a body with several reductions (a fused
// welford mean and m2) keeps them apart. reduction() returns the reduced value so far (a snapshot),
// so the Val of the last iteration is the element's result. argmax/argmin count the position of
// the value in feeding order, which is the row-major flat index over the reduction ranges.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kiln/tensor.h"
#include "src/lower/handlers/element.h"
#include "src/lower/ir.h"

namespace kiln::lower {

class InterpreterHandler final : public OpsHandler {
 public:
  // Reads element `offset` (in elements from the buffer's data pointer) of a buffer; throws for
  // a bad buffer or offset. tensor_reader() makes one over named tensors.
  using BufferReader = std::function<Element(BufferRef buffer, int64_t offset)>;

  struct Store {
    std::string buffer;
    int64_t offset;
    Element value;
    bool is_reduction;  // from store_reduction
  };

  explicit InterpreterHandler(BufferReader reader);
  ~InterpreterHandler() override;

  // Gives `symbol` a value for the index expressions that follow.
  void bind(sym::ExprPtr symbol, int64_t value) { bindings_[symbol] = value; }
  void bind_all(const std::unordered_map<sym::ExprPtr, int64_t>& values);
  // The value of an index expression under the bindings; ValueError naming an unbound symbol.
  int64_t evaluate_index(sym::ExprPtr e) const;

  // The Element of a value computed since the last begin_element().
  Element value(Val v) const;
  // Forgets every value and reduction accumulator (a new output element).
  void begin_element();
  // The next call of a reduction body (Note [Interpreting a define-by-run body]).
  void begin_iteration() { next_accumulator_ = 0; }
  // The reduced value of accumulator k (identity when nothing was fed; ValueError for reductions
  // that have no identity: max, min, argmax, argmin).
  Element reduced(size_t k, ReductionType type, ScalarType value_dtype) const;

  const std::vector<Store>& stores() const { return stores_; }
  void clear_stores() { stores_.clear(); }

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
  class Accumulator;
  Val push(Element e);

  BufferReader reader_;
  std::unordered_map<sym::ExprPtr, int64_t> bindings_;
  std::vector<Element> values_;
  std::vector<Accumulator> accumulators_;
  size_t next_accumulator_ = 0;
  std::vector<Store> stores_;
};

// A BufferReader over tensors looked up by buffer name (`buffers` returns an undefined Tensor for
// an unknown name). Checks the dtype, and that the offset lies inside the tensor's extent (the
// elements its sizes and strides reach from its data pointer) before reading: a bad load is a
// ValueError naming the buffer, the offset and the extent, never an out-of-range read.
InterpreterHandler::BufferReader tensor_reader(
    std::function<Tensor(std::string_view name)> buffers);

// Runs a ComputedBuffer's loops at every index of its ranges (Pointwise), or over its reduction
// ranges per output element (Reduction, accumulating), and returns a new contiguous tensor of
// the node's sizes and dtype. Loads read `buffers` (tensor_reader); `symbol_values` gives the
// size symbols their values. A body whose value dtype differs from the node's is a ValueError (the
// lowering stores with an explicit cast). Stores a body makes itself are not applied.
Tensor evaluate(const ComputedBuffer& node,
                const std::function<Tensor(std::string_view name)>& buffers,
                const std::unordered_map<sym::ExprPtr, int64_t>& symbol_values);
Tensor evaluate(const Pointwise& pw, const std::function<Tensor(std::string_view name)>& buffers,
                const std::unordered_map<sym::ExprPtr, int64_t>& symbol_values);
Tensor evaluate(const Reduction& red, const std::function<Tensor(std::string_view name)>& buffers,
                const std::unordered_map<sym::ExprPtr, int64_t>& symbol_values);

}  // namespace kiln::lower
