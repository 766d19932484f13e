#include "src/dispatch/op_call.h"

#include "src/core/tensor_factory.h"

namespace kiln {

const IValue& OpCall::arg(size_t i) const {
  KILN_CHECK(i < args_.size(), ValueError, "{}: expected at least {} arguments, got {}; schema: {}",
             op_.name, i + 1, args_.size(), op_.schema);
  return args_[i];
}

Tensor OpCall::optional_tensor(size_t i) const {
  if (i >= args_.size() || args_[i].is_none()) return Tensor();
  return args_[i].tensor();
}

const Tensor& OpCall::set_output(size_t i, ScalarType dtype, SymIntArrayRef sizes) {
  return set_output(i, empty_tensor(sizes, dtype, device_));
}

const Tensor& OpCall::set_output(size_t i, Tensor t) {
  set_output_value(i, IValue(std::move(t)));
  return outputs_[i].tensor();
}

void OpCall::set_output_value(size_t i, IValue v) {
  if (i == outputs_.size()) {  // the usual case: outputs are set in order
    outputs_.emplace_back(std::move(v));
    return;
  }
  while (outputs_.size() <= i) outputs_.emplace_back();
  outputs_[i] = std::move(v);
}

}  // namespace kiln
