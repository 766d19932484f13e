#include "src/lower/handlers/dependency_handler.h"

#include <algorithm>

namespace kiln::lower {

Val DependencyHandler::load(BufferRef buffer, sym::ExprPtr index) {
  MemoryAccess a{std::string(buffer.name), index, buffer.dtype};
  if (std::find(reads_.begin(), reads_.end(), a) == reads_.end()) reads_.push_back(std::move(a));
  return make(buffer.dtype);
}

void DependencyHandler::store(BufferRef buffer, sym::ExprPtr index, Val) {
  writes_.push_back({std::string(buffer.name), index, buffer.dtype});
}

Val DependencyHandler::index_expr(sym::ExprPtr, ScalarType dtype) {
  ++op_count_;
  return make(dtype);
}

Val DependencyHandler::constant_int(int64_t, ScalarType dtype) { return make(dtype); }
Val DependencyHandler::constant_float(double, ScalarType dtype) { return make(dtype); }

Val DependencyHandler::to_dtype(Val, ScalarType dtype) {
  ++op_count_;
  return make(dtype);
}

// The cost class comes from the primitive's row (Note [The primitive table]).
Val DependencyHandler::unary(UnaryOp op, Val x) {
  ++op_count_;
  if (primitive(op).cost == Cost::expensive) ++expensive_;
  return make(produces_bool(op) ? kBool : x.dtype);
}

Val DependencyHandler::binary(BinaryOp op, Val a, Val) {
  ++op_count_;
  if (primitive(op).cost == Cost::expensive) ++expensive_;
  return make(produces_bool(op) ? kBool : a.dtype);
}

Val DependencyHandler::where(Val, Val a, Val) {
  ++op_count_;
  return make(a.dtype);
}

Val DependencyHandler::reduction(ReductionType type, Val value) {
  ++op_count_;
  reductions_.push_back(type);
  return make(reduction_result_dtype(type, value.dtype));
}

void DependencyHandler::store_reduction(BufferRef buffer, sym::ExprPtr index, Val) {
  writes_.push_back({std::string(buffer.name), index, buffer.dtype});
}

}  // namespace kiln::lower
