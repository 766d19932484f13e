// NodeRewriter: replaces one call by calls of other ops; what a decomposition (src/lower/decomp,
// where it is called NodeRewriter) and functionalization write against. It reads the arguments
// of the node being rewritten (schema defaults filled in) and emits calls right before that node,
// in the node's grad mode, with output metas computed by the ops' own meta functions (symbolic
// sizes included; Note [Symbolic meta inference] in src/graph/meta_inference.cpp). A decomposition
// is ordinary C++ over graph values: `b.div(e, b.sum(e, {dim}, true))`.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "src/graph/graph.h"

namespace kiln::graph {

class NodeRewriter {
 public:
  NodeRewriter(Graph& g, Node& node);
  NodeRewriter(const NodeRewriter&) = delete;
  NodeRewriter& operator=(const NodeRewriter&) = delete;

  // ---- the node being decomposed ----
  const Node& node() const { return node_; }
  std::string_view op_name() const { return node_.op_def().name; }
  // Argument i as a tensor value; nullptr for None (an absent optional tensor).
  Value* input(size_t i) const;
  // Argument i as a constant, or the schema's default when the node omits it.
  IValue constant(size_t i) const;
  const TensorMeta& output_meta(size_t i = 0) const;
  // Argument i as it is (value, list or constant), or the schema's default: to pass it on.
  Arg arg(size_t i) const;

  // ---- emitting calls ----
  std::vector<Value*> call(std::string_view op, std::vector<Arg> args);
  Value* call1(std::string_view op, std::vector<Arg> args);

  Value* unary(std::string_view op, Value* x) { return call1(op, {V(x)}); }
  // `op` with a tensor, or op.Scalar (pow.Tensor_Scalar) with a Scalar operand.
  Value* binary(std::string_view op, Value* a, Value* b) { return call1(op, {V(a), V(b)}); }
  Value* binary(std::string_view op, Value* a, const Scalar& b);

  Value* add(Value* a, Value* b) { return binary("add", a, b); }
  Value* add(Value* a, const Scalar& b) { return binary("add", a, b); }
  Value* sub(Value* a, Value* b) { return binary("sub", a, b); }
  Value* sub(Value* a, const Scalar& b) { return binary("sub", a, b); }
  Value* mul(Value* a, Value* b) { return binary("mul", a, b); }
  Value* mul(Value* a, const Scalar& b) { return binary("mul", a, b); }
  Value* div(Value* a, Value* b) { return binary("div", a, b); }
  Value* div(Value* a, const Scalar& b) { return binary("div", a, b); }
  Value* neg(Value* x) { return unary("neg", x); }
  Value* exp(Value* x) { return unary("exp", x); }
  Value* log(Value* x) { return unary("log", x); }
  Value* abs(Value* x) { return unary("abs", x); }
  Value* rsqrt(Value* x) { return unary("rsqrt", x); }
  Value* sqrt(Value* x) { return unary("sqrt", x); }

  Value* where(Value* cond, Value* a, Value* b);
  Value* where(Value* cond, const Scalar& a, Value* b);
  Value* where(Value* cond, Value* a, const Scalar& b);
  Value* clamp(Value* x, std::optional<Scalar> lo, std::optional<Scalar> hi);

  Value* sum(Value* x, const DimVector& dims, bool keepdim,
             std::optional<ScalarType> dtype = std::nullopt);
  Value* amax(Value* x, const DimVector& dims, bool keepdim);
  Value* amin(Value* x, const DimVector& dims, bool keepdim);
  // The number of elements `x` has along `dims` (every dim when empty) as a Scalar when it is
  // concrete, else as a 0-dim float64 tensor (Note [Symbolic element counts]).
  struct Count {
    std::optional<int64_t> value;
    Value* tensor = nullptr;
  };
  Count count(Value* x, const DimVector& dims);
  // x / count (count's constant or tensor form).
  Value* div(Value* x, const Count& n);

  // A copy of x converted to `dtype`; x itself when it already has that dtype.
  Value* to(Value* x, ScalarType dtype);
  // r in the dtype of the node's output i (computations run in opmath_dtype).
  Value* as_output(Value* r, size_t i = 0) { return to(r, output_meta(i).dtype); }
  // Always a new tensor (never x itself): `_to_copy`.
  Value* copy_as(Value* x, ScalarType dtype);
  Value* full(const SymDimVector& sizes, const Scalar& value, ScalarType dtype);
  Value* view(Value* x, const SymDimVector& sizes);
  // A view of x with `sizes`, through a contiguous copy when x's strides do not allow a view.
  Value* reshape(Value* x, const SymDimVector& sizes);
  Value* unsqueeze(Value* x, int64_t dim) { return call1("unsqueeze", {V(x), C(IValue(dim))}); }
  Value* squeeze(Value* x, int64_t dim) { return call1("squeeze.dim", {V(x), C(IValue(dim))}); }
  // Writes src into dst (an in-place copy_, kept in program order).
  // copy_(dst, src) at the node's place. Reads of dst after the node (the graph's outputs
  // included) read the copy's result instead: the node wrote dst's memory, and a read after it
  // sees the new values. (An in-place op's own result is rebound by the tracer; a schema
  // mutation's argument, batch_norm's running statistics, is not: Note [Functionalization].)
  Value* copy_into(Value* dst, Value* src);

  static Arg V(Value* v) { return Arg::value(v); }
  static Arg C(IValue c) { return Arg::constant(std::move(c)); }
  static Arg None() { return Arg::constant(IValue()); }

  // Every node this builder emitted, in order.
  const std::vector<Node*>& emitted() const { return emitted_; }

 private:
  bool requires_grad_for(const std::vector<Arg>& args) const;

  Graph& g_;
  Node& node_;
  std::vector<Node*> emitted_;
};

// float32 for the reduced float types (float16, bfloat16), the dtype itself otherwise: the dtype
// in which decompositions of normalizations and reductions compute, as the eager kernels do
// (opmath), so rounding happens once at the end.
ScalarType opmath_dtype(ScalarType t);
// Dims [begin, end).
DimVector dim_range(int64_t begin, int64_t end);

}  // namespace kiln::graph
