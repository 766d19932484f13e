// Comparisons (eq ne lt le gt ge, with Scalar forms) and logical_and/or/xor. Both write bool.
// Comparisons compute in the promoted dtype (see Note [Exact comparisons] in
// src/kernels/cpu/binary_compare.cpp); logical ops test each operand's truth in its own dtype.
#include "kiln/ops/binary.h"
#include "src/ops/binary_common.h"

namespace kiln {
namespace {

using namespace binary;

// Note [Comparing uint64 with a signed tensor]
// Promotion has no type for uint64 with a signed integer type (Note [Promotion table]), but a
// comparison has an exact answer (Note [Unsigned integers]): a negative signed value is below
// every uint64, and a non-negative one compares as a uint64. So such a comparison computes in
// uint64 (where a negative value wraps) and then sets the elements whose signed operand is
// negative to that constant answer. The code-generating backend does the same in its kernel
// (src/lower/lowerings/pointwise.cpp).
bool uint64_with_signed(const Tensor& a, const cpu::Operand& b) {
  if (b.is_scalar()) return false;
  const ScalarType x = a.dtype(), y = b.tensor().dtype();
  auto is_signed_int = [](ScalarType t) { return is_integral(t) && !is_unsigned(t) && t != kBool; };
  return (x == kUInt64 && is_signed_int(y)) || (y == kUInt64 && is_signed_int(x));
}

// a <op> b when the signed operand is negative: true for ne and for an order that puts the
// signed side below the unsigned one.
bool answer_when_signed_is_negative(cpu::CompareOp op, bool signed_is_left) {
  switch (op) {
    case cpu::CompareOp::Eq:
      return false;
    case cpu::CompareOp::Ne:
      return true;
    case cpu::CompareOp::Lt:
    case cpu::CompareOp::Le:
      return signed_is_left;
    case cpu::CompareOp::Gt:
    case cpu::CompareOp::Ge:
      return !signed_is_left;
  }
  return false;
}

template <cpu::CompareOp Op>
void meta_compare(OpCall& call) {
  const Tensor& a = call.tensor(0);
  const cpu::Operand b = operand(call, 1);
  if (!uint64_with_signed(a, b)) promoted_dtype(call.name(), a, b);  // dtype errors
  call.set_output(0, kBool, result_shape(call.name(), a, b));
}
template <cpu::CompareOp Op>
void cpu_compare(OpCall& call) {
  const Tensor& a = call.tensor(0);
  const cpu::Operand b = operand(call, 1);
  if (!uint64_with_signed(a, b)) {
    cpu::compare_kernel(call.name(), Op, call.output(0), a, b, promoted_dtype(call.name(), a, b));
    return;
  }
  // Note [Comparing uint64 with a signed tensor]
  cpu::compare_kernel(call.name(), Op, call.output(0), a, b, kUInt64);
  const bool signed_is_left = a.dtype() != kUInt64;
  const Tensor& signed_side = signed_is_left ? a : b.tensor();
  const Tensor negative = signed_side.lt(Scalar(int64_t{0}));
  call.output(0).masked_fill_(negative.expand(call.output(0).sym_sizes()),
                              Scalar(answer_when_signed_is_negative(Op, signed_is_left)));
}

void meta_logical(OpCall& call) {
  const Tensor& a = call.tensor(0);
  call.set_output(0, kBool, result_shape(call.name(), a, operand(call, 1)));
}
template <cpu::LogicalOp Op>
void cpu_logical(OpCall& call) {
  cpu::logical_kernel(call.name(), Op, call.output(0), call.tensor(0), operand(call, 1));
}

constexpr uint32_t kTags = kTagPointwise | kTagNondifferentiable;

template <cpu::CompareOp Op>
void add_compare(OpRegistry& r, const char* name, const char* scalar_name) {
  r.add({.name = name,
         .schema = fmt::format("{}(Tensor self, Tensor other) -> Tensor", name),
         .family = "binary",
         .meta = meta_compare<Op>,
         .cpu = cpu_compare<Op>,
         .tags = kTags});
  r.add({.name = scalar_name,
         .schema = fmt::format("{}(Tensor self, Scalar other) -> Tensor", scalar_name),
         .family = "binary",
         .meta = meta_compare<Op>,
         .cpu = cpu_compare<Op>,
         .tags = kTags});
}

template <cpu::LogicalOp Op>
void add_logical(OpRegistry& r, const char* name) {
  r.add({.name = name,
         .schema = fmt::format("{}(Tensor self, Tensor other) -> Tensor", name),
         .family = "binary",
         .meta = meta_logical,
         .cpu = cpu_logical<Op>,
         .tags = kTags});
}

}  // namespace

void register_binary_compare_ops(OpRegistry& r) {
  using cpu::CompareOp;
  add_compare<CompareOp::Eq>(r, "eq", "eq.Scalar");
  add_compare<CompareOp::Ne>(r, "ne", "ne.Scalar");
  add_compare<CompareOp::Lt>(r, "lt", "lt.Scalar");
  add_compare<CompareOp::Le>(r, "le", "le.Scalar");
  add_compare<CompareOp::Gt>(r, "gt", "gt.Scalar");
  add_compare<CompareOp::Ge>(r, "ge", "ge.Scalar");
  add_logical<cpu::LogicalOp::And>(r, "logical_and");
  add_logical<cpu::LogicalOp::Or>(r, "logical_or");
  add_logical<cpu::LogicalOp::Xor>(r, "logical_xor");
}

#define KILN_BINARY_WRAPPER(fn, name, OtherT)   \
  Tensor fn(const Tensor& a, const OtherT& b) { \
    static const OpId id = op_id(name);         \
    return dispatch::call_tensor(id, a, b);     \
  }
KILN_BINARY_WRAPPER(eq, "eq", Tensor)
KILN_BINARY_WRAPPER(eq, "eq.Scalar", Scalar)
KILN_BINARY_WRAPPER(ne, "ne", Tensor)
KILN_BINARY_WRAPPER(ne, "ne.Scalar", Scalar)
KILN_BINARY_WRAPPER(lt, "lt", Tensor)
KILN_BINARY_WRAPPER(lt, "lt.Scalar", Scalar)
KILN_BINARY_WRAPPER(le, "le", Tensor)
KILN_BINARY_WRAPPER(le, "le.Scalar", Scalar)
KILN_BINARY_WRAPPER(gt, "gt", Tensor)
KILN_BINARY_WRAPPER(gt, "gt.Scalar", Scalar)
KILN_BINARY_WRAPPER(ge, "ge", Tensor)
KILN_BINARY_WRAPPER(ge, "ge.Scalar", Scalar)
KILN_BINARY_WRAPPER(logical_and, "logical_and", Tensor)
KILN_BINARY_WRAPPER(logical_or, "logical_or", Tensor)
KILN_BINARY_WRAPPER(logical_xor, "logical_xor", Tensor)

Tensor Tensor::eq(const Tensor& other) const { return kiln::eq(*this, other); }
Tensor Tensor::eq(const Scalar& other) const { return kiln::eq(*this, other); }
Tensor Tensor::ne(const Tensor& other) const { return kiln::ne(*this, other); }
Tensor Tensor::ne(const Scalar& other) const { return kiln::ne(*this, other); }
Tensor Tensor::lt(const Tensor& other) const { return kiln::lt(*this, other); }
Tensor Tensor::lt(const Scalar& other) const { return kiln::lt(*this, other); }
Tensor Tensor::le(const Tensor& other) const { return kiln::le(*this, other); }
Tensor Tensor::le(const Scalar& other) const { return kiln::le(*this, other); }
Tensor Tensor::gt(const Tensor& other) const { return kiln::gt(*this, other); }
Tensor Tensor::gt(const Scalar& other) const { return kiln::gt(*this, other); }
Tensor Tensor::ge(const Tensor& other) const { return kiln::ge(*this, other); }
Tensor Tensor::ge(const Scalar& other) const { return kiln::ge(*this, other); }

}  // namespace kiln
