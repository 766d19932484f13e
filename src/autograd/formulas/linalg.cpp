// Derivatives of matrix products and pooling (convolutions: conv.cpp). Pooling gradients run in
// dedicated backward ops (src/ops/linalg_backward.h); those have derivatives here too, written
// with the forward ops, so every order of derivative works (double backward of a pooling is the
// pooling again or a gather).
// matmul and linear are composites: autograd differentiates the mm/bmm/addmm and views they call.
#include "src/autograd/formulas/grad_utils.h"
#include "src/ops/linalg_backward.h"

namespace kiln::autograd {

void register_pool_nd_derivatives(OpRegistry& ops);  // pool_nd.cpp
void register_conv_derivatives(OpRegistry& ops);     // conv.cpp

namespace {

bool is_one(const Scalar& s) { return s.is_floating() ? s.to_double() == 1.0 : s.to_int64() == 1; }
Tensor scaled(const Tensor& t, const Scalar& s) { return is_one(s) ? t : t * s; }

// ---- matrix products ----

// Note [Gradient layout of a transposed operand]
// In `linear`, mat2 is weight.t(): a column-major view. Its gradient mat1^T g, computed row-major
// and transposed back by the view's backward, would reach the weight as a column-major [out, in]
// tensor, which accumulating into .grad() copies into row-major (a strided copy as large as the
// weight, every step). Computed as (g^T mat1)^T instead, it has mat2's own layout, and the weight's
// gradient arrives row-major: the same product, no copy.
Tensor mat2_grad(const Tensor& mat1, const Tensor& mat2, const Tensor& g) {
  bool column_major = mat2.dim() == 2;
  for (int d = 0; d < 2 && column_major; ++d)
    column_major = !mat2.sym_sizes()[d].is_symbolic() && !mat2.sym_strides()[d].is_symbolic();
  if (column_major) {
    const int64_t rows = mat2.sym_sizes()[0].raw(), cols = mat2.sym_sizes()[1].raw();
    column_major = rows > 1 && cols > 1 && mat2.sym_strides()[0].raw() == 1 &&
                   mat2.sym_strides()[1].raw() == rows;
  }
  return column_major ? g.t().mm(mat1).t() : mat1.t().mm(g);
}

void mm_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  if (ctx.needs_grad(0)) ctx.set_grad(0, g.mm(ctx.input(1).t()));
  if (ctx.needs_grad(1)) ctx.set_grad(1, mat2_grad(ctx.input(0), ctx.input(1), g));
}

void bmm_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  if (ctx.needs_grad(0)) ctx.set_grad(0, g.bmm(ctx.input(1).transpose(1, 2)));
  if (ctx.needs_grad(1)) ctx.set_grad(1, ctx.input(0).transpose(1, 2).bmm(g));
}

// addmm(self, mat1, mat2, beta, alpha); self's broadcast is summed away by the engine.
void addmm_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  const Scalar beta = ctx.scalar(3), alpha = ctx.scalar(4);
  if (ctx.needs_grad(0)) ctx.set_grad(0, scaled(g, beta));
  if (ctx.needs_grad(1)) ctx.set_grad(1, scaled(g.mm(ctx.input(2).t()), alpha));
  if (ctx.needs_grad(2)) ctx.set_grad(2, scaled(mat2_grad(ctx.input(1), ctx.input(2), g), alpha));
}

// ---- pooling ----
// The backward ops read the forward input only for its shape: it is passed detached, so a
// create_graph backward records no dependence on it (there is none: pooling gradients do not
// depend on the input's values, given the max-pool indices).

// max_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode): its backward op finds the
// argmax of each window again (max_pool2d returns no indices).
void max_pool2d_backward_formula(GradContext& ctx) {
  ctx.set_grad(0, max_pool2d_backward(ctx.grad(), ctx.input(0).detach(), ctx.ints(1), ctx.ints(2),
                                      ctx.ints(3), ctx.ints(4), ctx.bool_arg(5)));
}

// Both max-pool gradients scatter grad_output to the windows' argmax positions; their adjoint
// gathers from there. Nothing depends on self's values.
Tensor gather_at(const Tensor& grad_input, const Tensor& indices) {
  return grad_input.flatten(-2).gather(-1, indices.flatten(-2)).reshape(indices.sizes());
}

