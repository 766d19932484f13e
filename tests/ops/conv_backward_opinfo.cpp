// OpInfo for convolution_backward. The reference walks every (sample, output channel, output
// position, kernel tap) of the convolution in float64 (for_each_tap, conv_ref.h) and adds each
// product's partial derivatives where they belong: grad_output * weight into grad_input,
// grad_output * input into grad_weight, grad_output into grad_bias. No GEMM, no unrolling:
// independent of the kernel.
#include "tests/ops/conv_ref.h"
#include "tests/ops/linalg_ref.h"

namespace kiln::testing {
namespace {

using Shape = std::vector<int64_t>;

int64_t at(IntArrayRef v, size_t i) { return v.size() == 1 ? v[0] : v[i]; }

std::vector<Tensor> conv_backward_reference(const Stack& a) {
  const Tensor& grad_output = a[0].tensor();
  const Tensor& input = a[1].tensor();
  const Tensor& weight = a[2].tensor();
  const int spatial = static_cast<int>(weight.dim()) - 2;
  const bool batched = input.dim() == spatial + 2;
  ConvRef g;
  g.n = batched ? int64_t{input.size(0)} : 1;
  g.cx = input.size(batched ? 1 : 0), g.cy = weight.size(0), g.groups = a[6].to_int();
  g.x = ref_sizes(input, spatial), g.y = ref_sizes(grad_output, spatial);
  g.k = ref_sizes(weight, spatial);
  g.stride = ref_dims(a[3].int_list(), spatial, 1);
  g.pad = ref_dims(a[4].int_list(), spatial, 0);
  g.dilation = ref_dims(a[5].int_list(), spatial, 1);
  const std::vector<double> dy = grad_output.to_vector<double>(), x = input.to_vector<double>(),
                            w = weight.to_vector<double>();
  std::vector<double> gi(x.size(), 0.0), gw(w.size(), 0.0), gb(static_cast<size_t>(g.cy), 0.0);
  const int64_t positions = g.y[0] * g.y[1] * g.y[2];
  for (size_t i = 0; i < dy.size(); ++i)
    gb[(i / static_cast<size_t>(positions)) % gb.size()] += dy[i];
  for_each_tap(g, [&](size_t xi, size_t yi, size_t wi) {
    gi[xi] += dy[yi] * w[wi];
    gw[wi] += dy[yi] * x[xi];
  });
  const ScalarType dt = input.dtype();
  auto out = [&](size_t mask_arg, const std::vector<double>& v, Shape shape) {
    if (!a[mask_arg].to_bool()) return zeros({0}, dt);
    return from_vector(v, shape).to(dt);
  };
  return {out(7, gi, shape_of(input)), out(8, gw, shape_of(weight)), out(9, gb, {g.cy})};
}

std::pair<double, double> tolerance(ScalarType dt) {
  if (dt == kFloat32) return {1e-4, 1e-5};
  if (dt == kFloat64) return {1e-10, 1e-10};
  if (dt == kBFloat16) return {5e-2, 2e-2};
  return {1e-2, 1e-2};
}

IValue ints(Shape v) { return IValue(std::move(v)); }

struct Masks {
  bool input = true, weight = true, bias = true;
};

// One sample: random input, weight and a grad_output of the convolution's output shape, where
// `extra` adds the trailing zero of padding="same" with an odd total (Note [Convolution backward
// padding]) to every spatial dim whose size it changes.
class SampleBuilder {
 public:
  SampleBuilder(ScalarType dt, std::mt19937_64& rng, double low = -2, double high = 2)
      : dt_(dt), rng_(rng), low_(low), high_(high) {}

