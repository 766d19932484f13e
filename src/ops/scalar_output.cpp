// _local_scalar_dense: the value of a one-element integer tensor, as a graph node that defines an
// unbacked symbol; sym_scalar_tensor: a symbolic int as a tensor.
//
// Note [Scalar outputs in a graph]
// Under kiln::compile with capture_scalar_outputs, `x.item<SymInt>()` does not end the graph to
// read the value (a graph break): it returns a fresh unbacked symbol u0 whose value is known only
// when the graph runs, and records `_local_scalar_dense(x, u0)`. The node's output is the value as
// a 0-dim int64 tensor; its second argument names the symbol the node defines. Whoever runs the
// graph binds u0 from the output right after the node runs (the interpreter in
// src/graph/interpreter.cpp, a kiln::check after the segment in src/capture/segment.cpp), so
// later nodes whose sizes or arguments use u0 (arange(u0), x.narrow(0, 0, u0)) get its value.
// Nothing but the symbol may read the node, so it is tagged kTagDefinesSymbol: dead-code
// elimination keeps it. The kernel ignores the symbol argument (eagerly it is the value itself).
//
// The value range that kiln::check and check_is_size gave the symbol while tracing (`lower`,
// `upper`: empty or one bound each; `checks`: the facts and where they were asserted) is checked
// right where the symbol is bound, before any later node uses the value: eagerly the check()
// raises before the code that relies on it runs, and so does the compiled graph (a narrow() by a
// length the check ruled out would otherwise fail first, with a less useful message).
#include "src/ops/registry.h"

namespace kiln {
namespace {

void check_one_integer_element(OpCall& call) {
  const Tensor& self = call.tensor(0);
  KILN_CHECK(is_integral_or_bool(self.dtype()), DTypeError,
             "_local_scalar_dense: a {} tensor has no integer value; item<SymInt>() reads integer "
             "and bool tensors (use item<double>() for a floating value)",
             dtype_name(self.dtype()));
  KILN_CHECK(self.sym_numel() == 1, ValueError,
             "_local_scalar_dense: a tensor with {} elements (shape {}) cannot be converted to a "
             "scalar; only one-element tensors can",
             self.sym_numel(), shape_str(self.sym_sizes()));
}

void meta_local_scalar_dense(OpCall& call) {
  check_one_integer_element(call);
  call.set_output(0, kInt64, SymDimVector{});
}

void cpu_local_scalar_dense(OpCall& call) {
  check_one_integer_element(call);
  const Tensor& out = call.set_output(0, kInt64, SymDimVector{});
  const Tensor& self = call.tensor(0);
  if (self.dtype() == kUInt64) {
    const uint64_t value = self.item<uint64_t>();
    KILN_CHECK(value <= uint64_t{INT64_MAX}, ValueError,
               "_local_scalar_dense: the uint64 value {} does not fit a SymInt (int64); read it "
               "with item<uint64_t>() instead",
               value);
  }
  *out.data_ptr<int64_t>() = self.item<int64_t>();
}

// sym_scalar_tensor(value, device): the other direction, a symbolic int as a 0-dim int64 tensor
// whose value the graph takes from its symbols when it runs (Note [A SymBool predicate] in
// src/ops/control_flow.cpp). Eagerly, and in a kernel, the value is a plain int.
void meta_sym_scalar_tensor(OpCall& call) { call.set_output(0, kInt64, SymDimVector{}); }

void cpu_sym_scalar_tensor(OpCall& call) {
  *call.set_output(0, kInt64, SymDimVector{}).data_ptr<int64_t>() = call.int_arg(0);
}

}  // namespace

void register_scalar_output_ops(OpRegistry& r) {
  r.add({.name = "sym_scalar_tensor",
         .schema = "sym_scalar_tensor(SymInt value, Device device) -> Tensor",
         .family = "scalar_output",
         .meta = meta_sym_scalar_tensor,
         .cpu = cpu_sym_scalar_tensor,
         .tags = kTagFactory | kTagNondifferentiable,
         .device_arg = 1});
  r.add({.name = "_local_scalar_dense",
         .schema = "_local_scalar_dense(Tensor self, int symbol, int[] lower=[], int[] upper=[], "
                   "str checks='') -> Tensor",
         .family = "scalar_output",
         .meta = meta_local_scalar_dense,
         .cpu = cpu_local_scalar_dense,
         .dtypes = dtypes::kIntegralAndBool,
         .tags = kTagDefinesSymbol | kTagNondifferentiable});
}

}  // namespace kiln
