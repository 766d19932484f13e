// Helpers shared by the nn op files (nn_norm.cpp, nn_embedding.cpp, nn_attention.cpp,
// nn_loss.cpp, nn_backward.cpp).
#pragma once

#include <string_view>

#include "src/kernels/cpu/nn_kernels.h"
#include "src/ops/registry.h"

namespace kiln {

// One registration function per nn op file; register_nn_ops (nn.cpp) calls them.
void register_nn_norm_ops(OpRegistry& r);
void register_nn_embedding_ops(OpRegistry& r);
void register_nn_attention_ops(OpRegistry& r);
void register_nn_loss_ops(OpRegistry& r);
void register_nn_backward_ops(OpRegistry& r);

// Boxes an optional tensor argument: None when undefined.
inline IValue opt_tensor(const Tensor& t) { return t.defined() ? IValue(t) : IValue(); }

// An optional per-feature parameter (weight, bias, running stat) must be floating and have
// `expected` shape; `what` names it in the message.
inline void check_param(std::string_view op, std::string_view what, const Tensor& p,
                        IntArrayRef expected, IntArrayRef input_shape) {
  if (!p.defined()) return;
  KILN_CHECK(p.sizes() == expected, ShapeError,
             "{}: {} must have shape {} for an input of shape {}, but it has shape {}", op, what,
             shape_str(expected), shape_str(input_shape), shape_str(p.sizes()));
  KILN_CHECK(is_floating(p.dtype()), DTypeError,
             "{}: {} must be a floating tensor, got dtype {}; convert it with .to(kFloat32)", op,
             what, dtype_name(p.dtype()));
}

// "mean" | "sum" | "none" (ValueError naming `op` otherwise).
inline cpu::Reduction parse_reduction(std::string_view op, std::string_view r) {
  if (r == "mean") return cpu::Reduction::Mean;
  if (r == "sum") return cpu::Reduction::Sum;
  if (r == "none") return cpu::Reduction::None;
  throw ValueError(
      fmt::format("{}: reduction must be \"mean\", \"sum\" or \"none\", got \"{}\"", op, r));
}

// input (C) | (N, C) | (N, C, d...) as outer x C x inner, and the shape of one loss per sample.
struct ClassLayout {
  int64_t outer = 1, C = 0, inner = 1;
  DimVector sample_shape;
};

inline ClassLayout class_layout(std::string_view op, const Tensor& input) {
  KILN_CHECK(input.dim() >= 1, ShapeError,
             "{}: input must have shape (C), (N, C) or (N, C, d1, ...), got a 0-dim tensor", op);
  ClassLayout l;
  if (input.dim() == 1) {
    l.C = input.size(0);
    return l;
  }
  l.outer = input.size(0);
  l.C = input.size(1);
  l.sample_shape.push_back(input.size(0));
  for (int64_t d = 2; d < input.dim(); ++d) {
    l.inner *= input.size(d);
    l.sample_shape.push_back(input.size(d));
  }
  return l;
}

inline void check_class_weight(std::string_view op, const Tensor& weight, int64_t C,
                               const Tensor& input) {
  check_param(op, "weight (one per class)", weight, {C}, input.sizes());
}

inline void check_index_target(std::string_view op, const Tensor& target, const ClassLayout& l,
                               const Tensor& input) {
  KILN_CHECK(is_integral(target.dtype()), DTypeError,
             "{}: class-index target must have an integer dtype, got {} (shape {})", op,
             dtype_name(target.dtype()), shape_str(target.sizes()));
  KILN_CHECK(target.sizes() == IntArrayRef(l.sample_shape), ShapeError,
             "{}: target of class indices must have shape {} for input of shape {}, got shape {}",
             op, shape_str(l.sample_shape), shape_str(input.sizes()), shape_str(target.sizes()));
}

// The three outputs of a native_* op as a tuple.
inline std::tuple<Tensor, Tensor, Tensor> three_tensors(Stack out) {
  return {std::move(out[0].tensor()), std::move(out[1].tensor()), std::move(out[2].tensor())};
}

}  // namespace kiln
