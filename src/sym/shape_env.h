// ShapeEnv: the symbols of one trace, their hints and value ranges, and the guards and runtime
// asserts recorded while tracing (DESIGN.md section 4; Note [Guarding a symbolic value] in
// include/kiln/sym_int.h).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kiln/error.h"
#include "kiln/sym_int.h"
#include "src/sym/expr.h"
#include "src/sym/value_range.h"

namespace kiln::sym {

struct ShapeEnvOptions {
  bool specialize_zero_one = true;  // sizes 0 and 1 stay constants (broadcasting stays static)
  bool duck_shape = true;           // inputs with equal sizes share one symbol
};

// "model.cpp:12": where a guard or assert came from (the file's name without its directory).
std::string origin_of(std::source_location loc);

// A condition that held while tracing and must hold for the compiled code to be reused.
struct ShapeGuard {
  ExprPtr condition;   // boolean, in terms of backed symbols
  std::string origin;  // origin_of() the C++ code that branched
};

struct RuntimeAssert {
  ExprPtr condition;  // boolean, may use unbacked symbols; checked when the graph runs
  std::string origin;
};

struct SymbolInfo {
  ExprPtr symbol;
  std::optional<int64_t> hint;  // none for unbacked symbols
  ValueRange range;
  std::string source;  // "arg0.size(0)", "model.fc.weight.size(1)", "nonzero output size"
  bool unbacked = false;
};

// Thrown when code needs the value of an expression over unbacked symbols (a graph break).
struct DataDependentError : Error {
  DataDependentError(ExprPtr condition, std::string origin, const std::string& message)
      : Error(message), condition(condition), origin(std::move(origin)) {}
  ExprPtr condition;   // simplified, in terms of the unbacked symbols
  std::string origin;  // origin_of() the code that branched
};

// Called by guard_bool for a condition on unbacked symbols instead of throwing
// DataDependentError; returns the condition's value (the tracer materializes it there).
using DataDependentHandler = std::function<bool(ExprPtr condition, std::source_location loc)>;
// Called by guard_int for a value over unbacked symbols; throws (there is no value to return).
using DataDependentIntHandler = std::function<void(ExprPtr value, std::source_location loc)>;

class ShapeEnv {
 public:
  explicit ShapeEnv(ShapeEnvOptions options = {});

  // A size of an input: a constant under 0/1 specialization or when !dynamic; otherwise a fresh
  // backed symbol, or under duck sizing the symbol another input size with the same hint got.
  SymInt create_size_symbol(int64_t hint, std::string source, bool dynamic = true);
  // A data-dependent size or value (nonzero's output size, item()).
  SymInt create_unbacked_symbol(std::string source, ValueRange range = ValueRange::unbounded());

  // Guarded evaluation (Note [Guarding a symbolic value]). A condition that value ranges and
  // replacements decide is answered without a guard; otherwise the hints answer it and the answer
  // is recorded as a guard (once per condition). A held equality `s1 == s0` or `s0 == 8` also
  // becomes a replacement (the newer symbol by the older one, or by the constant). A condition on
  // unbacked symbols goes to the data-dependent handler, or throws DataDependentError.
  bool guard_bool(ExprPtr condition, std::source_location loc);
  // Guards `value == hint` and returns the hint. Throws DataDependentError on unbacked symbols.
  int64_t guard_int(ExprPtr value, std::source_location loc);
  void set_data_dependent_handler(DataDependentHandler handler) { handler_ = std::move(handler); }
  void set_data_dependent_int_handler(DataDependentIntHandler handler) {
    int_handler_ = std::move(handler);
  }
  // The value under the hints, without guarding; nullopt when unbacked symbols are involved.
  std::optional<int64_t> hint(ExprPtr e) const;
  // True/false if the condition follows from value ranges and replacements alone (no guard).
  std::optional<bool> statically_known(ExprPtr condition) const;
  // The same, with every size-like unbacked symbol taken to be at least 2 (Note [Size-oblivious
  // reasoning] in include/kiln/sym_int.h); nullopt when even that does not decide it.
  std::optional<bool> decide_size_oblivious(ExprPtr condition) const;
  // Records a fact checked when the graph runs (kiln::check). A condition `u0 >= 1`, `u0 < 10`,
  // `u0 == 3` (or an And of them) narrows u0's value range. Throws ValueError when the condition
  // is statically false, or false under the hints.
  void add_runtime_assert(ExprPtr condition, std::source_location loc);

