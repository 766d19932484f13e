// The out-of-line symbolic paths of SymInt and SymBool (Note [SymInt representation] and
// Note [Guarding a symbolic value] in include/kiln/sym_int.h).
#include "kiln/sym_int.h"

#include "kiln/error.h"
#include "src/sym/shape_env.h"

namespace kiln {

namespace {

constexpr uint64_t kTagBit = uint64_t{1} << 63;

sym::ShapeEnv& env_for(const char* what, sym::ExprPtr e) {
  sym::ShapeEnv* env = sym::ShapeEnv::current();
  KILN_CHECK(env != nullptr, Error,
             "{}: the symbolic size `{}` was used outside a trace (no ShapeEnv is active on this "
             "thread); keep it as a SymInt/SymBool, or convert it inside the traced function",
             what, sym::to_string(e));
  return *env;
}

}  // namespace

SymInt SymInt::from_expr(const sym::Expr* expr) {
  KILN_CHECK(expr != nullptr && !expr->is_bool(), ValueError,
             "SymInt::from_expr: expected an integer expression, got `{}`",
             expr ? sym::to_string(expr) : "null");
  if (expr->is_integer()) {
    KILN_CHECK(expr->value() > kSymbolicTagMax, ValueError,
               "SymInt::from_expr: {} is below the smallest representable size (-2^62)",
               expr->value());
    return SymInt(expr->value());
  }
  return from_raw(static_cast<int64_t>(kTagBit | reinterpret_cast<uintptr_t>(expr)));
}

const sym::Expr* SymInt::expr() const {
  if (!is_symbolic()) return sym::integer(data_);
  return reinterpret_cast<const sym::Expr*>(static_cast<uint64_t>(data_) & ~kTagBit);
}

int64_t SymInt::expect_int() const {
  KILN_CHECK(!is_symbolic(), Error,
             "SymInt::expect_int: expected a concrete integer, got the symbolic `{}`",
             sym::to_string(expr()));
  return data_;
}

int64_t SymInt::guard_int(std::source_location loc) const {
  if (!is_symbolic()) return data_;
  return env_for("SymInt::guard_int", expr()).guard_int(expr(), loc);
}

int64_t SymInt::hint() const {
  if (!is_symbolic()) return data_;
  std::optional<int64_t> h = env_for("SymInt::hint", expr()).hint(expr());
  KILN_CHECK(h.has_value(), ValueError,
             "SymInt::hint: `{}` depends on a data-dependent (unbacked) symbol, which has no hint",
             sym::to_string(expr()));
  return *h;
}

std::ostream& operator<<(std::ostream& os, SymInt s) {
  if (!s.is_symbolic()) return os << s.raw();
  return os << sym::to_string(s.expr());
}

SymBool SymBool::from_expr(const sym::Expr* expr) {
  KILN_CHECK(expr != nullptr && expr->is_bool(), ValueError,
             "SymBool::from_expr: expected a condition, got `{}`",
             expr ? sym::to_string(expr) : "null");
  if (expr->kind() == sym::ExprKind::True) return SymBool(true);
  if (expr->kind() == sym::ExprKind::False) return SymBool(false);
  SymBool b;
  b.data_ = reinterpret_cast<uintptr_t>(expr);
  return b;
}

const sym::Expr* SymBool::expr() const {
  if (!is_symbolic()) return sym::boolean(data_ == 1);
  return reinterpret_cast<const sym::Expr*>(data_);
}

bool SymBool::expect_bool() const {
  KILN_CHECK(!is_symbolic(), Error,
             "SymBool::expect_bool: expected a concrete bool, got the symbolic `{}`",
             sym::to_string(expr()));
  return data_ == 1;
}

bool SymBool::guard_bool(std::source_location loc) const {
  if (!is_symbolic()) return data_ == 1;
  return env_for("SymBool::guard_bool", expr()).guard_bool(expr(), loc);
}

std::ostream& operator<<(std::ostream& os, SymBool b) {
  if (!b.is_symbolic()) return os << (b.raw() == 1 ? "True" : "False");
  return os << sym::to_string(b.expr());
}

namespace sym_detail {

#define KILN_SYM_INT_OP(name, factory) \
  SymInt name(SymInt a, SymInt b) { return SymInt::from_expr(sym::factory(a.expr(), b.expr())); }
KILN_SYM_INT_OP(add, add)
KILN_SYM_INT_OP(sub, sub)
KILN_SYM_INT_OP(mul, mul)
KILN_SYM_INT_OP(floordiv, floordiv)
KILN_SYM_INT_OP(mod, mod)
KILN_SYM_INT_OP(min, min)
KILN_SYM_INT_OP(max, max)
#undef KILN_SYM_INT_OP

#define KILN_SYM_BOOL_OP(name, type, factory) \
  SymBool name(type a, type b) { return SymBool::from_expr(sym::factory(a.expr(), b.expr())); }
KILN_SYM_BOOL_OP(eq, SymInt, eq)
KILN_SYM_BOOL_OP(ne, SymInt, ne)
KILN_SYM_BOOL_OP(lt, SymInt, lt)
KILN_SYM_BOOL_OP(le, SymInt, le)
KILN_SYM_BOOL_OP(logical_and, SymBool, logical_and)
KILN_SYM_BOOL_OP(logical_or, SymBool, logical_or)
#undef KILN_SYM_BOOL_OP

SymBool logical_not(SymBool a) { return SymBool::from_expr(sym::logical_not(a.expr())); }

}  // namespace sym_detail

void check(SymBool cond, std::source_location loc) {
  if (!cond.is_symbolic()) {
    KILN_CHECK(cond.raw() == 1, ValueError, "check failed at {}", sym::origin_of(loc));
    return;
  }
  env_for("kiln::check", cond.expr()).add_runtime_assert(cond.expr(), loc);
}

void check_is_size(SymInt size, std::source_location loc) { check(size >= 0, loc); }

bool guard_size_oblivious(SymBool cond, std::source_location loc) {
  if (!cond.is_symbolic()) return cond.raw() == 1;
  sym::ShapeEnv& env = env_for("guard_size_oblivious", cond.expr());
  if (std::optional<bool> known = env.decide_size_oblivious(cond.expr())) return *known;
  return env.guard_bool(cond.expr(), loc);
}

}  // namespace kiln
