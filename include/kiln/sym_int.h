// SymInt and SymBool: a size, stride, offset or a condition on them. One 64-bit word: a plain
// integer (or bool) in eager mode, a tagged pointer to a symbolic expression (src/sym) while
// tracing.
//
// Note [SymInt representation]
// Integers in [kSymbolicTagMin, kSymbolicTagMax] are reserved for tagged pointers; no tensor can
// have a size that large (it is below -2^62), so eager code pays nothing for symbolic support: a
// span of concrete SymInts is bit-identical to a span of int64_t (see TensorImpl::sizes()). Every
// operator tests one comparison and takes the integer path; only symbolic operands go out of line
// to src/sym, which builds (hash-consed, simplified) expressions.
//
// Note [Guarding a symbolic value]
// C++ code cannot branch on an expression. Converting a symbolic SymBool to `bool` (an `if` on a
// comparison of sizes) or a symbolic SymInt to `int64_t` asks the current ShapeEnv (the one the
// tracer installed on this thread): it answers with the symbols' hints and records the answer as a
// guard, so the compiled graph is only reused for inputs where the answer is the same. A condition
// on an unbacked (data-dependent) symbol has no hint: that is a graph break. Code that wants to
// stay symbolic keeps SymInt/SymBool (`auto n = x.size(0);`) instead of converting.
#pragma once

#include <concepts>
#include <cstdint>
#include <ostream>
#include <source_location>
#include <span>

#include "kiln/array_ref.h"

namespace kiln {

namespace sym {
class Expr;
}

class SymBool;

class SymInt {
 public:
  static constexpr int64_t kSymbolicTagMin = INT64_MIN;
  static constexpr int64_t kSymbolicTagMax = INT64_MIN + (int64_t{1} << 62);

  constexpr SymInt() = default;
  constexpr SymInt(int64_t value) : data_(value) {}
  // A symbolic SymInt for `expr` (an integer expression); a constant expression gives a plain int.
  static SymInt from_expr(const sym::Expr* expr);

  constexpr bool is_symbolic() const { return data_ <= kSymbolicTagMax; }
  // The expression of a symbolic SymInt (an Integer expression for a concrete one).
  const sym::Expr* expr() const;
  // The concrete value; throws kiln::Error when symbolic (a bug in the caller).
  int64_t expect_int() const;
  // The value when concrete, else nullopt.
  constexpr bool is_concrete() const { return !is_symbolic(); }
  // The concrete value, guarding a symbolic one on its hint (Note [Guarding a symbolic value]).
  int64_t guard_int(std::source_location loc = std::source_location::current()) const;
  // The hint of a symbolic value (the value it has for the inputs being traced), no guard.
  int64_t hint() const;
  constexpr int64_t raw() const { return data_; }
  static constexpr SymInt from_raw(int64_t raw) {
    SymInt s;
    s.data_ = raw;
    return s;
  }

  // Implicit so that existing integer code keeps working: it specializes (guards) a symbolic value.
  operator int64_t() const { return is_symbolic() ? guard_int() : data_; }

  friend std::ostream& operator<<(std::ostream& os, SymInt s);

 private:
  int64_t data_ = 0;
};
static_assert(sizeof(SymInt) == sizeof(int64_t));

class SymBool {
 public:
  constexpr SymBool() = default;
  constexpr SymBool(bool value) : data_(value ? 1 : 0) {}
  static SymBool from_expr(const sym::Expr* expr);

  constexpr bool is_symbolic() const { return data_ > 1; }
  const sym::Expr* expr() const;
  bool expect_bool() const;
  bool guard_bool(std::source_location loc = std::source_location::current()) const;
  // Like PyTorch's `bool(sym_bool)`: guards a symbolic condition (Note [Guarding a symbolic
  // value]).
  operator bool() const { return is_symbolic() ? guard_bool() : data_ == 1; }
  constexpr uintptr_t raw() const { return data_; }

  friend std::ostream& operator<<(std::ostream& os, SymBool b);

