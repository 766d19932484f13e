// OpBackward: the backward node the autograd handler records for one call of a table op. It keeps
// what the op's formula declared it needs (Note [Derivative formulas]) and runs the formula.
#pragma once

#include "src/autograd/derivatives.h"

namespace kiln::autograd {

class OpBackward final : public Node {
 public:
  OpBackward(const OpDef& op, const DerivativeDef& def) : op_(op), def_(def) {}

  std::string name() const override;
  TensorList apply(TensorList&& grads) override;
  void release_variables() override;

  const OpDef& op() const { return op_; }
  const DerivativeDef& def() const { return def_; }

 private:
  friend class GradContext;
  friend void record(const OpDef&, const DerivativeDef&, Stack&, Stack&, DispatchKeySet);

  const OpDef& op_;
  const DerivativeDef& def_;
  Stack args_;  // non-tensor arguments; tensor slots are None
  // Per argument: metadata of its tensor (one entry) or of its list elements.
  std::vector<std::vector<ArgMeta>> arg_meta_;
  std::vector<std::vector<SavedVariable>> saved_args_;
  std::vector<SavedVariable> saved_outputs_;
};

// Runs `op` below the Autograd key and records an OpBackward for it (the Autograd key's handler).
void record(const OpDef& op, const DerivativeDef& def, Stack& args, Stack& outputs,
            DispatchKeySet keys);

// "mul" -> "MulBackward", "max_pool2d_with_indices" -> "MaxPool2dWithIndicesBackward".
std::string backward_name(std::string_view op_name);

}  // namespace kiln::autograd
