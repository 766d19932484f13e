// Dtype and shape rules shared by the binary ops; see binary_common.h.
#include "src/ops/binary_common.h"

#include <optional>

namespace kiln::binary {

using cpu::BinaryOp;

ScalarType promoted_dtype(std::string_view name, const Tensor& a, const cpu::Operand& b) {
  // The common case, same dtype on both sides, needs no rank rules: every rank group then
  // yields that dtype (a wrapped float on the left is the one exception and takes the builder).
  if (!b.is_scalar() && b.tensor().dtype() == a.dtype() && !a.impl()->is_wrapped_number())
    return a.dtype();
  try {
    ResultTypeBuilder builder(name);
    builder.add(a);
    if (b.is_scalar()) {
      builder.add(b.scalar());
    } else {
      builder.add(b.tensor());
    }
    return builder.result();
  } catch (const DTypeError& e) {
    throw DTypeError(fmt::format("{}: {}", name, e.what()));
  }
}

namespace {
bool has_bool_operand(const Tensor& a, const cpu::Operand& b) {
  if (a.dtype() == kBool) return true;
  return b.is_scalar() ? b.scalar().is_bool() : b.tensor().dtype() == kBool;
}
std::string operand_dtypes(const Tensor& a, const cpu::Operand& b) {
  return fmt::format("{} and {}", dtype_name(a.dtype()),
                     b.is_scalar() ? fmt::format("a Scalar {}", b.scalar().str())
                                   : std::string(dtype_name(b.tensor().dtype())));
}
}  // namespace

ScalarType compute_dtype(std::string_view name, BinaryOp op, const Tensor& a,
                         const cpu::Operand& b) {
  const ScalarType c = promoted_dtype(name, a, b);
  switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Mul:
    case BinaryOp::Maximum:
    case BinaryOp::Minimum:
      return c;
    case BinaryOp::Sub:
      KILN_CHECK(!has_bool_operand(a, b), DTypeError,
                 "{}: subtraction with a bool operand is not supported (operands: {}); to invert "
                 "a mask use logical_not or bitwise_not, or convert to an integer dtype",
                 name, operand_dtypes(a, b));
      return c;
    case BinaryOp::Div:
    case BinaryOp::Atan2:
    case BinaryOp::Hypot:
      // Integer inputs compute in the default float dtype, as torch.div / torch.atan2.
      return is_floating(c) ? c : kDefaultFloat;
    case BinaryOp::DivFloor:
    case BinaryOp::DivTrunc:
    case BinaryOp::Remainder:
    case BinaryOp::Fmod:
    case BinaryOp::Pow:
      KILN_CHECK(c != kBool, DTypeError,
                 "{}: not defined for bool operands ({}); convert to an integer dtype first", name,
                 operand_dtypes(a, b));
      return c;
    case BinaryOp::BitwiseAnd:
    case BinaryOp::BitwiseOr:
    case BinaryOp::BitwiseXor:
      KILN_CHECK(is_integral_or_bool(c), DTypeError,
                 "{}: bitwise operations need integer or bool operands, got {} (computing in {}); "
                 "convert floating tensors with .to(kiln::kInt64) first",
                 name, operand_dtypes(a, b), dtype_name(c));
      return c;
    case BinaryOp::LeftShift:
    case BinaryOp::RightShift:
      KILN_CHECK(is_integral(c), DTypeError,
                 "{}: shifts need integer operands, got {} (computing in {}); convert with "
                 ".to(kiln::kInt64) first",
                 name, operand_dtypes(a, b), dtype_name(c));
      return c;
  }
  return c;
}

SymDimVector result_shape(std::string_view name, const Tensor& a, const cpu::Operand& b) {
  // Equal words are equal sizes, concrete or symbolic (Note [SymInt representation]).
  if (b.is_scalar() || same_shape(a.sym_sizes(), b.tensor().sym_sizes()))
    return SymDimVector(a.sym_sizes().begin(), a.sym_sizes().end());
  if (a.impl()->has_symbolic_metadata() || b.tensor().impl()->has_symbolic_metadata())
    return sym_broadcast_shapes(name, a.sym_sizes(), b.tensor().sym_sizes());
  const DimVector shape = broadcast_shapes(name, a.sizes(), b.tensor().sizes());
  return SymDimVector(shape.begin(), shape.end());
}

