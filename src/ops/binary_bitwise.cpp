// Bitwise ops (and, or, xor on integers and bool) and shifts (integers only), with Scalar
// forms. See Note [Shifts] in src/numerics/scalar_ops.inc.
#include "kiln/ops/binary.h"
#include "src/ops/binary_common.h"

namespace kiln {
namespace {

using cpu::BinaryOp;
using namespace binary;

template <BinaryOp Op>
void add_bitwise(OpRegistry& r, const char* name, const char* scalar_name, DTypeSet dtypes) {
  for (const char* n : {name, scalar_name}) {
    r.add({.name = n,
           .schema = fmt::format("{}(Tensor self, {} other) -> Tensor", n,
                                 n == name ? "Tensor" : "Scalar"),
           .family = "binary",
           .meta = meta_binary<Op>,
           .cpu = cpu_binary<Op>,
           .dtypes = dtypes,
           .tags = kTagPointwise | kTagNondifferentiable});
  }
}

}  // namespace

void register_binary_bitwise_ops(OpRegistry& r) {
  add_bitwise<BinaryOp::BitwiseAnd>(r, "bitwise_and", "bitwise_and.Scalar",
                                    dtypes::kIntegralAndBool);
  add_bitwise<BinaryOp::BitwiseOr>(r, "bitwise_or", "bitwise_or.Scalar", dtypes::kIntegralAndBool);
  add_bitwise<BinaryOp::BitwiseXor>(r, "bitwise_xor", "bitwise_xor.Scalar",
                                    dtypes::kIntegralAndBool);
  add_bitwise<BinaryOp::LeftShift>(r, "bitwise_left_shift", "bitwise_left_shift.Tensor_Scalar",
                                   dtypes::kIntegral);
  add_bitwise<BinaryOp::RightShift>(r, "bitwise_right_shift", "bitwise_right_shift.Tensor_Scalar",
                                    dtypes::kIntegral);
}

#define KILN_BINARY_WRAPPER(fn, name, OtherT)   \
  Tensor fn(const Tensor& a, const OtherT& b) { \
    static const OpId id = op_id(name);         \
    return dispatch::call_tensor(id, a, b);     \
  }
KILN_BINARY_WRAPPER(bitwise_and, "bitwise_and", Tensor)
KILN_BINARY_WRAPPER(bitwise_and, "bitwise_and.Scalar", Scalar)
KILN_BINARY_WRAPPER(bitwise_or, "bitwise_or", Tensor)
KILN_BINARY_WRAPPER(bitwise_or, "bitwise_or.Scalar", Scalar)
KILN_BINARY_WRAPPER(bitwise_xor, "bitwise_xor", Tensor)
KILN_BINARY_WRAPPER(bitwise_xor, "bitwise_xor.Scalar", Scalar)
KILN_BINARY_WRAPPER(bitwise_left_shift, "bitwise_left_shift", Tensor)
KILN_BINARY_WRAPPER(bitwise_left_shift, "bitwise_left_shift.Tensor_Scalar", Scalar)
KILN_BINARY_WRAPPER(bitwise_right_shift, "bitwise_right_shift", Tensor)
KILN_BINARY_WRAPPER(bitwise_right_shift, "bitwise_right_shift.Tensor_Scalar", Scalar)

}  // namespace kiln
