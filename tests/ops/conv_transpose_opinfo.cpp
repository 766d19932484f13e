// OpInfos for conv_transpose1d/2d/3d and conv_transpose_backward. The references scatter: every
// input element adds input * weight to each output position it reaches, position * stride -
// padding + tap * dilation (for_each_tap in conv_ref.h, with the transposed convolution's output
// on the x side), in float64; the gradients add each product's partial derivatives where they
// belong. Output sizes come from PyTorch's documented formula.
#include "tests/ops/conv_ref.h"
#include "tests/ops/linalg_ref.h"

namespace kiln::testing {
namespace {

using Shape = std::vector<int64_t>;

IValue ints(Shape v) { return IValue(std::move(v)); }

std::pair<double, double> tolerance(ScalarType dt) {
  if (dt == kFloat32) return {1e-4, 1e-5};
  if (dt == kFloat64) return {1e-10, 1e-10};
  if (dt == kBFloat16) return {5e-2, 2e-2};
  return {1e-2, 1e-2};
}

// The geometry of a transposed convolution of `input` with `weight`, its arguments from
// args[first] on (stride, padding, output_padding, groups, dilation): its output is the x side.
ConvRef transposed_ref(const Tensor& input, const Tensor& weight, const Stack& a, size_t first) {
  const int spatial = static_cast<int>(weight.dim()) - 2;
  const bool batched = input.dim() == spatial + 2;
  ConvRef g;
  g.groups = a[first + 3].to_int();
  g.n = batched ? int64_t{input.size(0)} : 1;
  g.cy = input.size(batched ? 1 : 0);
  g.cx = weight.size(1) * g.groups;
  g.y = ref_sizes(input, spatial), g.k = ref_sizes(weight, spatial);
  g.stride = ref_dims(a[first].int_list(), spatial, 1);
  g.pad = ref_dims(a[first + 1].int_list(), spatial, 0);
  const auto output_padding = ref_dims(a[first + 2].int_list(), spatial, 0);
  g.dilation = ref_dims(a[first + 4].int_list(), spatial, 1);
  for (int i = 0; i < 3; ++i)
    g.x[i] = (g.y[i] - 1) * g.stride[i] - 2 * g.pad[i] + g.dilation[i] * (g.k[i] - 1) +
             output_padding[i] + 1;
  return g;
}

std::vector<Tensor> forward_reference(const Stack& a) {
  const Tensor& input = a[0].tensor();
  const Tensor& weight = a[1].tensor();
  const int spatial = static_cast<int>(weight.dim()) - 2;
  const ConvRef g = transposed_ref(input, weight, a, 3);
  const std::vector<double> x = input.to_vector<double>(), w = weight.to_vector<double>();
  const int64_t positions = g.x[0] * g.x[1] * g.x[2];
  std::vector<double> out(static_cast<size_t>(g.n * g.cx * positions), 0.0);
  if (!a[2].is_none()) add_bias_ref(out, a[2].tensor().to_vector<double>(), g.n, g.cx, positions);
  for_each_tap(g, [&](size_t oi, size_t ii, size_t wi) { out[oi] += x[ii] * w[wi]; });
  const Shape shape = conv_shape_ref(input.dim() == spatial + 2, g.n, g.cx, g.x, spatial);
  return {from_vector(out, shape).to(input.dtype())};
}

// conv_transpose_backward(grad_output, input, weight, stride, padding, output_padding, groups,
// dilation, input_grad, weight_grad, bias_grad)
std::vector<Tensor> backward_reference(const Stack& a) {
  const Tensor& grad_output = a[0].tensor();
  const Tensor& input = a[1].tensor();
  const Tensor& weight = a[2].tensor();
  const ConvRef g = transposed_ref(input, weight, a, 3);
  const std::vector<double> dy = grad_output.to_vector<double>(), x = input.to_vector<double>(),
                            w = weight.to_vector<double>();
  std::vector<double> gi(x.size(), 0.0), gw(w.size(), 0.0), gb(static_cast<size_t>(g.cx), 0.0);
  const size_t positions = static_cast<size_t>(g.x[0] * g.x[1] * g.x[2]);
  for (size_t i = 0; i < dy.size(); ++i) gb[(i / positions) % gb.size()] += dy[i];
  for_each_tap(g, [&](size_t oi, size_t ii, size_t wi) {
    gi[ii] += dy[oi] * w[wi];
    gw[wi] += dy[oi] * x[ii];
  });
  const ScalarType dt = input.dtype();
  auto out = [&](size_t mask_arg, const std::vector<double>& v, Shape shape) {
    if (!a[mask_arg].to_bool()) return zeros({0}, dt);
    return from_vector(v, shape).to(dt);
  };
  return {out(8, gi, shape_of(input)), out(9, gw, shape_of(weight)), out(10, gb, {g.cx})};
}

// One transposed convolution's arguments: geometry plus how to draw its tensors.
struct Case {
  Shape x, w;
  Shape stride{1}, padding{0}, output_padding{0};
  int64_t groups = 1;
  Shape dilation{1};
  bool bias = false;
  std::string description;
};

Stack forward_args(const Case& c, const Tensor& x, const Tensor& w, const Tensor& b) {
  return {x,
          w,
          b.defined() ? IValue(b) : IValue(),
          ints(c.stride),
          ints(c.padding),
          ints(c.output_padding),
          c.groups,
          ints(c.dilation)};
}

// The forward output's shape for a case (the reference's formula).
Shape output_shape(const Case& c) {
  const Tensor x = zeros(c.x), w = zeros(c.w);
  Stack a = forward_args(c, x, w, Tensor());
  const ConvRef g = transposed_ref(x, w, a, 3);
  const int spatial = static_cast<int>(c.w.size()) - 2;
  return conv_shape_ref(c.x.size() == c.w.size(), g.n, g.cx, g.x, spatial);
}

Tensor draw(Shape shape, ScalarType dt, std::mt19937_64& rng, double low, double high,
            Layout layout = Layout::Contiguous) {
  return make_tensor(shape, dt, rng, low, high, layout);
}

const std::vector<Case>& forward_cases() {
  static const std::vector<Case> cases = {
      {.x = {2, 4, 3, 3}, .w = {4, 3, 3, 3}, .bias = true, .description = "2-d 3x3, bias"},
      {.x = {2, 4, 4, 4},
       .w = {4, 2, 4, 4},
       .stride = {2},
       .padding = {1},
       .description = "2-d DCGAN up-sampling: kernel 4, stride 2, padding 1"},
      {.x = {1, 3, 3, 4},
       .w = {3, 2, 3, 2},
       .stride = {2, 1},
       .padding = {1, 0},
       .output_padding = {1, 0},
       .bias = true,
       .description = "2-d stride (2, 1), padding (1, 0), output_padding (1, 0)"},
      {.x = {2, 4, 3, 3},
       .w = {4, 3, 2, 2},
       .stride = {2},
       .padding = {1},
       .output_padding = {1},
       .groups = 2,
       .dilation = {2},
       .description = "2-d groups 2, dilation 2, output_padding 1"},
      {.x = {1, 2, 4, 4},
       .w = {2, 3, 3, 3},
       .output_padding = {1},
       .dilation = {2},
       .description = "2-d output_padding 1 >= stride 1 (allowed by dilation 2)"},
      {.x = {3, 3, 3}, .w = {3, 2, 2, 2}, .bias = true, .description = "2-d unbatched"},
      {.x = {2, 3, 5, 4}, .w = {3, 5, 1, 1}, .description = "2-d 1x1 (no unrolling)"},
      {.x = {1, 2, 3, 3}, .w = {2, 2, 1, 1}, .stride = {2}, .description = "2-d 1x1, stride 2"},
      {.x = {2, 3, 4, 4},
       .w = {3, 24, 3, 3},
       .padding = {1},
       .bias = true,
       .description = "2-d 24 output channels (per kernel row)"},
      {.x = {1, 1, 1, 1}, .w = {1, 1, 1, 1}, .bias = true, .description = "2-d sizes 1"},
      {.x = {0, 4, 3, 3}, .w = {4, 3, 3, 3}, .bias = true, .description = "2-d zero batch"},
      {.x = {2, 0, 3, 3},
       .w = {0, 3, 2, 2},
       .bias = true,
       .description = "2-d zero input channels: bias only"},
      {.x = {1, 2, 0, 3},
       .w = {2, 2, 3, 3},
       .bias = true,
       .description = "2-d zero input height: output of the kernel's reach, bias only"},
      {.x = {2, 3, 5},
       .w = {3, 2, 3},
       .stride = {2},
       .padding = {1},
       .output_padding = {1},
       .bias = true,
       .description = "1-d stride 2, padding 1, output_padding 1"},
      {.x = {2, 4, 4},
       .w = {4, 1, 3},
       .stride = {3},
       .output_padding = {2},
       .groups = 2,
       .dilation = {2},
       .description = "1-d stride 3, output_padding 2, groups 2, dilation 2"},
      {.x = {3, 6}, .w = {3, 4, 2}, .description = "1-d unbatched"},
      {.x = {0, 3, 5}, .w = {3, 2, 3}, .description = "1-d zero batch"},
      {.x = {2, 3, 2, 3, 3}, .w = {3, 2, 2, 2, 2}, .bias = true, .description = "3-d 2x2x2, bias"},
      {.x = {1, 4, 2, 2, 3},
       .w = {4, 2, 3, 2, 2},
       .stride = {2, 1, 2},
       .padding = {1, 0, 1},
       .output_padding = {1, 0, 0},
       .groups = 2,
       .description =
           "3-d stride (2, 1, 2), padding (1, 0, 1), output_padding (1, 0, 0), groups 2"},
      {.x = {2, 2, 2, 2}, .w = {2, 3, 2, 2, 2}, .bias = true, .description = "3-d unbatched"},
      {.x = {2, 3, 1, 3, 3},
       .w = {3, 2, 1, 3, 3},
       .stride = {1, 2, 2},
       .padding = {0, 1, 1},
       .output_padding = {0, 1, 1},
       .description = "3-d depth 1 (planar)"},
      {.x = {1, 2, 2, 2, 2},
       .w = {2, 3, 1, 1, 1},
       .stride = {2},
       .description = "3-d 1x1x1, stride 2"},
      {.x = {0, 3, 2, 2, 2}, .w = {3, 2, 2, 2, 2}, .description = "3-d zero batch"},
  };
  return cases;
}

std::vector<SampleInput> forward_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  for (const Case& c : forward_cases()) {
    const Tensor b = c.bias ? draw({c.w[1] * c.groups}, dt, rng, -2, 2) : Tensor();
    s.push_back(
        {forward_args(c, draw(c.x, dt, rng, -2, 2), draw(c.w, dt, rng, -2, 2), b), c.description});
  }
  // Non-contiguous input and weight.
  const Case c{.x = {2, 3, 4, 3}, .w = {3, 2, 3, 3}, .stride = {2}, .padding = {1}};
  s.push_back({forward_args(c, draw({2, 3, 3, 4}, dt, rng, -2, 2).transpose(2, 3),
                            draw(c.w, dt, rng, -2, 2, Layout::NonContiguous), Tensor()),
               "2-d non-contiguous input and weight"});
  return s;
}

// float64, at most 80 elements in input, weight and bias.
std::vector<SampleInput> forward_grad_samples(std::mt19937_64& rng) {
  const std::vector<Case> cases = {
      {.x = {1, 2, 3, 3}, .w = {2, 2, 2, 2}, .bias = true, .description = "2-d 2x2, bias"},
      {.x = {1, 2, 2, 3},
       .w = {2, 1, 3, 2},
       .stride = {2, 1},
       .padding = {1, 0},
       .output_padding = {1, 0},
       .groups = 2,
       .bias = true,
       .description = "2-d stride (2, 1), padding (1, 0), output_padding (1, 0), groups 2"},
      {.x = {2, 3, 3},
       .w = {2, 2, 2, 2},
       .output_padding = {1},
       .dilation = {2},
       .description = "2-d unbatched, output_padding 1 with dilation 2"},
      {.x = {2, 2, 4},
       .w = {2, 3, 3},
       .stride = {2},
       .padding = {1},
       .output_padding = {1},
       .bias = true,
       .description = "1-d stride 2, output_padding 1"},
      {.x = {1, 2, 2, 2, 2},
       .w = {2, 1, 2, 2, 2},
       .stride = {2, 1, 1},
       .padding = {0, 1, 0},
       .bias = true,
       .description = "3-d stride (2, 1, 1), padding (0, 1, 0)"},
  };
  std::vector<SampleInput> s;
  for (const Case& c : cases) {
    const Tensor b = c.bias ? draw({c.w[1] * c.groups}, kFloat64, rng, -1, 1) : Tensor();
    s.push_back(
        {forward_args(c, draw(c.x, kFloat64, rng, -1, 1), draw(c.w, kFloat64, rng, -1, 1), b),
         c.description});
  }
  return s;
}

std::vector<ErrorCase> forward_errors(int spatial) {
  auto shape = [&](int64_t n, int64_t c, int64_t size) {
    Shape s{n, c};
    s.resize(static_cast<size_t>(spatial) + 2, size);
    return s;
  };
  const Tensor x = zeros(shape(1, 4, 3)), w = zeros(shape(4, 2, 3));
  auto c = [&](Tensor x, Tensor w, IValue b, Shape st, Shape pd, Shape op, int64_t g, Shape dl) {
    return Stack{x, w, b, ints(st), ints(pd), ints(op), g, ints(dl)};
  };
  Shape too_many(static_cast<size_t>(spatial) + 1, 1);
  return {
      {c(x, zeros(shape(3, 2, 3)), IValue(), {1}, {0}, {0}, 1, {1}), ErrorKind::Shape,
       "input channels 4, weight's 3"},
      {c(zeros(shape(1, 3, 3)), zeros(shape(3, 2, 3)), IValue(), {1}, {0}, {0}, 2, {1}),
       ErrorKind::Shape, "3 input channels, groups 2"},
      {c(x, zeros(shape(4, 2, 3)).flatten(-2), IValue(), {1}, {0}, {0}, 1, {1}), ErrorKind::Shape,
       "weight of the wrong rank"},
      {c(x.unsqueeze(0), w, IValue(), {1}, {0}, {0}, 1, {1}), ErrorKind::Shape,
       "input of the wrong rank"},
      {c(x, w, IValue(), {2}, {0}, {2}, 1, {1}), ErrorKind::Value,
       "output_padding 2, stride 2, dilation 1"},
      {c(x, w, IValue(), {1}, {0}, {1}, 1, {1}), ErrorKind::Value,
       "output_padding 1, stride 1, dilation 1"},
      {c(x, w, IValue(), {0}, {0}, {0}, 1, {1}), ErrorKind::Value, "stride 0"},
      {c(x, w, IValue(), {1}, {-1}, {0}, 1, {1}), ErrorKind::Value, "negative padding"},
      {c(x, w, IValue(), {1}, {0}, {0}, 1, {0}), ErrorKind::Value, "dilation 0"},
      {c(x, w, IValue(), {1}, {0}, {0}, 0, {1}), ErrorKind::Value, "groups 0"},
      {c(x, w, IValue(), too_many, {0}, {0}, 1, {1}), ErrorKind::Value, "one stride too many"},
      {c(zeros(shape(1, 4, 1)), zeros(shape(4, 2, 1)), IValue(), {1}, {1}, {0}, 1, {1}),
       ErrorKind::Shape, "padding 1 leaves no output"},
      {c(x, w, zeros({3}), {1}, {0}, {0}, 1, {1}), ErrorKind::Shape, "bias size 3, 2 channels"},
      {c(x, zeros(shape(4, 2, 3), kFloat64), IValue(), {1}, {0}, {0}, 1, {1}), ErrorKind::DType,
       "mixed dtypes"},
      {c(zeros(shape(1, 4, 3), kInt32), zeros(shape(4, 2, 3), kInt32), IValue(), {1}, {0}, {0}, 1,
         {1}),
       ErrorKind::DType, "int32"},
  };
}

// ---- conv_transpose_backward ----

struct Masks {
  bool input = true, weight = true, bias = true;
};

SampleInput backward_sample(const Case& c, ScalarType dt, std::mt19937_64& rng, double range,
                            Masks m = {}, Layout layout = Layout::Contiguous) {
  Stack a{draw(output_shape(c), dt, rng, -range, range, layout),
          draw(c.x, dt, rng, -range, range, layout),
          draw(c.w, dt, rng, -range, range),
          ints(c.stride),
          ints(c.padding),
          ints(c.output_padding),
          c.groups,
          ints(c.dilation),
          m.input,
          m.weight,
          m.bias};
  return {std::move(a), c.description};
}

std::vector<SampleInput> backward_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  for (const Case& c : forward_cases()) s.push_back(backward_sample(c, dt, rng, 2));
  const Case c{.x = {2, 3, 4, 3}, .w = {3, 2, 3, 3}, .stride = {2}, .padding = {1}};
  s.push_back(backward_sample({.x = c.x, .w = c.w, .description = "non-contiguous"}, dt, rng, 2, {},
                              Layout::NonContiguous));
  s.push_back(backward_sample({.x = c.x, .w = c.w, .description = "input only"}, dt, rng, 2,
                              {true, false, false}));
  s.push_back(backward_sample({.x = c.x, .w = c.w, .description = "weight and bias only"}, dt, rng,
                              2, {false, true, true}));
  s.push_back(backward_sample({.x = c.x, .w = c.w, .description = "nothing wanted"}, dt, rng, 2,
                              {false, false, false}));
  s.push_back(backward_sample({.x = {5, 8, 4, 4},
                               .w = {8, 6, 3, 3},
                               .stride = {2},
                               .padding = {1},
                               .description = "5 samples (threads accumulate grad_weight)"},
                              dt, rng, 2));
  return s;
}

