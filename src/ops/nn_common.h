// Helpers shared by the nn op files (nn_norm.cpp, nn_embedding.cpp, nn_attention.cpp,
// nn_loss.cpp, nn_backward.cpp, nn_upsample.cpp, nn_pixel_shuffle.cpp).
#pragma once

#include <array>
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
void register_nn_upsample_ops(OpRegistry& r);
void register_nn_pixel_shuffle_ops(OpRegistry& r);

// Boxes an optional tensor argument: None when undefined.
inline IValue opt_tensor(const Tensor& t) { return t.defined() ? IValue(t) : IValue(); }

// An optional per-feature parameter (weight, bias, running stat) must be floating and have
// `expected` shape; `what` names it in the message. Parameters have concrete sizes in practice;
// comparing one with a symbolic input size guards (Note [Guarding a symbolic value]).
inline void check_param(std::string_view op, std::string_view what, const Tensor& p,
                        SymIntArrayRef expected, SymIntArrayRef input_shape) {
  if (!p.defined()) return;
  KILN_CHECK(shapes_equal(p.sym_sizes(), expected), ShapeError,
             "{}: {} must have shape {} for an input of shape {}, but it has shape {}", op, what,
             shape_str(expected), shape_str(input_shape), shape_str(p.sym_sizes()));
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
// SymInt so that meta functions give symbolic loss shapes; kernels pass the (then concrete)
// sizes on as int64 (expect_int).
struct ClassLayout {
  SymInt outer = 1, C = 0, inner = 1;
  SymDimVector sample_shape;
};

inline ClassLayout class_layout(std::string_view op, const Tensor& input) {
  KILN_CHECK(input.dim() >= 1, ShapeError,
             "{}: input must have shape (C), (N, C) or (N, C, d1, ...), got a 0-dim tensor", op);
  ClassLayout l;
  const SymIntArrayRef sizes = input.sym_sizes();
  if (input.dim() == 1) {
    l.C = sizes[0];
    return l;
  }
  l.outer = sizes[0];
  l.C = sizes[1];
  l.sample_shape.push_back(sizes[0]);
  for (size_t d = 2; d < sizes.size(); ++d) {
    l.inner *= sizes[d];
    l.sample_shape.push_back(sizes[d]);
  }
  return l;
}

inline void check_class_weight(std::string_view op, const Tensor& weight, SymInt C,
                               const Tensor& input) {
  check_param(op, "weight (one per class)", weight, SymIntArrayRef(&C, 1), input.sym_sizes());
}

inline void check_index_target(std::string_view op, const Tensor& target, const ClassLayout& l,
                               const Tensor& input) {
  KILN_CHECK(is_integral(target.dtype()), DTypeError,
             "{}: class-index target must have an integer dtype, got {} (shape {})", op,
             dtype_name(target.dtype()), shape_str(target.sym_sizes()));
  KILN_CHECK(shapes_equal(target.sym_sizes(), l.sample_shape), ShapeError,
             "{}: target of class indices must have shape {} for input of shape {}, got shape {}",
             op, shape_str(l.sample_shape), shape_str(input.sym_sizes()),
             shape_str(target.sym_sizes()));
}

// The three outputs of a native_* op as a tuple.
inline std::tuple<Tensor, Tensor, Tensor> three_tensors(Stack out) {
  return {std::move(out[0].tensor()), std::move(out[1].tensor()), std::move(out[2].tensor())};
}

// A backward op's output_mask argument i: three 0/1 flags, one per gradient it can return, named
// by `names` in the error ("grad_input, grad_weight, grad_bias").
inline std::array<bool, 3> read_output_mask(const OpCall& call, size_t i, std::string_view names) {
  const IntArrayRef m = call.ints(i);
  KILN_CHECK(m.size() == 3, ValueError, "{}: output_mask must hold 3 flags ({}), got {}",
             call.name(), names, shape_str(m));
  return {m[0] != 0, m[1] != 0, m[2] != 0};
}

// The output_mask argument for `m`.
inline IValue output_mask_value(std::array<bool, 3> m) {
  return std::vector<int64_t>{int64_t{m[0]}, int64_t{m[1]}, int64_t{m[2]}};
}

}  // namespace kiln
