// Helpers shared by the lowerings of src/lower/lowerings/*.cpp.
#pragma once

#include <vector>

#include "src/graph/graph.h"
#include "src/lower/graph_lowering.h"

namespace kiln::lower {

inline ExprPtr to_expr(SymInt s) { return s.is_symbolic() ? s.expr() : sym::integer(s.raw()); }
std::vector<ExprPtr> to_exprs(const SymDimVector& sizes);
std::vector<ExprPtr> to_exprs(SymIntArrayRef sizes);

// The box of argument `i` (a Value argument).
const TensorBox& arg_box(GraphLowering& l, const graph::Node& node, size_t i);
const IValue& arg_constant(const graph::Node& node, size_t i);
// Argument i is present (not a None constant and within the node's arguments).
bool has_arg(const graph::Node& node, size_t i);
const graph::TensorMeta& out_meta(const graph::Node& node, size_t i = 0);

// The index into a dim of size `from` that index `i` of an output dim of size `to` reads: 0 when
// the dim broadcasts, `i` when the sizes match, `i mod from` when only a guard decided which.
ExprPtr broadcast_index(ExprPtr from, ExprPtr to, ExprPtr i);
// A loader of `box` broadcast to `sizes` (right-aligned; size-1 dims read index 0).
Loader broadcast_loader(const TensorBox& box, const std::vector<ExprPtr>& sizes);
// A new unrealized pointwise value.
TensorBox make_pointwise(ScalarType dtype, std::vector<ExprPtr> ranges, Loader fn);

// The dtype loop bodies compute a value of `dtype` in (float16/bfloat16 compute in float32).
inline ScalarType compute_type(ScalarType dtype) {
  return dtype == kFloat16 || dtype == kBFloat16 ? kFloat32 : dtype;
}
// A Scalar as a constant of `dtype`.
Val scalar_constant(const Scalar& s, ScalarType dtype);
// result_type of the node's first two operands (tensor or Scalar), as the eager kernels use it
// for comparisons.
ScalarType operands_result_type(const graph::Node& node, std::string_view op);

// Normalizes a possibly negative dim against `ndim` (IndexError naming the op otherwise).
int64_t wrap_dim(int64_t dim, int64_t ndim, std::string_view op);

}  // namespace kiln::lower