// float64, at most 80 elements in grad_output, input and weight.
std::vector<SampleInput> backward_grad_samples(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  s.push_back(backward_sample(
      {.x = {1, 2, 2, 2}, .w = {2, 2, 2, 2}, .stride = {2}, .description = "2-d stride 2"},
      kFloat64, rng, 1));
  s.push_back(backward_sample({.x = {1, 2, 2, 3},
                               .w = {2, 1, 2, 2},
                               .padding = {1, 0},
                               .output_padding = {0, 1},
                               .groups = 2,
                               .dilation = {1, 2},
                               .description = "2-d groups 2, output_padding (0, 1), dilation"},
                              kFloat64, rng, 1));
  s.push_back(backward_sample({.x = {2, 4},
                               .w = {2, 2, 3},
                               .stride = {2},
                               .output_padding = {1},
                               .description = "1-d unbatched, stride 2, output_padding 1"},
                              kFloat64, rng, 1));
  s.push_back(backward_sample(
      {.x = {1, 1, 2, 2, 2}, .w = {1, 2, 2, 2, 2}, .description = "3-d 2x2x2"}, kFloat64, rng, 1));
  s.push_back(backward_sample({.x = {1, 2, 2, 2}, .w = {2, 2, 2, 2}, .description = "bias only"},
                              kFloat64, rng, 1, {false, false, true}));
  return s;
}

