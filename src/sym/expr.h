// Symbolic integer and boolean expressions over size symbols (DESIGN.md section 4).
//
// Note [Interned expressions]
// Every Expr is built through the factory functions below, which simplify to a canonical form
// and intern the result: structurally equal expressions are the same pointer, so equality is
// pointer comparison and an Expr* can sit in a SymInt word. Interned nodes are never freed (like
// sympy's cache); a process sees a bounded number of distinct size expressions.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::sym {

enum class ExprKind : uint8_t {
  Integer,   // a constant
  Symbol,    // s0, s1 (backed: has a hint) or u0, u1 (unbacked: data-dependent)
  Add,       // sum of args (canonical: constant last, terms sorted)
  Mul,       // product of args (canonical: integer coefficient first)
  FloorDiv,  // args[0] // args[1], rounding toward -inf
  Mod,       // args[0] % args[1], sign of the divisor
  Min,
  Max,
  // Booleans
  True,
  False,
  Eq,
  Ne,
  Lt,
  Le,
  And,
  Or,
  Not,
};

class Expr {
 public:
  ExprKind kind() const { return kind_; }
  bool is_bool() const;
  bool is_integer() const { return kind_ == ExprKind::Integer; }
  bool is_symbol() const { return kind_ == ExprKind::Symbol; }
  int64_t value() const { return value_; }           // Integer only
  const std::string& name() const { return name_; }  // Symbol only
  std::span<const Expr* const> args() const { return args_; }
  size_t hash() const { return hash_; }

  // Internal: use the factory functions.
  Expr(ExprKind kind, int64_t value, std::string name, std::vector<const Expr*> args, size_t hash)
      : kind_(kind), value_(value), name_(std::move(name)), args_(std::move(args)), hash_(hash) {}

 private:
  ExprKind kind_;
  int64_t value_;
  std::string name_;
  std::vector<const Expr*> args_;
  size_t hash_;
};
using ExprPtr = const Expr*;

// Factories: simplify, then intern (Note [Interned expressions]); the canonical form they produce
// is Note [Canonical form] in simplify.cpp. Arithmetic on a condition, or logic on an integer, is a
// ValueError, as are division by a zero constant and constant overflow.
ExprPtr integer(int64_t v);
ExprPtr symbol(std::string_view name);  // "s0", "u3"
ExprPtr boolean(bool v);
ExprPtr add(ExprPtr a, ExprPtr b);
ExprPtr sub(ExprPtr a, ExprPtr b);
ExprPtr mul(ExprPtr a, ExprPtr b);
ExprPtr floordiv(ExprPtr a, ExprPtr b);
ExprPtr mod(ExprPtr a, ExprPtr b);
ExprPtr min(ExprPtr a, ExprPtr b);
ExprPtr max(ExprPtr a, ExprPtr b);
ExprPtr eq(ExprPtr a, ExprPtr b);
ExprPtr ne(ExprPtr a, ExprPtr b);
ExprPtr lt(ExprPtr a, ExprPtr b);
ExprPtr le(ExprPtr a, ExprPtr b);
ExprPtr logical_and(ExprPtr a, ExprPtr b);
ExprPtr logical_or(ExprPtr a, ExprPtr b);
ExprPtr logical_not(ExprPtr a);

// A deterministic total order (no pointer values): integers, then symbols by name with numeric
// suffixes in numeric order (s2 < s10), then compound expressions by kind and arguments. Products
// compare by their factor lists, so sums print as polynomials: s0 + s0*s1 + s1. Returns <0, 0, >0.
int compare(ExprPtr a, ExprPtr b);

// Code-like text: "s0*128 + 4", "(s0 + 1)//2", "Max(s0, s1)", "s0 >= 8". parse() reads it back.
std::string to_string(ExprPtr e);
ExprPtr parse(std::string_view text);  // throws kiln::ValueError naming the position

// The symbols an expression uses, in first-occurrence order.
std::vector<ExprPtr> free_symbols(ExprPtr e);
// Replaces symbols by expressions (lookup returns nullptr to keep a symbol).
ExprPtr substitute(ExprPtr e, const std::function<ExprPtr(ExprPtr symbol)>& lookup);
// Evaluates to an integer (booleans as 0/1); nullopt if a symbol has no value.
std::optional<int64_t> evaluate(ExprPtr e,
                                const std::function<std::optional<int64_t>(ExprPtr symbol)>& value);

}  // namespace kiln::sym