// max_pool2d_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode)
void max_pool2d_backward_backward(GradContext& ctx) {
  if (!ctx.needs_grad(0)) return;
  const Tensor indices = std::get<1>(max_pool2d_with_indices(
      ctx.input(1).detach(), ctx.ints(2), ctx.ints(3), ctx.ints(4), ctx.ints(5), ctx.bool_arg(6)));
  ctx.set_grad(0, gather_at(ctx.grad(), indices));
}

void max_pool2d_with_indices_backward_formula(GradContext& ctx) {
  ctx.set_grad(0, max_pool2d_with_indices_backward(ctx.grad(0), ctx.input(0).detach(), ctx.ints(1),
                                                   ctx.ints(2), ctx.ints(3), ctx.ints(4),
                                                   ctx.bool_arg(5), ctx.output(1)));
}

// max_pool2d_with_indices_backward(grad_output, self, ..., ceil_mode, indices)
void max_pool2d_with_indices_backward_backward(GradContext& ctx) {
  if (ctx.needs_grad(0)) ctx.set_grad(0, gather_at(ctx.grad(), ctx.input(7)));
}

// avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
void avg_pool2d_backward_formula(GradContext& ctx) {
  ctx.set_grad(0, avg_pool2d_backward(ctx.grad(), ctx.input(0).detach(), ctx.ints(1), ctx.ints(2),
                                      ctx.ints(3), ctx.bool_arg(4), ctx.bool_arg(5),
                                      ctx.arg(6).optional_int()));
}

// avg_pool2d_backward is linear in grad_output, and its adjoint is avg_pool2d itself.
void avg_pool2d_backward_backward(GradContext& ctx) {
  if (!ctx.needs_grad(0)) return;
  ctx.set_grad(0, avg_pool2d(ctx.grad(), ctx.ints(2), ctx.ints(3), ctx.ints(4), ctx.bool_arg(5),
                             ctx.bool_arg(6), ctx.arg(7).optional_int()));
}

void adaptive_avg_pool2d_backward_formula(GradContext& ctx) {
  ctx.set_grad(0, adaptive_avg_pool2d_backward(ctx.grad(), ctx.input(0).detach()));
}

void adaptive_avg_pool2d_backward_backward(GradContext& ctx) {
  if (!ctx.needs_grad(0)) return;
  const DimVector out = ctx.int_sizes(0);
  ctx.set_grad(0, adaptive_avg_pool2d(ctx.grad(), {out[out.size() - 2], out[out.size() - 1]}));
}

}  // namespace

void register_linalg_derivatives(OpRegistry& ops) {
  add_derivatives(
      ops,
      {
          {.op = "mm", .backward = mm_backward, .save_args = bits({0, 1})},
          {.op = "bmm", .backward = bmm_backward, .save_args = bits({0, 1})},
          {.op = "addmm", .backward = addmm_backward, .save_args = bits({1, 2})},
          {.op = "max_pool2d", .backward = max_pool2d_backward_formula, .save_args = bits({0})},
          {.op = "max_pool2d_backward",
           .backward = max_pool2d_backward_backward,
           .save_args = bits({1})},
          {.op = "max_pool2d_with_indices",
           .backward = max_pool2d_with_indices_backward_formula,
           .save_args = bits({0}),
           .save_outputs = bits({1})},
          {.op = "max_pool2d_with_indices_backward",
           .backward = max_pool2d_with_indices_backward_backward,
           .save_args = bits({7}),
           .nondifferentiable_args = bits({7})},
          {.op = "avg_pool2d", .backward = avg_pool2d_backward_formula, .save_args = bits({0})},
          {.op = "avg_pool2d_backward", .backward = avg_pool2d_backward_backward},
          {.op = "adaptive_avg_pool2d",
           .backward = adaptive_avg_pool2d_backward_formula,
           .save_args = bits({0})},
          {.op = "adaptive_avg_pool2d_backward", .backward = adaptive_avg_pool2d_backward_backward},
      });
  register_pool_nd_derivatives(ops);
  register_conv_derivatives(ops);
}

}  // namespace kiln::autograd
