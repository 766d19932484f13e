// Shared by the binary op files (binary_arith.cpp, binary_compare.cpp, binary_bitwise.cpp):
// the dtype rules, the meta functions and the CPU entry points of the binary op entries.
// See Note [Pointwise dtype handling] in pointwise_utils.h.
//
// Every binary op has a Tensor-Tensor entry ("add") and, where PyTorch has one, a Scalar entry
// ("add.Scalar"). Argument 1 is then a Scalar IValue; it promotes as a Scalar (a uint8 tensor
// + 1000 stays uint8, an int tensor * 2.5 is float32) and reaches the kernel without being
// wrapped into a tensor.
#pragma once

#include "src/kernels/cpu/binary.h"
#include "src/ops/pointwise_utils.h"

namespace kiln::binary {

// Argument i as a kernel operand: a tensor or a Scalar.
inline cpu::Operand operand(OpCall& call, size_t i) {
  const IValue& v = call.arg(i);
  if (v.is_tensor()) return cpu::Operand(v.tensor());
  return cpu::Operand(v.scalar());
}

// Arguments with schema defaults may be left off a boxed call.
inline Scalar alpha_arg(OpCall& call) {
  return call.num_args() > 2 && !call.arg(2).is_none() ? call.scalar(2) : Scalar(1);
}
inline std::string_view rounding_mode_arg(OpCall& call) {
  return call.num_args() > 2 && !call.arg(2).is_none() ? std::string_view(call.arg(2).string())
                                                       : std::string_view();
}

// result_type(a, b), with promotion errors naming the op.
ScalarType promoted_dtype(std::string_view name, const Tensor& a, const cpu::Operand& b);

// The dtype `op` computes in for operands a and b (DTypeError when the op is not defined for
// them: bitwise ops on floats, shifts on bool, sub with bool, ...).
ScalarType compute_dtype(std::string_view name, cpu::BinaryOp op, const Tensor& a,
                         const cpu::Operand& b);

// The broadcast shape of a and b (ShapeError naming the op); symbolic when either is.
SymDimVector result_shape(std::string_view name, const Tensor& a, const cpu::Operand& b);

// "" -> Div, "floor" -> DivFloor, "trunc" -> DivTrunc; ValueError otherwise.
cpu::BinaryOp div_op(std::string_view name, std::string_view rounding_mode);

// ValueError when `other` is another view overlapping self's memory (PyTorch's
// assert_no_partial_overlap).
void check_no_partial_overlap(std::string_view name, const Tensor& self, const Tensor& other);

// Checks an in-place op may write a `compute`-dtype result of shape broadcast(self, other) into
// self: castable dtype, self's own shape, and no element of self written twice.
void check_inplace(std::string_view name, const Tensor& self, const cpu::Operand& other,
                   ScalarType compute);

// Argument layout: (self, other[, alpha or rounding_mode]).
template <cpu::BinaryOp Op>
void meta_binary(OpCall& call) {
  const Tensor& a = call.tensor(0);
  const cpu::Operand b = operand(call, 1);
  const ScalarType c = compute_dtype(call.name(), Op, a, b);
  if (Op == cpu::BinaryOp::Add || Op == cpu::BinaryOp::Sub) {
    const Scalar alpha = alpha_arg(call);
    KILN_CHECK(!(is_integral(c) && alpha.is_floating()), ValueError,
               "{}: for integer inputs alpha must be an integer, got {}", call.name(), alpha.str());
    KILN_CHECK(!(alpha.is_bool() && c != kBool), ValueError,
               "{}: a bool alpha is only supported for bool results (result dtype is {})",
               call.name(), dtype_name(c));
  }
  // The kernel's check, here too: a compiled graph never runs the eager kernel's check.
  if (Op == cpu::BinaryOp::Pow && b.is_scalar())
    KILN_CHECK(
        !(is_integral(c) && b.scalar().kind() == Scalar::Kind::Int && b.scalar().to_int64() < 0),
        ValueError,
        "{}: integers to negative integer powers are not allowed (exponent {}); use a "
        "floating base, e.g. t.to(kiln::kFloat32)",
        call.name(), b.scalar().str());
  if (b.is_scalar()) {
    call.set_output(0, c, a.sym_sizes());
  } else {
    call.set_output(0, c, result_shape(call.name(), a, b));
  }
}

// Out-of-place: the output dtype is the compute dtype.
template <cpu::BinaryOp Op>
void cpu_binary(OpCall& call) {
  const Tensor& out = call.output(0);
  const bool has_alpha = Op == cpu::BinaryOp::Add || Op == cpu::BinaryOp::Sub;
  cpu::binary_kernel(call.name(), Op, out, call.tensor(0), operand(call, 1), out.dtype(),
                     has_alpha ? alpha_arg(call) : Scalar(1));
}

template <cpu::BinaryOp Op>
void meta_binary_(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const cpu::Operand other = operand(call, 1);
  const ScalarType c = compute_dtype(call.name(), Op, self, other);
  check_inplace(call.name(), self, other, c);
  if (Op == cpu::BinaryOp::Add || Op == cpu::BinaryOp::Sub) {
    KILN_CHECK(!(is_integral(c) && alpha_arg(call).is_floating()), ValueError,
               "{}: for integer inputs alpha must be an integer, got {}", call.name(),
               alpha_arg(call).str());
  }
  call.set_output(0, self);
}

template <cpu::BinaryOp Op>
void cpu_binary_(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const cpu::Operand other = operand(call, 1);
  const bool has_alpha = Op == cpu::BinaryOp::Add || Op == cpu::BinaryOp::Sub;
  cpu::binary_kernel(call.name(), Op, self, self, other,
                     compute_dtype(call.name(), Op, self, other),
                     has_alpha ? alpha_arg(call) : Scalar(1));
}

}  // namespace kiln::binary
