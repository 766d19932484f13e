// Derivatives of the convolutions and transposed convolutions. Their gradients run in dedicated
// backward ops (convolution_backward, conv_transpose_backward: src/ops/linalg_backward.h), which
// have derivatives here too, written with the forward ops, so every order of derivative works:
// double backward of a conv is convs and convolution_backward again, of a transposed conv
// transposed convs and conv_transpose_backward again.
#include "src/autograd/formulas/grad_utils.h"
#include "src/ops/linalg_backward.h"

namespace kiln::autograd {
namespace {

struct ConvParams {
  DimVector stride, padding, dilation;
  int64_t groups = 1;
};

int64_t element(IntArrayRef v, size_t i) { return v.size() == 1 ? v[0] : v[i]; }

// conv1d/2d/3d(input, weight, bias, stride, padding, dilation, groups), padding an int list or
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

// conv1d/2d/3d of x with w whose output has the spatial size of `out_sizes` (a grad_output):
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
  if (spatial == 3) return conv3d(input, w, {}, p.stride, p.padding, p.dilation, p.groups);
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

// conv_transpose1d/2d/3d(input, weight, bias, stride, padding, output_padding, groups,
// dilation).
void conv_transpose_backward_formula(GradContext& ctx) {
  const bool bias_grad = ctx.needs_grad(2);  // false for a None bias
  auto [grad_input, grad_weight, grad_bias] = conv_transpose_backward(
      ctx.grad(), ctx.input(0), ctx.input(1), ctx.ints(3), ctx.ints(4), ctx.ints(5), ctx.int_arg(6),
      ctx.ints(7), {ctx.needs_grad(0), ctx.needs_grad(1), bias_grad});
  if (ctx.needs_grad(0)) ctx.set_grad(0, grad_input);
  if (ctx.needs_grad(1)) ctx.set_grad(1, grad_weight);
  if (bias_grad) ctx.set_grad(2, grad_bias);
}

// conv_transpose_backward(grad_output, input, weight, stride, padding, output_padding, groups,
// dilation, input_grad, weight_grad, bias_grad) -> (grad_input, grad_weight, grad_bias). With T
// the transposed convolution (linear in input and in weight) and f = <grad_output, T(input,
// weight)>, grad_input and grad_weight are f's partial derivatives, grad_bias grad_output's
// channel sums; so for cotangents (gi, gw, gb):
//   d/d grad_output = T(gi, weight) + T(input, gw) + gb
//   d/d input       = grad_input of conv_transpose_backward(grad_output, input, gw)
//   d/d weight      = grad_weight of conv_transpose_backward(grad_output, gi, weight)
void conv_transpose_backward_backward(GradContext& ctx) {
  const IntArrayRef stride = ctx.ints(3), padding = ctx.ints(4), output_padding = ctx.ints(5),
                    dilation = ctx.ints(7);
  const int64_t groups = ctx.int_arg(6);
  const bool has_gi = ctx.bool_arg(8) && ctx.has_grad(0);
  const bool has_gw = ctx.bool_arg(9) && ctx.has_grad(1);
  const bool has_gb = ctx.bool_arg(10) && ctx.has_grad(2);
  const Tensor grad_output = ctx.input(0), input = ctx.input(1), weight = ctx.input(2);
  auto transposed = [&](const Tensor& x, const Tensor& w) {
    switch (w.dim()) {
      case 3:
        return conv_transpose1d(x, w, {}, stride, padding, output_padding, groups, dilation);
      case 4:
        return conv_transpose2d(x, w, {}, stride, padding, output_padding, groups, dilation);
      default:
        return conv_transpose3d(x, w, {}, stride, padding, output_padding, groups, dilation);
    }
  };
  if (ctx.needs_grad(0) && (has_gi || has_gw || has_gb)) {
    Tensor d;
    if (has_gi) d = transposed(ctx.grad(0), weight);
    if (has_gw) {
      const Tensor term = transposed(input, ctx.grad(1));
      d = d.defined() ? d + term : term;
    }
    if (has_gb) {
      // [C_out] -> [C_out, 1, ...] against grad_output [(N,) C_out, spatial...].
      std::vector<int64_t> shape{ctx.grad(2).size(0)};
      shape.resize(static_cast<size_t>(weight.dim() - 1), 1);
      const Tensor term = ctx.grad(2).reshape(shape);
      d = d.defined() ? d + term : term.expand(grad_output.sizes());
    }
    ctx.set_grad(0, d);
  }
  if (ctx.needs_grad(1) && has_gw) {
    ctx.set_grad(1, std::get<0>(conv_transpose_backward(grad_output, input, ctx.grad(1), stride,
                                                        padding, output_padding, groups, dilation,
                                                        {true, false, false})));
  }
  if (ctx.needs_grad(2) && has_gi) {
    ctx.set_grad(2, std::get<1>(conv_transpose_backward(grad_output, ctx.grad(0), weight, stride,
                                                        padding, output_padding, groups, dilation,
                                                        {false, true, false})));
  }
}

}  // namespace

void register_conv_derivatives(OpRegistry& ops) {
  const uint32_t conv_saves = bits({0, 1});
  add_derivatives(ops,
                  {
                      {.op = "conv1d", .backward = conv_backward, .save_args = conv_saves},
                      {.op = "conv1d.padding", .backward = conv_backward, .save_args = conv_saves},
                      {.op = "conv2d", .backward = conv_backward, .save_args = conv_saves},
                      {.op = "conv2d.padding", .backward = conv_backward, .save_args = conv_saves},
                      {.op = "conv3d", .backward = conv_backward, .save_args = conv_saves},
                      {.op = "conv3d.padding", .backward = conv_backward, .save_args = conv_saves},
                      {.op = "convolution_backward",
                       .backward = convolution_backward_backward,
                       .save_args = bits({0, 1, 2})},
                      {.op = "conv_transpose1d",
                       .backward = conv_transpose_backward_formula,
                       .save_args = conv_saves},
                      {.op = "conv_transpose2d",
                       .backward = conv_transpose_backward_formula,
                       .save_args = conv_saves},
                      {.op = "conv_transpose3d",
                       .backward = conv_transpose_backward_formula,
                       .save_args = conv_saves},
                      {.op = "conv_transpose_backward",
                       .backward = conv_transpose_backward_backward,
                       .save_args = bits({0, 1, 2})},
                  });
}

}  // namespace kiln::autograd