std::vector<ErrorCase> backward_errors() {
  auto c = [](Tensor dy, Tensor x, Tensor w, Shape op) {
    return Stack{dy, x, w, ints({2}), ints({1}), ints(op), int64_t{1}, ints({1}), true, true, true};
  };
  // x [1, 4, 3, 3] with w [4, 2, 3, 3], stride 2, padding 1: output [1, 2, 5, 5].
  const Tensor x = zeros({1, 4, 3, 3}), w = zeros({4, 2, 3, 3});
  return {
      {c(zeros({1, 2, 6, 6}), x, w, {0}), ErrorKind::Shape, "grad_output 6x6, output 5x5"},
      {c(zeros({1, 3, 5, 5}), x, w, {0}), ErrorKind::Shape, "grad_output channels"},
      {c(zeros({2, 5, 5}), x, w, {0}), ErrorKind::Shape, "grad_output rank"},
      {c(zeros({1, 2, 5, 5}), x, zeros({4, 18}), {0}), ErrorKind::Shape, "2-D weight"},
      {c(zeros({1, 2, 7, 7}), x, w, {3}), ErrorKind::Value, "output_padding 3, stride 2"},
      {c(zeros({1, 2, 5, 5}, kFloat64), x, w, {0}), ErrorKind::DType, "grad_output float64"},
  };
}

const bool registered = [] {
  for (int spatial = 1; spatial <= 3; ++spatial) {
    register_op_info({.name = "conv_transpose" + std::to_string(spatial) + "d",
                      .samples =
                          [spatial](ScalarType dt, std::mt19937_64& rng) {
                            std::vector<SampleInput> s;
                            for (SampleInput& sample : forward_samples(dt, rng))
                              if (sample.args[1].tensor().dim() == spatial + 2)
                                s.push_back(std::move(sample));
                            return s;
                          },
                      .reference = forward_reference,
                      .error_cases = [spatial] { return forward_errors(spatial); },
                      .tolerance = tolerance,
                      .grad_samples =
                          [spatial](std::mt19937_64& rng) {
                            std::vector<SampleInput> s;
                            for (SampleInput& sample : forward_grad_samples(rng))
                              if (sample.args[1].tensor().dim() == spatial + 2)
                                s.push_back(std::move(sample));
                            return s;
                          }});
  }
  register_op_info({.name = "conv_transpose_backward",
                    .samples = backward_samples,
                    .reference = backward_reference,
                    .error_cases = backward_errors,
                    .tolerance = tolerance,
                    .grad_samples = backward_grad_samples});
  return true;
}();

}  // namespace
}  // namespace kiln::testing
