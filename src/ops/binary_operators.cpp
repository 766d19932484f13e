// The Tensor operators declared at the bottom of kiln/tensor.h (binary ones; the unary -, ~
// and ! belong to the unary family). A Scalar on the left of a non-commutative operator
// (2 - t, 1 / t) becomes a wrapped-number 0-dim tensor, which still promotes as a Scalar.
#include "kiln/ops/binary.h"

#include <algorithm>

#include "src/core/promotion.h"
#include "src/core/tensor_factory.h"
#include "src/dispatch/dispatcher.h"
#include "src/sym/shape_env.h"

namespace kiln {
namespace {
// On CPU whatever `like`'s device: a CPU 0-dim tensor mixes with tensors of any device, and on
// fake (Meta) tensors the Scalar's value must survive (AOT autograd records it, Note [Joint
// graph]).
Tensor wrap(const Scalar& s, const Tensor&) {
  return scalar_to_tensor(s, std::nullopt, Device::CPU);
}
}  // namespace

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return sub(wrap(a, b), b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator/(const Scalar& a, const Tensor& b) { return div(wrap(a, b), b); }
Tensor operator%(const Tensor& a, const Tensor& b) { return remainder(a, b); }
Tensor operator%(const Tensor& a, const Scalar& b) { return remainder(a, b); }
Tensor operator&(const Tensor& a, const Tensor& b) { return bitwise_and(a, b); }
Tensor operator|(const Tensor& a, const Tensor& b) { return bitwise_or(a, b); }
Tensor operator^(const Tensor& a, const Tensor& b) { return bitwise_xor(a, b); }
Tensor operator<<(const Tensor& a, const Tensor& b) { return bitwise_left_shift(a, b); }
Tensor operator<<(const Tensor& a, const Scalar& b) { return bitwise_left_shift(a, b); }
Tensor operator>>(const Tensor& a, const Tensor& b) { return bitwise_right_shift(a, b); }
Tensor operator>>(const Tensor& a, const Scalar& b) { return bitwise_right_shift(a, b); }
Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
Tensor operator==(const Tensor& a, const Scalar& b) { return eq(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
Tensor operator!=(const Tensor& a, const Scalar& b) { return ne(a, b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
Tensor operator<(const Tensor& a, const Scalar& b) { return lt(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
Tensor operator<=(const Tensor& a, const Scalar& b) { return le(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
Tensor operator>(const Tensor& a, const Scalar& b) { return gt(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
Tensor operator>=(const Tensor& a, const Scalar& b) { return ge(a, b); }
const Tensor& operator+=(const Tensor& a, const Tensor& b) { return a.add_(b); }
const Tensor& operator+=(const Tensor& a, const Scalar& b) { return a.add_(b); }
const Tensor& operator-=(const Tensor& a, const Tensor& b) { return a.sub_(b); }
const Tensor& operator-=(const Tensor& a, const Scalar& b) { return a.sub_(b); }
const Tensor& operator*=(const Tensor& a, const Tensor& b) { return a.mul_(b); }
const Tensor& operator*=(const Tensor& a, const Scalar& b) { return a.mul_(b); }
const Tensor& operator/=(const Tensor& a, const Tensor& b) { return a.div_(b); }
const Tensor& operator/=(const Tensor& a, const Scalar& b) { return a.div_(b); }

// Note [A SymInt operand]
// `x * n` with n = count.item<SymInt>() under kiln::compile: converting n to a Scalar asks for its
// integer value, which an unbacked symbol does not have while tracing (GuardOnDataDependentError).
// PyTorch records the SymInt as the op's argument; Kiln's Scalar is concrete, so instead the value
// becomes a graph value: sym_scalar_tensor(n), computed from the symbols when the graph runs (the
// symbol is bound by then: Note [Scalar outputs in a graph] in src/ops/scalar_output.cpp), cast to
// the dtype the integer Scalar would have promoted to with the other operand (for a true division,
// a floating dtype: uint8 x / -2 is negative). A 0-dim operand of that dtype promotes to the same
// result as the Scalar did, 0-dim or bool `other` included. A
// backed symbol (a size under dynamic shapes) stays a Scalar: it guards on its value, as before.
std::optional<Tensor> sym_int_operand(SymInt n, const Tensor& other, bool true_division) {
  if (!n.is_symbolic()) return std::nullopt;
  const sym::ShapeEnv* env = sym::ShapeEnv::current();
  if (env == nullptr) return std::nullopt;
  const std::vector<sym::ExprPtr> symbols = sym::free_symbols(n.expr());
  if (std::none_of(symbols.begin(), symbols.end(), [&](sym::ExprPtr s) {
        const sym::SymbolInfo* info = env->info(s);
        return info != nullptr && info->unbacked;
      }))
    return std::nullopt;
  static const OpId id = op_id("sym_scalar_tensor");
  ScalarType dtype = result_type("sym_int_operand", other, Scalar(int64_t{0}));
  // Integer operands of a true division compute in the default float dtype: an unsigned one
  // must not wrap n first.
  if (true_division && is_integral_or_bool(dtype)) dtype = kDefaultFloat;
  return dispatch::call_tensor(id, n, Device::CPU).to(dtype);
}

}  // namespace kiln