 private:
  uintptr_t data_ = 0;  // 0 false, 1 true, else a `const sym::Expr*`
};

// Out-of-line symbolic paths (src/sym/sym_int.cpp).
namespace sym_detail {
SymInt add(SymInt a, SymInt b);
SymInt sub(SymInt a, SymInt b);
SymInt mul(SymInt a, SymInt b);
SymInt floordiv(SymInt a, SymInt b);
SymInt mod(SymInt a, SymInt b);
SymInt min(SymInt a, SymInt b);
SymInt max(SymInt a, SymInt b);
SymBool eq(SymInt a, SymInt b);
SymBool ne(SymInt a, SymInt b);
SymBool lt(SymInt a, SymInt b);
SymBool le(SymInt a, SymInt b);
SymBool logical_and(SymBool a, SymBool b);
SymBool logical_or(SymBool a, SymBool b);
SymBool logical_not(SymBool a);
// Floor division and modulo as Python defines them (the sign follows the divisor).
constexpr int64_t floordiv_int(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
constexpr int64_t mod_int(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
}  // namespace sym_detail

#define KILN_SYMINT_BINARY(op, fn, expr_)                                \
  inline SymInt operator op(SymInt a, SymInt b) {                        \
    if (a.is_symbolic() || b.is_symbolic()) return sym_detail::fn(a, b); \
    int64_t x = a.raw(), y = b.raw();                                    \
    return SymInt(expr_);                                                \
  }                                                                      \
  template <std::integral I>                                             \
  SymInt operator op(SymInt a, I b) {                                    \
    return a op SymInt(static_cast<int64_t>(b));                         \
  }                                                                      \
  template <std::integral I>                                             \
  SymInt operator op(I a, SymInt b) {                                    \
    return SymInt(static_cast<int64_t>(a)) op b;                         \
  }
KILN_SYMINT_BINARY(+, add, x + y)
KILN_SYMINT_BINARY(-, sub, x - y)
KILN_SYMINT_BINARY(*, mul, x* y)
// `/` on SymInt is floor division, like Python's `//` on sizes (equal to C++ `/` for sizes >= 0).
KILN_SYMINT_BINARY(/, floordiv, sym_detail::floordiv_int(x, y))
KILN_SYMINT_BINARY(%, mod, sym_detail::mod_int(x, y))
#undef KILN_SYMINT_BINARY

#define KILN_SYMINT_COMPARE(op, make)                    \
  inline SymBool operator op(SymInt a, SymInt b) {       \
    if (a.is_symbolic() || b.is_symbolic()) return make; \
    return SymBool(a.raw() op b.raw());                  \
  }                                                      \
  template <std::integral I>                             \
  SymBool operator op(SymInt a, I b) {                   \
    return a op SymInt(static_cast<int64_t>(b));         \
  }                                                      \
  template <std::integral I>                             \
  SymBool operator op(I a, SymInt b) {                   \
    return SymInt(static_cast<int64_t>(a)) op b;         \
  }
KILN_SYMINT_COMPARE(==, sym_detail::eq(a, b))
KILN_SYMINT_COMPARE(!=, sym_detail::ne(a, b))
KILN_SYMINT_COMPARE(<, sym_detail::lt(a, b))
KILN_SYMINT_COMPARE(<=, sym_detail::le(a, b))
KILN_SYMINT_COMPARE(>, sym_detail::lt(b, a))
KILN_SYMINT_COMPARE(>=, sym_detail::le(b, a))
#undef KILN_SYMINT_COMPARE

inline SymInt operator-(SymInt a) { return SymInt(0) - a; }
inline SymInt& operator+=(SymInt& a, SymInt b) { return a = a + b; }
inline SymInt& operator-=(SymInt& a, SymInt b) { return a = a - b; }
inline SymInt& operator*=(SymInt& a, SymInt b) { return a = a * b; }
inline SymInt& operator/=(SymInt& a, SymInt b) { return a = a / b; }

inline SymInt sym_min(SymInt a, SymInt b) {
  if (a.is_symbolic() || b.is_symbolic()) return sym_detail::min(a, b);
  return a.raw() < b.raw() ? a : b;
}
inline SymInt sym_max(SymInt a, SymInt b) {
  if (a.is_symbolic() || b.is_symbolic()) return sym_detail::max(a, b);
  return a.raw() < b.raw() ? b : a;
}

// Named, not operators: `&&` on SymBool would lose short-circuiting and make `sym && bool`
// ambiguous. Plain `&&` converts (guards) each side, which is what branching code wants anyway.
inline SymBool sym_and(SymBool a, SymBool b) {
  if (a.is_symbolic() || b.is_symbolic()) return sym_detail::logical_and(a, b);
  return SymBool(a.raw() == 1 && b.raw() == 1);
}
inline SymBool sym_or(SymBool a, SymBool b) {
  if (a.is_symbolic() || b.is_symbolic()) return sym_detail::logical_or(a, b);
  return SymBool(a.raw() == 1 || b.raw() == 1);
}
inline SymBool sym_not(SymBool a) {
  if (a.is_symbolic()) return sym_detail::logical_not(a);
  return SymBool(a.raw() == 0);
}

// Structural identity of two SymInts (same integer, or the same interned expression); never guards.
constexpr bool same(SymInt a, SymInt b) { return a.raw() == b.raw(); }

// Records that `cond` holds: checked now when concrete (Error if false), a runtime assert on the
// current ShapeEnv when symbolic (for unbacked symbols, instead of a graph break).
void check(SymBool cond, std::source_location loc = std::source_location::current());
// check(size >= 0): `size` (an item<SymInt>() value) is used as a size; its value range starts
// at 0, so conditions such as `size == -1` or `size < 0` are decided (false) without a guard.
void check_is_size(SymInt size, std::source_location loc = std::source_location::current());

// Note [Size-oblivious reasoning]
// Whether `cond` holds, deciding a condition on data-dependent sizes as if each size-like unbacked
// symbol (an unbacked symbol whose range starts at 0 or more: nonzero's length, a value after
// check_is_size) were at least 2, with no guard and no data-dependent error, as PyTorch's
// guard_size_oblivious does. Only for questions whose answer for sizes 0 and 1 gives the same
// result as for 2 and more (is this dim 1, so that it broadcasts? then the other side wins either
// way); anything else falls back to the usual guard.
bool guard_size_oblivious(SymBool cond, std::source_location loc = std::source_location::current());

using IntArrayRef = ArrayRef<int64_t>;
using SymIntArrayRef = ArrayRef<SymInt>;

}  // namespace kiln
