// Helpers shared by the nn op files (nn_norm.cpp, nn_embedding.cpp, nn_attention.cpp,
// nn_loss.cpp).
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
  throw ValueError(fmt::format("{}: reduction must be \"mean\", \"sum\" or \"none\", got \"{}\"",
                               op, r));
}

// The three outputs of a native_* op as a tuple.
inline std::tuple<Tensor, Tensor, Tensor> three_tensors(Stack out) {
  return {std::move(out[0].tensor()), std::move(out[1].tensor()), std::move(out[2].tensor())};
}

}  // namespace kiln
