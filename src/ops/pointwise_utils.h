// Shared by the pointwise op families (unary, binary, ternary).
//
// Note [Pointwise dtype handling]
// A pointwise op computes in one dtype: the result_type of its operands (see promotion.h), or a
// fixed dtype for ops whose result is always floating (sin of an int tensor computes in the
// default float dtype, as PyTorch does). Meta decides that dtype and the broadcast output
// shape; the CPU kernel casts any operand whose dtype differs to the compute dtype (a temporary
// copy, only for mixed-dtype calls) and then runs a single-dtype TensorIter loop. Comparisons
// compute in the promoted dtype and write bool. Scalars are wrapped into 0-dim tensors (marked as
// wrapped numbers) so they broadcast like any operand but promote as Scalars.
#pragma once

#include <initializer_list>

#include "src/ops/registry.h"

namespace kiln {

// The broadcast shape of all defined tensors in `ts` (ShapeError naming `op` on mismatch),
// symbolic when any of them is (Note [Broadcasting symbolic sizes] in src/core/shape.cpp).
inline SymDimVector broadcast_all(std::string_view op, std::initializer_list<const Tensor*> ts) {
  SymDimVector shape;
  bool first = true;
  for (const Tensor* t : ts) {
    if (t == nullptr || !t->defined()) continue;
    shape = first ? SymDimVector(t->sym_sizes().begin(), t->sym_sizes().end())
                  : sym_broadcast_shapes(op, shape, t->sym_sizes());
    first = false;
  }
  return shape;
}

// `t` in dtype `dtype` (itself when it already is).
inline Tensor cast_to(const Tensor& t, ScalarType dtype) {
  return t.dtype() == dtype ? t : t.to(dtype);
}

}  // namespace kiln
