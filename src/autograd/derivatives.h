// The derivative table: one backward formula per differentiable op (PyTorch's derivatives.yaml).
//
// Note [Derivative formulas]
// A formula is a plain function `void f(GradContext& ctx)`. It reads the gradients of the op's
// outputs (ctx.grad(i)), the tensors it declared it needs (save_args / save_outputs bit masks:
// ctx.input(i), ctx.output(i)), the op's non-tensor arguments (ctx.arg(i)) and the metadata of
// every tensor argument (ctx.sizes(i), ctx.dtype(i)); it sets the gradient of each tensor argument
// that needs one with ctx.set_grad(i, g). Formulas are written with ordinary Kiln ops, so in a
// create_graph backward they are recorded too and double backward works with no extra code; a
// formula that calls a backward-only kernel without its own derivative sets double_backward=false.
//
// The engine does the bookkeeping formulas would otherwise repeat: a gradient whose shape is a
// broadcast of the input's is summed back to the input's shape (sum_to), and a gradient of
// another floating dtype is cast to the input's dtype. So `add` can return grad as is.
//
// For an in-place op, input 0 saved means the value *before* the op (the handler clones it); an
// output saved means the value after.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "src/autograd/autograd_meta.h"
#include "src/autograd/saved_variable.h"
#include "src/dispatch/dispatcher.h"

namespace kiln::autograd {

// Note [Functional backward formulas]
// A few formulas build a gradient by writing into a fresh buffer through a view (zeros, then
// view(zeros).copy_(g)): one allocation and one copy in eager. A graph recorded from them (AOT
// autograd's joint graph, src/aot/joint_graph.cpp) would then read the buffer after a write made
// through another value, which its partitioner cannot follow. While this switch is on (the
// recorder turns it on), those formulas take their functional form instead (scatter_add into
// zeros, as for double backward).
bool functional_formulas();
class FunctionalFormulasGuard {
 public:
  FunctionalFormulasGuard();
  ~FunctionalFormulasGuard();
  FunctionalFormulasGuard(const FunctionalFormulasGuard&) = delete;
  FunctionalFormulasGuard& operator=(const FunctionalFormulasGuard&) = delete;

 private:
  bool saved_;
};

class GradContext;
using BackwardFormula = void (*)(GradContext& ctx);

struct DerivativeDef {
  std::string op;  // op table name ("mul", "add.Scalar", ...)
  BackwardFormula backward = nullptr;
  uint32_t save_args = 0;     // bit i: the formula reads tensor argument i
  uint32_t save_outputs = 0;  // bit i: the formula reads output i
  // Tensor arguments that have no derivative (an error if one requires grad).
  uint32_t nondifferentiable_args = 0;
  bool double_backward = true;
};

constexpr uint32_t bits(std::initializer_list<int> indices) {
  uint32_t b = 0;
  for (int i : indices) b |= 1u << i;
  return b;
}

// Metadata of one tensor argument (or one element of a tensor-list argument).
struct ArgMeta {
  bool defined = false;
  bool needs_grad = false;
  SymDimVector sizes;  // symbolic while AOT autograd traces a graph with symbolic sizes
  ScalarType dtype = kFloat32;
  int edge = -1;  // index into the node's next_edges, -1 when no gradient flows
};

class OpBackward;

// Integer sizes: a symbolic size is guarded to its hint (the graph specializes on it).
DimVector int_sizes(SymIntArrayRef sizes);

class GradContext {
 public:
  GradContext(OpBackward& node, TensorList& grads, TensorList& results)
      : node_(node), grads_(grads), results_(results) {}

  // Gradient flowing into output i; zeros of the output's shape when none arrived.
  Tensor grad(size_t i = 0) const;
  bool has_grad(size_t i) const { return i < grads_.size() && grads_[i].defined(); }
  // Saved tensors (see DerivativeDef::save_args / save_outputs).
  Tensor input(size_t i) const;
  std::vector<Tensor> input_list(size_t i) const;
  Tensor output(size_t i = 0) const;
  // The op's non-tensor arguments as it received them.
  const IValue& arg(size_t i) const;
  Scalar scalar(size_t i) const { return arg(i).scalar(); }
  int64_t int_arg(size_t i) const { return arg(i).to_int(); }
  double double_arg(size_t i) const { return arg(i).to_double(); }
  bool bool_arg(size_t i) const { return arg(i).to_bool(); }
  IntArrayRef ints(size_t i) const { return arg(i).int_list(); }
  const std::string& string_arg(size_t i) const { return arg(i).string(); }
  size_t num_args() const;
  // Metadata of tensor argument i, saved or not.
  const ArgMeta& meta(size_t i) const;
  SymIntArrayRef sizes(size_t i) const { return meta(i).sizes; }
  // The sizes as integers: a symbolic size is guarded to its hint (the graph specializes on it).
  DimVector int_sizes(size_t i) const;
  ScalarType dtype(size_t i) const { return meta(i).dtype; }
  bool defined(size_t i) const { return meta(i).defined; }
  const std::vector<ArgMeta>& list_meta(size_t i) const;
  // Whether tensor argument i (or element j of a list argument) needs a gradient.
  bool needs_grad(size_t i) const;
  bool needs_grad(size_t i, size_t j) const;
  // Shape and dtype of output i.
  const GradMeta& output_meta(size_t i) const;

  void set_grad(size_t i, Tensor g);
  void set_grad(size_t i, size_t j, Tensor g);

 private:
  OpBackward& node_;
  TensorList& grads_;
  TensorList& results_;
};

// The table, indexed by op id; null where an op has no formula.
const DerivativeDef* find_derivative(OpId id);
// Adds formulas (called by each family's register function in formulas/).
void add_derivatives(OpRegistry& ops, std::vector<DerivativeDef> defs);

// One function per op family, each in src/autograd/formulas/<family>.cpp.
void register_unary_derivatives(OpRegistry& ops);
void register_binary_derivatives(OpRegistry& ops);
void register_ternary_derivatives(OpRegistry& ops);
void register_reduce_derivatives(OpRegistry& ops);
void register_linalg_derivatives(OpRegistry& ops);
void register_nn_derivatives(OpRegistry& ops);
void register_shape_derivatives(OpRegistry& ops);
void register_index_derivatives(OpRegistry& ops);
void register_view_derivatives(OpRegistry& ops);
void register_copy_derivatives(OpRegistry& ops);

}  // namespace kiln::autograd