  // Evaluates the backed symbols' value ranges (0/1 specialization) and every guard for concrete
  // symbol values. On failure returns false and, if `failed` is set, the first failing guard in
  // words: "s0 >= 8 (from model.cpp:12) is false: s0 = 4".
  bool check_guards(const std::function<std::optional<int64_t>(ExprPtr symbol)>& value,
                    std::string* failed = nullptr) const;
  // The same conditions as one expression (an And), to compile into a CompiledExpr for the
  // cache's fast path; check_guards() then explains a failure.
  ExprPtr all_guards() const;

  // Applies the replacements (s1 -> s0 after a guard s0 == s1), then rewrites what the value
  // ranges decide (Max(s0, 1) is s0 for a size symbol; `s0 >= 0` is True).
  ExprPtr simplify(ExprPtr e) const;

  const std::vector<ShapeGuard>& guards() const { return guards_; }
  const std::vector<RuntimeAssert>& runtime_asserts() const { return runtime_asserts_; }
  const std::vector<SymbolInfo>& symbols() const { return symbols_; }
  const SymbolInfo* info(ExprPtr symbol) const;
  const ShapeEnvOptions& options() const { return options_; }

  // Note [A frozen ShapeEnv]
  // Work that runs after its trace ended, on that trace's graph (the backward AOT autograd
  // specializes for absent tangents at backward time), still asks questions about the graph's
  // symbols: does s2 broadcast (s2 == 1)? A copy of the trace's ShapeEnv answers what the trace's
  // value ranges, replacements and guards already decide; a condition that would need a new guard
  // raises instead, because no cache entry would check it. The copy has no data-dependent handler
  // (the tracer it called back is gone).
  std::shared_ptr<ShapeEnv> frozen_copy(std::string who) const;
  bool frozen() const { return !frozen_for_.empty(); }

  // The ShapeEnv guarded conversions on this thread use (set by the tracer).
  static ShapeEnv* current();
  class Scope {
   public:
    explicit Scope(ShapeEnv* env);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    ShapeEnv* saved_;
  };

 private:
  ShapeEnvOptions options_;
  std::vector<SymbolInfo> symbols_;
  std::unordered_map<ExprPtr, size_t> symbol_index_;
  std::unordered_map<int64_t, ExprPtr> duck_;  // hint -> symbol (duck sizing)
  std::unordered_map<ExprPtr, ExprPtr> replacements_;
  std::vector<ShapeGuard> guards_;
  std::unordered_set<ExprPtr> guarded_;
  std::vector<RuntimeAssert> runtime_asserts_;
  std::unordered_set<ExprPtr> asserted_;
  DataDependentHandler handler_;
  DataDependentIntHandler int_handler_;
  std::string frozen_for_;  // Note [A frozen ShapeEnv]: who uses the copy; empty when not frozen

  static ExprPtr range_condition(const SymbolInfo& info);  // "s0 >= 2" for a backed symbol
  ExprPtr apply_replacements(ExprPtr e) const;
  ExprPtr simplify_with_ranges(ExprPtr e) const;
  ValueRange range_of(ExprPtr e) const;
  std::optional<bool> decide_by_ranges(ExprPtr condition) const;
  bool uses_unbacked(ExprPtr e) const;
  void add_replacement(ExprPtr equality);
  void narrow_range(ExprPtr fact);
  int next_backed_ = 0, next_unbacked_ = 0;
};

}  // namespace kiln::sym
