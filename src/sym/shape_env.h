// ShapeEnv: the symbols of one trace, their hints and value ranges, and the guards and runtime
// asserts recorded while tracing (DESIGN.md section 4; Note [Guarding a symbolic value] in
// include/kiln/sym_int.h).
#pragma once

#include <functional>
#include <optional>
#include <source_location>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/sym_int.h"
#include "src/sym/expr.h"
#include "src/sym/value_range.h"

namespace kiln::sym {

struct ShapeEnvOptions {
  bool specialize_zero_one = true;  // sizes 0 and 1 stay constants (broadcasting stays static)
  bool duck_shape = true;           // inputs with equal sizes share one symbol
};

// A condition that held while tracing and must hold for the compiled code to be reused.
struct ShapeGuard {
  ExprPtr condition;  // boolean, in terms of backed symbols
  std::string origin;  // "file.cpp:12 (in fn)" of the C++ code that branched
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
struct DataDependentError;

class ShapeEnv {
 public:
  explicit ShapeEnv(ShapeEnvOptions options = {});

  // A size of an input: a constant under 0/1 specialization or when !dynamic; otherwise a fresh
  // backed symbol, or under duck sizing the symbol another input size with the same hint got.
  SymInt create_size_symbol(int64_t hint, std::string source, bool dynamic = true);
  // A data-dependent size or value (nonzero's output size, item()).
  SymInt create_unbacked_symbol(std::string source, ValueRange range = ValueRange::unbounded());

  // Guarded evaluation (Note [Guarding a symbolic value]). Throws DataDependentError when the
  // expression needs an unbacked symbol (the tracer turns that into a graph break).
  bool guard_bool(ExprPtr condition, std::source_location loc);
  int64_t guard_int(ExprPtr value, std::source_location loc);
  // The value under the hints, without guarding; nullopt when unbacked symbols are involved.
  std::optional<int64_t> hint(ExprPtr e) const;
  // True/false if the condition follows from value ranges and replacements alone (no guard).
  std::optional<bool> statically_known(ExprPtr condition) const;
  void add_runtime_assert(ExprPtr condition, std::source_location loc);

  // Replacements (s1 -> s0 after a guard s0 == s1), applied by simplify().
  ExprPtr simplify(ExprPtr e) const;

  const std::vector<ShapeGuard>& guards() const { return guards_; }
  const std::vector<RuntimeAssert>& runtime_asserts() const { return runtime_asserts_; }
  const std::vector<SymbolInfo>& symbols() const { return symbols_; }
  const SymbolInfo* info(ExprPtr symbol) const;
  const ShapeEnvOptions& options() const { return options_; }

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
  std::vector<RuntimeAssert> runtime_asserts_;
  int next_backed_ = 0, next_unbacked_ = 0;
};

}  // namespace kiln::sym
