// Derivatives of matrix products, convolutions and pooling. Convolution and pooling gradients
// run in dedicated backward ops (src/ops/linalg_backward.h); those have derivatives here too,
// written with the forward ops, so every order of derivative works (double backward of a conv
// is convs and convolution_backward again; of a pooling, the pooling again or a gather).
// matmul and linear are composites: autograd differentiates the mm/bmm/addmm and views they call.
#include "src/autograd/formulas/grad_utils.h"
#include "src/ops/linalg_backward.h"

namespace kiln::autograd {
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

// ---- convolution ----

struct ConvParams {
  DimVector stride, padding, dilation;
  int64_t groups = 1;
};

int64_t element(IntArrayRef v, size_t i) { return v.size() == 1 ? v[0] : v[i]; }

// conv1d/conv2d(input, weight, bias, stride, padding, dilation, groups), padding an int list or
// "same"/"valid". convolution_backward takes the leading padding (Note [Convolution backward
// padding] in src/ops/conv_backward.cpp): "same" puts the odd zero of an odd total at the end.
ConvParams conv_params(const GradContext& ctx) {
  ConvParams p;
  p.stride = DimVector(ctx.ints(3).begin(), ctx.ints(3).end());
  p.dilation = DimVector(ctx.ints(5).begin(), ctx.ints(5).end());
  p.groups = ctx.int_arg(6);
  if (!ctx.arg(4).is_string()) {
    p.padding = DimVector(ctx.ints(4).begin(), ctx.ints(4).end());
    return p;
  }
  const DimVector weight = ctx.int_sizes(1);
  const size_t spatial = weight.size() - 2;
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t total = element(p.dilation, i) * (weight[2 + i] - 1);
    p.padding.push_back(ctx.string_arg(4) == "same" ? total / 2 : 0);
  }
  return p;
}

void conv_backward(GradContext& ctx) {
  const ConvParams p = conv_params(ctx);
  const bool bias_grad = ctx.needs_grad(2);  // false for a None bias
  auto [grad_input, grad_weight, grad_bias] =
      convolution_backward(ctx.grad(), ctx.input(0), ctx.input(1), p.stride, p.padding, p.dilation,
                           p.groups, {ctx.needs_grad(0), ctx.needs_grad(1), bias_grad});
  if (ctx.needs_grad(0)) ctx.set_grad(0, grad_input);
  if (ctx.needs_grad(1)) ctx.set_grad(1, grad_weight);
  if (bias_grad) ctx.set_grad(2, grad_bias);
}

// conv1d/conv2d of x with w whose output has the spatial size of `out_sizes` (a grad_output):
// `padding` leads, and a trailing zero is added where the size says the forward had one more
// (Note [Convolution backward padding]).
Tensor conv_to_size(const Tensor& x, const Tensor& w, const ConvParams& p, IntArrayRef out_sizes) {
  const int64_t spatial = w.dim() - 2;
  std::vector<int64_t> trailing;  // kiln::pad order: last dim first, (before, after) pairs
  bool any = false;
  for (int64_t i = spatial - 1; i >= 0; --i) {
    const size_t d = static_cast<size_t>(i);
    const int64_t in = x.size(x.dim() - spatial + i),
                  out = out_sizes[out_sizes.size() - spatial + d];
    const int64_t span = element(p.dilation, d) * (w.size(2 + i) - 1) + 1;
    const int64_t padded = in + 2 * element(p.padding, d);
    const bool extra = padded < span || (padded - span) / element(p.stride, d) + 1 != out;
    trailing.insert(trailing.end(), {0, extra ? 1 : 0});
    any = any || extra;
  }
  const Tensor input = any ? pad(x, trailing) : x;
  return spatial == 2 ? conv2d(input, w, {}, p.stride, p.padding, p.dilation, p.groups)
                      : conv1d(input, w, {}, p.stride, p.padding, p.dilation, p.groups);
}

// convolution_backward(grad_output, input, weight, stride, padding, dilation, groups,
// input_grad, weight_grad, bias_grad) -> (grad_input, grad_weight, grad_bias). With f =
// <grad_output, conv(input, weight)>, grad_input and grad_weight are f's partial derivatives,
// each linear in grad_output and in the other tensor; so for cotangents (gi, gw, gb):
//   d/d grad_output = conv(gi, weight) + conv(input, gw) + gb
//   d/d input       = grad_input of convolution_backward(grad_output, input, gw)
//   d/d weight      = grad_weight of convolution_backward(grad_output, gi, weight)
void convolution_backward_backward(GradContext& ctx) {
  ConvParams p;
  p.stride = DimVector(ctx.ints(3).begin(), ctx.ints(3).end());
  p.padding = DimVector(ctx.ints(4).begin(), ctx.ints(4).end());
  p.dilation = DimVector(ctx.ints(5).begin(), ctx.ints(5).end());
  p.groups = ctx.int_arg(6);
  // Outputs not computed (empty) carry no gradient.
  const bool has_gi = ctx.bool_arg(7) && ctx.has_grad(0);
  const bool has_gw = ctx.bool_arg(8) && ctx.has_grad(1);
  const bool has_gb = ctx.bool_arg(9) && ctx.has_grad(2);
  const Tensor grad_output = ctx.input(0), input = ctx.input(1), weight = ctx.input(2);
  if (ctx.needs_grad(0) && (has_gi || has_gw || has_gb)) {
    Tensor d;
    if (has_gi) d = conv_to_size(ctx.grad(0), weight, p, grad_output.sizes());
    if (has_gw) {
      const Tensor term = conv_to_size(input, ctx.grad(1), p, grad_output.sizes());
      d = d.defined() ? d + term : term;
    }
    if (has_gb) {
      // [C_out] -> [C_out, 1, ...] against grad_output [(N,) C_out, spatial...].
      std::vector<int64_t> shape{weight.size(0)};
      shape.resize(static_cast<size_t>(weight.dim() - 1), 1);
      const Tensor term = ctx.grad(2).reshape(shape);
      d = d.defined() ? d + term : term.expand(grad_output.sizes());
    }
    ctx.set_grad(0, d);
  }
  if (ctx.needs_grad(1) && has_gw) {
    ctx.set_grad(
        1, std::get<0>(convolution_backward(grad_output, input, ctx.grad(1), p.stride, p.padding,
                                            p.dilation, p.groups, {true, false, false})));
  }
  if (ctx.needs_grad(2) && has_gi) {
    ctx.set_grad(
        2, std::get<1>(convolution_backward(grad_output, ctx.grad(0), weight, p.stride, p.padding,
                                            p.dilation, p.groups, {false, true, false})));
  }
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
  const uint32_t conv_saves = bits({0, 1});
  add_derivatives(
      ops,
      {
          {.op = "mm", .backward = mm_backward, .save_args = bits({0, 1})},
          {.op = "bmm", .backward = bmm_backward, .save_args = bits({0, 1})},
          {.op = "addmm", .backward = addmm_backward, .save_args = bits({1, 2})},
          {.op = "conv1d", .backward = conv_backward, .save_args = conv_saves},
          {.op = "conv1d.padding", .backward = conv_backward, .save_args = conv_saves},
          {.op = "conv2d", .backward = conv_backward, .save_args = conv_saves},
          {.op = "conv2d.padding", .backward = conv_backward, .save_args = conv_saves},
          {.op = "convolution_backward",
           .backward = convolution_backward_backward,
           .save_args = bits({0, 1, 2})},
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
}

}  // namespace kiln::autograd