  SampleInput make(Shape x, Shape w, Shape stride, Shape padding, Shape dilation, int64_t groups,
                   std::string description, Masks m = {}, bool extra = false,
                   Layout layout = Layout::Contiguous) {
    const int spatial = static_cast<int>(w.size()) - 2;
    Shape out(x.begin(), x.end() - spatial);
    out[out.size() - 1] = w[0];
    for (int i = 0; i < spatial; ++i) {
      const size_t d = static_cast<size_t>(i);
      const int64_t in = x[x.size() - static_cast<size_t>(spatial) + d];
      const int64_t padded = in + 2 * at(padding, d) + (extra ? 1 : 0);
      out.push_back((padded - at(dilation, d) * (w[2 + d] - 1) - 1) / at(stride, d) + 1);
    }
    Tensor input = make_tensor(x, dt_, rng_, low_, high_, layout);
    Tensor grad_output = make_tensor(out, dt_, rng_, low_, high_, layout);
    return {{grad_output, input, make_tensor(w, dt_, rng_, low_, high_), ints(stride),
             ints(padding), ints(dilation), groups, m.input, m.weight, m.bias},
            std::move(description)};
  }

 private:
  ScalarType dt_;
  std::mt19937_64& rng_;
  double low_, high_;
};

std::vector<SampleInput> samples(ScalarType dt, std::mt19937_64& rng) {
  SampleBuilder b(dt, rng);
  std::vector<SampleInput> s;
  s.push_back(b.make({2, 3, 6, 7}, {4, 3, 3, 3}, {1}, {0}, {1}, 1, "3x3"));
  s.push_back(
      b.make({2, 3, 6, 7}, {4, 3, 3, 2}, {2, 1}, {1, 2}, {1}, 1, "stride (2, 1), padding (1, 2)"));
  s.push_back(b.make({1, 4, 9, 8}, {6, 2, 3, 3}, {1}, {2}, {2, 3}, 2,
                     "groups 2, dilation (2, 3), one sample (BLAS-threaded path)"));
  s.push_back(b.make({2, 4, 5, 5}, {4, 1, 3, 3}, {1}, {1}, {1}, 4, "depthwise"));
  s.push_back(b.make({2, 3, 4, 5}, {5, 3, 1, 1}, {1}, {0}, {1}, 1, "1x1 (no unrolling)"));
  s.push_back(b.make({3, 6, 7}, {2, 3, 2, 2}, {1}, {0}, {1}, 1, "unbatched"));
  s.push_back(b.make({2, 3, 6, 7}, {4, 3, 4, 3}, {1}, {1}, {1}, 1,
                     "one more trailing zero (padding=\"same\", even kernel)", {}, true));
  s.push_back(b.make({2, 3, 6, 7}, {4, 3, 3, 3}, {1}, {1}, {1}, 1,
                     "non-contiguous grad_output and input", {}, false, Layout::NonContiguous));
  s.push_back(b.make({2, 3, 6, 7}, {4, 3, 3, 3}, {1}, {1}, {1}, 1, "weight and bias only",
                     {.input = false}));
  s.push_back(b.make({2, 3, 6, 7}, {4, 3, 3, 3}, {2}, {1}, {1}, 1, "input only",
                     {.weight = false, .bias = false}));
  s.push_back(b.make({2, 3, 6, 7}, {4, 3, 3, 3}, {1}, {0}, {1}, 1, "nothing wanted",
                     {false, false, false}));
  s.push_back(b.make({5, 8, 10, 10}, {16, 8, 3, 3}, {1}, {1}, {1}, 1,
                     "5 samples (threads accumulate grad_weight)"));
  // C_g * kW >= 64: the products run per kernel row (Note [Convolution by kernel rows]).
  s.push_back(b.make({5, 24, 7, 6}, {6, 24, 3, 3}, {1}, {1}, {1}, 1,
                     "24 channels, padding 1 (per kernel row)"));
  s.push_back(b.make({2, 64, 7, 6}, {6, 32, 3, 2}, {2, 1}, {2, 1}, {2, 1}, 2,
                     "groups 2, stride (2, 1), padding (2, 1), dilation (2, 1) (per kernel row)"));
  s.push_back(b.make({2, 24, 6, 7}, {4, 24, 4, 3}, {1}, {1}, {1}, 1,
                     "one more trailing zero, per kernel row", {}, true));
  s.push_back(b.make({3, 16, 4, 4}, {4, 16, 5, 5}, {1}, {3}, {1}, 1,
                     "padding 3 > kernel reach (per kernel row)"));
  s.push_back(b.make({1, 24, 7, 6}, {6, 24, 3, 3}, {1}, {1}, {1}, 1,
                     "input only, one sample (per kernel row)", {true, false, false}));
  s.push_back(b.make({2, 4, 11}, {6, 2, 3}, {2}, {1}, {2}, 2,
                     "conv1d: stride 2, padding 1, dilation 2, groups 2"));
  s.push_back(b.make({3, 10}, {2, 3, 4}, {1}, {0}, {1}, 1, "conv1d unbatched"));
  // Note [Convolution rows as one block]: stride 1 and outputs as wide as the input.
  s.push_back(b.make({2, 3, 9, 10}, {4, 3, 3, 3}, {1}, {2}, {2}, 1,
                     "dilation 2, padding 2: rows as one shifted block"));
  s.push_back(b.make({2, 24, 7, 9}, {5, 24, 3, 5}, {1}, {1, 2}, {1}, 1,
                     "3x5, padding (1, 2): rows as one block, per kernel row"));
  s.push_back(b.make({2, 3, 5, 8}, {4, 3, 1, 3}, {1}, {0, 1}, {1}, 1,
                     "1x3, padding (0, 1): rows as one block"));
  s.push_back(b.make({2, 3, 4, 5, 4}, {4, 3, 3, 2, 3}, {1, 2, 1}, {1, 0, 1}, {1}, 1,
                     "conv3d: stride (1, 2, 1), padding (1, 0, 1)"));
  s.push_back(b.make({1, 4, 5, 4, 5}, {4, 2, 2, 2, 2}, {2}, {1}, {2, 1, 1}, 2,
                     "conv3d: groups 2, stride 2, dilation (2, 1, 1), one sample"));
  s.push_back(b.make({3, 3, 4, 4}, {2, 3, 2, 2, 2}, {1}, {0}, {1}, 1, "conv3d unbatched"));
  s.push_back(b.make({2, 2, 3, 4, 5}, {3, 2, 3, 3, 2}, {1}, {1}, {1}, 1,
                     "conv3d: one more trailing zero", {}, true));
  s.push_back(b.make({2, 3, 3, 4, 4}, {2, 3, 1, 1, 1}, {1}, {0}, {1}, 1, "conv3d 1x1x1"));
  s.push_back(b.make({5, 8, 3, 4, 4}, {6, 8, 2, 3, 3}, {1}, {1}, {1}, 1,
                     "conv3d: 5 samples (threads accumulate grad_weight)"));
  s.push_back(b.make({2, 24, 1, 5, 6}, {4, 24, 1, 3, 3}, {1}, {0, 1, 1}, {1}, 1,
                     "conv3d depth 1 (planar, per kernel row)"));
  s.push_back(b.make({2, 3, 3, 4, 4}, {4, 3, 2, 2, 2}, {1}, {1}, {1}, 1, "conv3d input only",
                     {true, false, false}));
  s.push_back(b.make({0, 3, 6, 7}, {4, 3, 3, 3}, {1}, {0}, {1}, 1, "zero batch"));
  s.push_back(b.make({2, 0, 4, 4}, {3, 0, 2, 2}, {1}, {0}, {1}, 1, "zero input channels"));
  return s;
}

// At most 80 elements in grad_output, input and weight together (finite differences).
std::vector<SampleInput> grad_samples(std::mt19937_64& rng) {
  SampleBuilder b(kFloat64, rng, -1, 1);
  std::vector<SampleInput> s;
  s.push_back(b.make({1, 2, 4, 4}, {2, 2, 2, 2}, {1}, {0}, {1}, 1, "2x2"));
  s.push_back(b.make({2, 1, 4, 4}, {2, 1, 2, 2}, {1}, {0}, {1}, 1, "two samples"));
  s.push_back(
      b.make({1, 1, 4, 4}, {2, 1, 2, 2}, {1}, {0}, {1}, 1, "one more trailing zero", {}, true));
  s.push_back(
      b.make({1, 2, 4, 4}, {2, 1, 2, 2}, {2}, {1}, {1}, 2, "groups 2, stride 2, padding 1"));
  s.push_back(b.make({2, 6}, {3, 2, 3}, {1}, {1}, {2}, 1, "conv1d unbatched, dilation 2"));
  s.push_back(
      b.make({1, 2, 4, 4}, {2, 2, 2, 2}, {1}, {0}, {1}, 1, "bias only", {false, false, true}));
  s.push_back(
      b.make({1, 2, 4, 4}, {2, 2, 2, 2}, {1}, {1}, {1}, 1, "weight only", {false, true, false}));
  s.push_back(b.make({1, 1, 3, 3, 3}, {2, 1, 2, 2, 2}, {1}, {0}, {1}, 1, "conv3d 2x2x2"));
  s.push_back(b.make({1, 2, 2, 3, 3}, {2, 1, 1, 2, 2}, {1, 2, 1}, {1, 0, 1}, {1}, 2,
                     "conv3d: groups 2, stride (1, 2, 1), padding (1, 0, 1)"));
  return s;
}

std::vector<ErrorCase> errors() {
  const Tensor x = zeros({1, 4, 5, 5}), w = zeros({6, 2, 3, 3}), dy = zeros({1, 6, 3, 3});
  auto c = [](Tensor dy, Tensor x, Tensor w, Shape st, Shape pd, int64_t groups) {
    return Stack{dy, x, w, ints(st), ints(pd), ints({1}), groups, true, true, true};
  };
  return {
      {c(zeros({1, 6, 5, 5}), x, w, {1}, {0}, 2), ErrorKind::Shape,
       "grad_output 5x5, expected 3x3 or 4x4"},
      {c(zeros({1, 6, 2, 3}), x, w, {1}, {0}, 2), ErrorKind::Shape,
       "grad_output 2x3, expected 3x3 or 4x4"},
      {c(zeros({1, 6, 3, 3}), x, w, {2}, {0}, 2), ErrorKind::Shape, "stride 2: expected 2x2"},
      {c(zeros({1, 5, 3, 3}), x, w, {1}, {0}, 2), ErrorKind::Shape, "grad_output channels"},
      {c(zeros({2, 6, 3, 3}), x, w, {1}, {0}, 2), ErrorKind::Shape, "grad_output batch"},
      {c(zeros({6, 3, 3}), x, w, {1}, {0}, 2), ErrorKind::Shape, "grad_output rank"},
      {c(dy, x, w, {1}, {0}, 1), ErrorKind::Shape, "input channels vs groups"},
      {c(dy, x, zeros({6, 18}), {1}, {0}, 2), ErrorKind::Shape, "2-D weight"},
      {c(dy, x, w, {0}, {0}, 2), ErrorKind::Value, "stride 0"},
      {c(dy, x, w, {1}, {-1}, 2), ErrorKind::Value, "negative padding"},
      {c(dy, x, w, {1}, {0}, 0), ErrorKind::Value, "groups 0"},
      {c(dy, x, w, {1, 1, 1}, {0}, 2), ErrorKind::Value, "three strides"},
      {c(dy, x, zeros({6, 2, 3, 3}, kFloat64), {1}, {0}, 2), ErrorKind::DType, "mixed dtypes"},
      {c(zeros({1, 6, 3, 3}, kInt32), zeros({1, 4, 5, 5}, kInt32), zeros({6, 2, 3, 3}, kInt32), {1},
         {0}, 2),
       ErrorKind::DType, "int32"},
  };
}

const bool registered = register_op_info({.name = "convolution_backward",
                                          .samples = samples,
                                          .reference = conv_backward_reference,
                                          .error_cases = errors,
                                          .tolerance = tolerance,
                                          .grad_samples = grad_samples});

}  // namespace
}  // namespace kiln::testing
