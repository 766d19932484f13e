#include "src/lower/ops_handler.h"

#include "kiln/error.h"

namespace kiln::lower {
namespace {

thread_local OpsHandler* current_handler = nullptr;

}  // namespace

std::string_view name_of(ReductionType r) {
  switch (r) {
    case ReductionType::sum:
      return "sum";
    case ReductionType::prod:
      return "prod";
    case ReductionType::max:
      return "max";
    case ReductionType::min:
      return "min";
    case ReductionType::argmax:
      return "argmax";
    case ReductionType::argmin:
      return "argmin";
    case ReductionType::any:
      return "any";
    case ReductionType::all:
      return "all";
    case ReductionType::welford_mean:
      return "welford_mean";
    case ReductionType::welford_m2:
      return "welford_m2";
  }
  return "?";
}

ScalarType reduction_result_dtype(ReductionType r, ScalarType value_dtype) {
  switch (r) {
    case ReductionType::argmax:
    case ReductionType::argmin:
      return kInt64;
    case ReductionType::any:
    case ReductionType::all:
      return kBool;
    default:
      return value_dtype;
  }
}

OpsHandler& ops() {
  KILN_CHECK(current_handler != nullptr, ValueError,
             "lower: a loop body ran with no ops handler installed (use lower::HandlerScope)");
  return *current_handler;
}

HandlerScope::HandlerScope(OpsHandler& handler) : previous_(current_handler) {
  current_handler = &handler;
}
HandlerScope::~HandlerScope() { current_handler = previous_; }

Val load(BufferRef b, sym::ExprPtr index) { return ops().load(b, index); }

Val constant(double v, ScalarType dtype) {
  if (is_floating(dtype)) return ops().constant_float(v, dtype);
  if (dtype == kBool) return ops().constant_int(v != 0 ? 1 : 0, dtype);
  return ops().constant_int(static_cast<int64_t>(v), dtype);
}

Val cast(Val x, ScalarType dtype) { return x.dtype == dtype ? x : ops().to_dtype(x, dtype); }
Val unary(UnaryOp op, Val x) { return ops().unary(op, x); }
Val binary(BinaryOp op, Val a, Val b) { return ops().binary(op, a, b); }
Val where(Val cond, Val a, Val b) { return ops().where(cond, a, b); }

}  // namespace kiln::lower
