// OpCall: one invocation of an op as meta functions and kernels see it: the boxed arguments, the
// outputs being built, and the device the backend runs on.
#pragma once

#include "src/dispatch/op_def.h"

namespace kiln {

class OpCall {
 public:
  OpCall(const OpDef& op, Stack& args, Stack& outputs, Device device)
      : op_(op), args_(args), outputs_(outputs), device_(device) {}

  const OpDef& op() const { return op_; }
  std::string_view name() const { return op_.name; }
  Device device() const { return device_; }
  size_t num_args() const { return args_.size(); }
  const IValue& arg(size_t i) const;
  Stack& args() { return args_; }

  const Tensor& tensor(size_t i) const { return arg(i).tensor(); }
  // An optional Tensor argument: undefined Tensor when None.
  Tensor optional_tensor(size_t i) const;
  // int_arg and ints guard symbolic values; sym_int_arg and sym_ints keep them (Note [Boxed
  // SymInts]).
  int64_t int_arg(size_t i) const { return arg(i).to_int(); }
  SymInt sym_int_arg(size_t i) const { return arg(i).to_sym_int(); }
  double double_arg(size_t i) const { return arg(i).to_double(); }
  bool bool_arg(size_t i) const { return arg(i).to_bool(); }
  Scalar scalar(size_t i) const { return arg(i).scalar(); }
  IntArrayRef ints(size_t i) const { return arg(i).int_list(); }
  SymIntArrayRef sym_ints(size_t i) const { return arg(i).sym_int_list(); }
  const std::vector<Tensor>& tensors(size_t i) const { return arg(i).tensor_list(); }

  // Creates output i as a new contiguous tensor on this call's device (sizes may be symbolic on
  // Meta; an IntArrayRef or DimVector passes as is, Note [SymInt representation]).
  const Tensor& set_output(size_t i, ScalarType dtype, SymIntArrayRef sizes);
  // Sets output i to an existing tensor (a view, or the mutated input of an in-place op).
  const Tensor& set_output(size_t i, Tensor t);
  void set_output_value(size_t i, IValue v);
  const Tensor& output(size_t i) const { return outputs_[i].tensor(); }
  size_t num_outputs() const { return outputs_.size(); }
  Stack& outputs() { return outputs_; }

 private:
  const OpDef& op_;
  Stack& args_;
  Stack& outputs_;
  Device device_;
};

}  // namespace kiln