BinaryOp div_op(std::string_view name, std::string_view rounding_mode) {
  if (rounding_mode.empty()) return BinaryOp::Div;
  if (rounding_mode == "floor") return BinaryOp::DivFloor;
  if (rounding_mode == "trunc") return BinaryOp::DivTrunc;
  throw ValueError(fmt::format(
      "{}: rounding_mode must be \"\" (true division), \"floor\" or \"trunc\", got \"{}\"", name,
      rounding_mode));
}

namespace {

// The storage elements [first, last] a view can touch; nullopt for an empty or symbolic view.
std::optional<std::pair<int64_t, int64_t>> element_range(const Tensor& t) {
  const SymInt offset = t.impl()->sym_offset();
  if (offset.is_symbolic()) return std::nullopt;
  int64_t first = offset.raw(), last = offset.raw();
  for (int64_t d = 0; d < t.dim(); ++d) {
    const SymInt size = t.sym_sizes()[d], stride = t.sym_strides()[d];
    if (size.is_symbolic() || stride.is_symbolic()) return std::nullopt;
    if (size.raw() == 0) return std::nullopt;
    const int64_t span = (size.raw() - 1) * stride.raw();
    (span < 0 ? first : last) += span;
  }
  return std::make_pair(first, last);
}

}  // namespace

// As PyTorch's assert_no_partial_overlap: an in-place op reading another view of self's memory
// (x.add_(x.t())) would read elements it has already written, so the result would depend on
// the kernel's loop order. The very same view (x.add_(x)) is fine: each element reads itself.
void check_no_partial_overlap(std::string_view name, const Tensor& self, const Tensor& other) {
  if (!self.defined() || !other.defined() || !self.is_alias_of(other)) return;
  if (other.element_size() != self.element_size()) return;
  const auto a = element_range(self), b = element_range(other);
  if (!a || !b || a->second < b->first || b->second < a->first) return;
  const bool same_view = same(self.impl()->sym_offset(), other.impl()->sym_offset()) &&
                         same_shape(self.sym_sizes(), other.sym_sizes()) &&
                         same_shape(self.sym_strides(), other.sym_strides());
  KILN_CHECK(same_view, ValueError,
             "{}: some elements of the input (shape {}, strides {}) and of the tensor written in "
             "place (shape {}, strides {}) refer to the same memory location, so the result "
             "would depend on the order elements are written; call .clone() on the input first",
             name, shape_str(other.sym_sizes()), shape_str(other.sym_strides()),
             shape_str(self.sym_sizes()), shape_str(self.sym_strides()));
}

void check_inplace(std::string_view name, const Tensor& self, const cpu::Operand& other,
                   ScalarType compute) {
  KILN_CHECK(can_cast(compute, self.dtype()), DTypeError,
             "{}: the result dtype {} cannot be written into self of dtype {} in place (operands: "
             "{}); use the out-of-place op, or convert self first",
             name, dtype_name(compute), dtype_name(self.dtype()), operand_dtypes(self, other));
  if (!other.is_scalar() && !same_shape(self.sym_sizes(), other.tensor().sym_sizes())) {
    const SymDimVector shape = result_shape(name, self, other);
    bool fits = shape.size() == static_cast<size_t>(self.dim());
    for (size_t d = 0; fits && d < shape.size(); ++d)
      fits = same(shape[d], self.sym_sizes()[d]) || static_cast<bool>(shape[d] == self.size(d));
    KILN_CHECK(fits, ShapeError,
               "{}: the result of shape {} does not fit self of shape {} in place (other has "
               "shape {}); use the out-of-place op",
               name, shape_str(shape), shape_str(self.sym_sizes()),
               shape_str(other.tensor().sym_sizes()));
  }
  if (!other.is_scalar()) check_no_partial_overlap(name, self, other.tensor());
  for (int64_t d = 0; d < self.dim(); ++d) {
    // A symbolic size is never 0 or 1 (0/1 specialization); a symbolic stride is never 0.
    const SymInt size = self.sym_sizes()[d], stride = self.sym_strides()[d];
    const bool shares = size.is_symbolic() ? same(stride, 0) : size.raw() > 1 && same(stride, 0);
    KILN_CHECK(!shares, ValueError,
               "{}: self of shape {} and strides {} has elements that share memory (an expanded "
               "tensor), so writing into it in place is ambiguous; call .clone() first",
               name, shape_str(self.sym_sizes()), shape_str(self.sym_strides()));
  }
}

}  // namespace kiln::binary
