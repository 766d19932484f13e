// A postfix program over a small value stack (compiled_expr.h).
#include "src/sym/compiled_expr.h"

#include <algorithm>
#include <array>

#include "kiln/error.h"
#include "kiln/sym_int.h"

namespace kiln::sym {

CompiledExpr::CompiledExpr(ExprPtr e, std::span<const ExprPtr> symbols) { emit(e, symbols, 1); }

// `depth` is the stack height once e's value is pushed.
void CompiledExpr::emit(ExprPtr e, std::span<const ExprPtr> symbols, size_t depth) {
  max_depth_ = std::max(max_depth_, depth);
  auto args = e->args();
  for (size_t i = 0; i < args.size(); ++i) emit(args[i], symbols, depth + i);
  uint32_t arity = static_cast<uint32_t>(args.size());
  switch (e->kind()) {
    case ExprKind::Integer:
      program_.push_back({Op::Constant, 0, e->value()});
      return;
    case ExprKind::True:
      program_.push_back({Op::Constant, 0, 1});
      return;
    case ExprKind::False:
      program_.push_back({Op::Constant, 0, 0});
      return;
    case ExprKind::Symbol: {
      auto it = std::find(symbols.begin(), symbols.end(), e);
      KILN_CHECK(it != symbols.end(), ValueError,
                 "CompiledExpr: symbol {} has no slot in the symbol list", e->name());
      program_.push_back({Op::Symbol, 0, it - symbols.begin()});
      return;
    }
    case ExprKind::Add:
      program_.push_back({Op::Add, arity, 0});
      return;
    case ExprKind::Mul:
      program_.push_back({Op::Mul, arity, 0});
      return;
    case ExprKind::FloorDiv:
      program_.push_back({Op::FloorDiv, arity, 0});
      return;
    case ExprKind::Mod:
      program_.push_back({Op::Mod, arity, 0});
      return;
    case ExprKind::Min:
      program_.push_back({Op::Min, arity, 0});
      return;
    case ExprKind::Max:
      program_.push_back({Op::Max, arity, 0});
      return;
    case ExprKind::Eq:
      program_.push_back({Op::Eq, arity, 0});
      return;
    case ExprKind::Ne:
      program_.push_back({Op::Ne, arity, 0});
      return;
    case ExprKind::Lt:
      program_.push_back({Op::Lt, arity, 0});
      return;
    case ExprKind::Le:
      program_.push_back({Op::Le, arity, 0});
      return;
    case ExprKind::And:
      program_.push_back({Op::And, arity, 0});
      return;
    case ExprKind::Or:
      program_.push_back({Op::Or, arity, 0});
      return;
    case ExprKind::Not:
      program_.push_back({Op::Not, arity, 0});
      return;
  }
}

namespace {

int64_t wrap_add(int64_t a, int64_t b) { return static_cast<int64_t>(uint64_t(a) + uint64_t(b)); }
int64_t wrap_mul(int64_t a, int64_t b) { return static_cast<int64_t>(uint64_t(a) * uint64_t(b)); }

}  // namespace

int64_t CompiledExpr::eval(const int64_t* symbol_values) const {
  // Guard expressions are shallow; a deep one uses a per-thread buffer that only ever grows.
  constexpr size_t kInline = 64;
  std::array<int64_t, kInline> inline_stack;
  int64_t* stack = inline_stack.data();
  if (max_depth_ > kInline) {
    thread_local std::vector<int64_t> deep;
    if (deep.size() < max_depth_) deep.resize(max_depth_);
    stack = deep.data();
  }
  size_t top = 0;  // number of values on the stack
  for (const Instruction& in : program_) {
    if (in.op == Op::Constant) {
      stack[top++] = in.operand;
      continue;
    }
    if (in.op == Op::Symbol) {
      stack[top++] = symbol_values[in.operand];
      continue;
    }
    int64_t* operands = stack + top - in.arity;
    int64_t r = operands[0];
    for (uint32_t i = 1; i < in.arity; ++i) {
      int64_t x = operands[i];
      switch (in.op) {
        case Op::Add:
          r = wrap_add(r, x);
          break;
        case Op::Mul:
          r = wrap_mul(r, x);
          break;
        case Op::Min:
          r = std::min(r, x);
          break;
        case Op::Max:
          r = std::max(r, x);
          break;
        case Op::And:
          r = r != 0 && x != 0;
          break;
        case Op::Or:
          r = r != 0 || x != 0;
          break;
        case Op::Eq:
          r = r == x;
          break;
        case Op::Ne:
          r = r != x;
          break;
        case Op::Lt:
          r = r < x;
          break;
        case Op::Le:
          r = r <= x;
          break;
        case Op::FloorDiv:
        case Op::Mod:
          KILN_CHECK(x != 0, ValueError, "CompiledExpr::eval: division by zero");
          if (x == -1) {  // INT64_MIN // -1 wraps instead of trapping
            r = in.op == Op::Mod ? 0 : wrap_mul(r, -1);
          } else {
            r = in.op == Op::Mod ? sym_detail::mod_int(r, x) : sym_detail::floordiv_int(r, x);
          }
          break;
        default:
          break;
      }
    }
    if (in.op == Op::Not) r = r == 0;
    if (in.arity == 1 && (in.op == Op::And || in.op == Op::Or)) r = r != 0;
    top -= in.arity;
    stack[top++] = r;
  }
  return stack[0];
}

}  // namespace kiln::sym
