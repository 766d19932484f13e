// CompiledExpr: an expression flattened into a postfix program, evaluated over an array of symbol
// values without allocating (the compile cache's guard check runs on every call).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "src/sym/expr.h"

namespace kiln::sym {

class CompiledExpr {
 public:
  // `symbols[i]` is read from `symbol_values[i]` by eval(); every symbol of `e` must be listed
  // (ValueError otherwise).
  CompiledExpr(ExprPtr e, std::span<const ExprPtr> symbols);

  // The value of the expression (a condition gives 0 or 1). Throws ValueError on division by 0.
  int64_t eval(const int64_t* symbol_values) const;

  size_t size() const { return program_.size(); }

 private:
  enum class Op : uint8_t {
    Constant,
    Symbol,
    Add,
    Mul,
    FloorDiv,
    Mod,
    Min,
    Max,
    Eq,
    Ne,
    Lt,
    Le,
    And,
    Or,
    Not
  };
  struct Instruction {
    Op op;
    uint32_t arity;   // operands popped (n-ary Add, Mul, Min, Max, And, Or)
    int64_t operand;  // the constant, or the symbol's index
  };
  void emit(ExprPtr e, std::span<const ExprPtr> symbols, size_t depth);

  std::vector<Instruction> program_;
  size_t max_depth_ = 0;
};

}  // namespace kiln::sym
