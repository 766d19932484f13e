// Value-range analysis of loop bodies: each Val gets an interval that holds every value it can
// take over the iteration space, computed by interval arithmetic over the body. Codegen runs it
// over every body it prints, to print a float -> integer conversion the ranges prove safe as a
// plain C++ conversion (Note [Casts the value ranges prove] in src/codegen/cpp/printer.h); the
// primitive table's monotone rows need no rule here (Note [The primitive table]).
//
// Note [Sound value ranges]
// An interval must contain every value the eager semantics (element.h) can produce, so it errs
// wide: integer results are computed exactly (in 128 bits) and widen to the dtype's full range
// when the exact result could wrap; floating endpoints are computed in double and rounded outward
// to the dtype, one more ulp outward for functions libm does not round correctly; ops without a
// cheap exact rule give the full range. Floating intervals bound the non-NaN values and carry a
// separate maybe_nan flag. Loads give the dtype's full range (NaN included) unless the caller
// knows better; index expressions are bounded through sym::bound with loop variables in
// [0, size - 1].
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "src/lower/ir.h"
#include "src/sym/value_range.h"

namespace kiln::lower {

// The values of one Val (Note [Sound value ranges]).
struct ValueInterval {
  ScalarType dtype = kFloat32;
  // Integral and bool dtypes (bool as 0/1): ilo <= v <= ihi for every value (128 bits hold every
  // 64-bit value, uint64 included).
  __int128 ilo = 0, ihi = 0;
  // Floating dtypes: lo <= v <= hi for every non-NaN value (bounds may be infinite); maybe_nan
  // says whether NaN can occur.
  double lo = 0, hi = 0;
  bool maybe_nan = false;

  // Every value of `dtype` (NaN included for floating dtypes).
  static ValueInterval full(ScalarType dtype);
  static ValueInterval exactly(int64_t v, ScalarType dtype);  // an integral or bool constant
  static ValueInterval between(int64_t lo, int64_t hi, ScalarType dtype);
  static ValueInterval between_float(double lo, double hi, ScalarType dtype,
                                     bool maybe_nan = false);

  bool is_integral() const { return !is_floating(dtype); }
  bool is_full() const;
  // A single value (and no NaN).
  bool is_singleton() const;
  // Every value is >= 0 (and not NaN).
  bool is_nonnegative() const;
  // Every value is representable in `dtype` exactly (an int64 index that fits in int32).
  bool fits_in(ScalarType dtype) const;
  // Whether zero, or a non-zero value, is possible (truthiness; NaN is non-zero).
  bool may_be_zero() const;
  bool may_be_nonzero() const;
  bool operator==(const ValueInterval&) const = default;

  std::string to_string() const;  // "[0, 127] (int64)", "[-inf, 2.5] or nan (float32)"
};

// Ranges of size symbols (s0 in [2, 1024]); a symbol not in the map is unbounded.
using SymbolRanges = std::unordered_map<sym::ExprPtr, sym::ValueRange>;
// Known ranges of buffers' contents, by buffer name; other buffers give their dtype's full range.
using BufferRanges = std::unordered_map<std::string, ValueInterval>;

class ValueRangeHandler final : public OpsHandler {
 public:
  explicit ValueRangeHandler(SymbolRanges symbol_ranges, BufferRanges buffer_ranges = {});

  // The loop variable `symbol` takes values in [0, size - 1] (size bounded by the symbol ranges).
  void set_loop_range(sym::ExprPtr symbol, sym::ExprPtr size);
  // The element count of the reduction loop, for argmax/argmin and sums.
  void set_reduction_numel(sym::ExprPtr numel);

  const ValueInterval& range(Val v) const;
  // The union of the values stored to each buffer (store and store_reduction).
  const BufferRanges& stored() const { return stored_; }
  // The range of an index expression over the loop and symbol ranges.
  sym::ValueRange index_range(sym::ExprPtr e) const;
  // For every to_dtype call, in call order: its dtypes and whether it converts a floating value
  // that is never NaN and always truncates into the integer target's range
  // (float_cast_in_range). The C++ printer, running the same body, prints those as plain
  // conversions (Note [Casts the value ranges prove] in src/codegen/cpp/printer.h).
  struct CastVerdict {
    ScalarType from, to;
    bool in_range;
  };
  const std::vector<CastVerdict>& casts() const { return casts_; }

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
  Val push(ValueInterval r);
  void record_store(BufferRef buffer, Val value);

  SymbolRanges symbol_ranges_;
  BufferRanges buffer_ranges_;
  sym::ValueRange reduction_numel_ = sym::ValueRange::at_least(0);
  std::vector<ValueInterval> values_;
  BufferRanges stored_;
  std::vector<CastVerdict> casts_;
};

// Interval arithmetic on single intervals (the handler's rules, exposed for tests and codegen).
ValueInterval range_unary(UnaryOp op, const ValueInterval& x);
ValueInterval range_binary(BinaryOp op, const ValueInterval& a, const ValueInterval& b);
ValueInterval range_cast(const ValueInterval& x, ScalarType dtype);
ValueInterval range_union(const ValueInterval& a, const ValueInterval& b);
// Whether converting every value of `x` (floating) to integer `dtype` is a plain C++ conversion:
// no NaN, and every value truncates into dtype's range.
bool float_cast_in_range(const ValueInterval& x, ScalarType dtype);

// The range of a pointwise body's value over its iteration space: loop variables i0, i1, ... in
// [0, ranges[d] - 1].
ValueInterval bound(const Loader& fn, const std::vector<sym::ExprPtr>& ranges,
                    const SymbolRanges& symbol_ranges = {}, const BufferRanges& buffer_ranges = {});
// The range of a reduction's result over its output (i0, ...) and reduction (r0, ...) loops.
ValueInterval bound(const Reduction& red, const SymbolRanges& symbol_ranges = {},
                    const BufferRanges& buffer_ranges = {});

}  // namespace kiln::lower
