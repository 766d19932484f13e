// TensorIter: the loop nest behind every pointwise kernel. Given outputs and inputs, it
// broadcasts inputs to the iteration shape (stride 0 on broadcast dims), coalesces dims that are
// contiguous for every operand, and runs a 1-D inner loop over the result, in parallel above a
// size threshold. Kernels only write the inner loop (see loops.h).
//
// All operands must already have the dtype the kernel expects: ops cast mixed-dtype inputs to the
// compute dtype before building the iterator (see Note [Pointwise dtype handling] in
// src/ops/pointwise.h).
#pragma once

#include <functional>

#include "kiln/tensor.h"

namespace kiln::cpu {

// Elements below which a loop runs on one thread (starting OpenMP costs a few microseconds).
inline constexpr int64_t kParallelGrain = 32768;

class TensorIter {
 public:
  static constexpr int kMaxOperands = 8;
  // The inner loop: data[k] points at operand k's first element of the row, strides[k] is its
  // byte stride along the row, n the row length. Operands: outputs first, then inputs.
  using Loop = std::function<void(char** data, const int64_t* strides, int64_t n)>;

  // Outputs define the iteration shape (all outputs must have it); inputs must broadcast to it.
  // `op` names the op in error messages.
  TensorIter(std::string_view op, std::initializer_list<Tensor> outputs,
             std::initializer_list<Tensor> inputs);
  TensorIter(std::string_view op, std::span<const Tensor> outputs, std::span<const Tensor> inputs);

  int num_operands() const { return num_operands_; }
  int num_outputs() const { return num_outputs_; }
  int64_t numel() const { return numel_; }
  int ndim() const { return static_cast<int>(shape_.size()); }

  // Runs `loop` over every element, splitting rows across threads when numel() >= grain.
  void for_each(const Loop& loop, int64_t grain = kParallelGrain) const;
  // Runs `loop` over the elements [begin, end) in row-major order, on the calling thread.
  void serial_for_each(const Loop& loop, int64_t begin, int64_t end) const;

 private:
  void build(std::string_view op, std::span<const Tensor> outputs, std::span<const Tensor> inputs);
  void coalesce();

  int num_operands_ = 0;
  int num_outputs_ = 0;
  int64_t numel_ = 0;
  DimVector shape_;  // innermost dim first
  // byte strides, innermost dim first: strides_[k][d]
  SmallVector<int64_t, 5> strides_[kMaxOperands];
  char* base_[kMaxOperands] = {};
};

}  // namespace kiln::cpu
