// OpInfos for the upsample_* ops. The reference sums, for each output position, every combination
// of per-dim taps (input position, weight) in float64, the taps written from PyTorch's coordinate
// rules (Note [Upsampling coordinates] in src/ops/nn_upsample.cpp) independently of the op's
// separable implementation: nearest's float32 scale, linear's clamp at 0 and its out == in copy,
// cubic's A = -0.75 kernel and clamped border taps.
#include <algorithm>
#include <cmath>
#include <optional>

#include "tests/ops/harness.h"

namespace kiln::testing {
namespace {

using Shape = std::vector<int64_t>;

enum class Mode { Nearest, NearestExact, Linear, Cubic };

struct Tap {
  int64_t index;
  double weight;
};

// |x| < 2: Keys' cubic convolution kernel with A = -0.75.
double keys(double x) {
  const double A = -0.75, a = std::abs(x);
  if (a <= 1) return (A + 2) * a * a * a - (A + 3) * a * a + 1;
  if (a < 2) return A * a * a * a - 5 * A * a * a + 8 * A * a - 4 * A;
  return 0;
}

// scale: the scale_factor passed to the op, 0 when none.
std::vector<Tap> taps(Mode mode, int64_t o, int64_t in, int64_t out, bool align_corners,
                      double scale) {
  const bool given = scale > 0;
  if (mode == Mode::Nearest || mode == Mode::NearestExact) {
    if (mode == Mode::Nearest && out == in) return {{o, 1}};
    if (mode == Mode::Nearest && out == 2 * in) return {{o / 2, 1}};
    // PyTorch takes the nearest-neighbour scale in float32.
    const float s =
        given ? static_cast<float>(1.0 / scale) : static_cast<float>(in) / static_cast<float>(out);
    const double pos = mode == Mode::Nearest
                           ? static_cast<double>(static_cast<float>(o) * s)
                           : static_cast<double>(static_cast<float>((o + 0.5) * s));
    return {{std::min(static_cast<int64_t>(std::floor(pos)), in - 1), 1}};
  }
  const double s = align_corners ? (out > 1 ? static_cast<double>(in - 1) / (out - 1) : 0.0)
                   : given       ? 1.0 / scale
                                 : static_cast<double>(in) / out;
  double src = align_corners ? s * o : s * (o + 0.5) - 0.5;
  if (mode == Mode::Linear) {
    if (out == in) return {{o, 1}, {o, 0}};
    src = std::max(src, 0.0);
    const int64_t i0 = std::min(static_cast<int64_t>(std::floor(src)), in - 1);
    const double l = std::clamp(src - static_cast<double>(i0), 0.0, 1.0);
    return {{i0, 1 - l}, {std::min(i0 + 1, in - 1), l}};
  }
  const double f = std::floor(src), t = src - f;
  std::vector<Tap> r;
  for (int64_t j = -1; j <= 2; ++j)
    r.push_back({std::clamp(static_cast<int64_t>(f) + j, int64_t{0}, in - 1),
                 keys(t - static_cast<double>(j))});
  return r;
}

// args: (self, output_size, [align_corners,] scales...)
std::vector<Tensor> reference(Mode mode, const Stack& a) {
  const bool interpolating = mode == Mode::Linear || mode == Mode::Cubic;
  const Tensor& x = a[0].tensor();
  const IntArrayRef out = a[1].int_list();
  const bool align_corners = interpolating && a[2].to_bool();
  const size_t first_scale = interpolating ? 3 : 2;
  const auto D = static_cast<int64_t>(out.size());
  Shape in(x.sizes().begin() + 2, x.sizes().end()), out_shape{x.size(0), x.size(1)};
  for (int64_t s : out) out_shape.push_back(s);
  std::vector<std::vector<std::vector<Tap>>> per_dim(static_cast<size_t>(D));
  for (int64_t d = 0; d < D; ++d) {
    const IValue& sc = a[first_scale + static_cast<size_t>(d)];
    const double scale = sc.is_none() ? 0.0 : sc.to_double();
    for (int64_t o = 0; o < out[static_cast<size_t>(d)]; ++o)
      per_dim[static_cast<size_t>(d)].push_back(taps(
          mode, o, in[static_cast<size_t>(d)], out[static_cast<size_t>(d)], align_corners, scale));
  }
  const std::vector<double> v = x.to_vector<double>();
  int64_t in_plane = 1, out_plane = 1;
  for (int64_t d = 0; d < D; ++d) {
    in_plane *= in[static_cast<size_t>(d)];
    out_plane *= out[static_cast<size_t>(d)];
  }
  const int64_t planes = x.size(0) * x.size(1);
  std::vector<double> result(static_cast<size_t>(planes * out_plane));
  Shape o(static_cast<size_t>(D));
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t k = 0; k < out_plane; ++k) {
      int64_t rest = k;
      for (int64_t d = D - 1; d >= 0; --d) {
        o[static_cast<size_t>(d)] = rest % out[static_cast<size_t>(d)];
        rest /= out[static_cast<size_t>(d)];
      }
      // Every combination of one tap per dim.
      double sum = 0;
      Shape pick(static_cast<size_t>(D), 0);
      while (true) {
        double w = 1;
        int64_t offset = 0;
        for (int64_t d = 0; d < D; ++d) {
          const Tap& t =
              per_dim[static_cast<size_t>(d)][static_cast<size_t>(o[static_cast<size_t>(d)])]
                     [static_cast<size_t>(pick[static_cast<size_t>(d)])];
          w *= t.weight;
          offset = offset * in[static_cast<size_t>(d)] + t.index;
        }
        sum += w * v[static_cast<size_t>(p * in_plane + offset)];
        int64_t d = D - 1;
        for (; d >= 0; --d) {
          const size_t n = per_dim[static_cast<size_t>(d)][0].size();
          if (static_cast<size_t>(++pick[static_cast<size_t>(d)]) < n) break;
          pick[static_cast<size_t>(d)] = 0;
        }
        if (d < 0) break;
      }
      result[static_cast<size_t>(p * out_plane + k)] = sum;
    }
  }
  return {from_vector(result, out_shape).to(x.dtype())};
}

IValue ints(Shape v) { return IValue(std::move(v)); }
IValue scale(std::optional<double> s) { return s ? IValue(*s) : IValue(); }

// One sample: input shape, output size, align_corners, and the scales (one per spatial dim).
struct Case {
  Shape input, output;
  bool align_corners = false;
  std::vector<std::optional<double>> scales;  // empty: none
  std::string description;
  Layout layout = Layout::Contiguous;
};

Stack args_of(const Case& c, const Tensor& x, bool interpolating) {
  Stack s{x, ints(c.output)};
  if (interpolating) s.push_back(c.align_corners);
  for (size_t d = 0; d < c.output.size(); ++d)
    s.push_back(c.scales.empty() ? IValue() : scale(c.scales[d]));
  return s;
}

// Cases for D spatial dims; `interpolating` adds align_corners both ways.
std::vector<Case> cases(int D, bool interpolating) {
  auto dims = [&](std::initializer_list<int64_t> per) {
    Shape s(per.begin(), per.begin() + D);
    return s;
  };
  auto sc = [&](double v) { return std::vector<std::optional<double>>(static_cast<size_t>(D), v); };
  std::vector<Case> c;
  auto add = [&](Shape in, Shape out, bool ac, std::vector<std::optional<double>> scales,
                 std::string desc, Layout layout = Layout::Contiguous) {
    Shape shape{2, 3};
    shape.insert(shape.end(), in.begin(), in.end());
    c.push_back({shape, out, ac, std::move(scales), std::move(desc), layout});
  };
  add(dims({3, 4, 2}), dims({5, 7, 3}), false, {}, "upsampling by non-integer ratios");
  add(dims({5, 6, 4}), dims({3, 4, 3}), false, {}, "downsampling");
  add(dims({5, 4, 3}), dims({8, 6, 5}), false, sc(1.7), "scale_factor 1.7 used for coordinates");
  add(dims({5, 7, 4}), dims({3, 4, 2}), false, sc(0.6), "scale_factor 0.6 (downsampling)");
  add(dims({3, 4, 2}), dims({6, 8, 4}), false, {}, "exactly twice the size");
  add(dims({3, 4, 2}), dims({3, 4, 2}), false, {}, "same size");
  add(dims({3, 3, 3}), dims({3, 3, 3}), false, sc(1.2), "same size from scale_factor 1.2");
  add(dims({1, 1, 1}), dims({3, 2, 4}), false, {}, "input size 1");
  add(dims({4, 3, 5}), dims({1, 1, 1}), false, {}, "output size 1");
  add(dims({4, 3, 2}), dims({6, 5, 3}), false, {}, "non-contiguous", Layout::NonContiguous);
  Case empty{{0, 3}, dims({5, 4, 3}), false, {}, "empty batch"};
  for (int64_t s : dims({3, 2, 2})) empty.input.push_back(s);
  c.push_back(empty);
  if (interpolating) {
    add(dims({3, 4, 2}), dims({5, 7, 3}), true, {}, "align_corners");
    add(dims({5, 6, 4}), dims({3, 4, 3}), true, {}, "align_corners, downsampling");
    add(dims({4, 3, 5}), dims({1, 1, 1}), true, {}, "align_corners, output size 1");
    add(dims({5, 4, 3}), dims({8, 6, 5}), true, sc(1.7), "align_corners ignores scale_factor");
  }
  return c;
}

std::vector<SampleInput> samples(int D, bool interpolating, ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  for (const Case& c : cases(D, interpolating))
    s.push_back(
        {args_of(c, make_tensor(c.input, dt, rng, -5, 5, c.layout), interpolating), c.description});
  return s;
}

// float64, at most 80 input elements.
std::vector<SampleInput> grad_samples(int D, bool interpolating, std::mt19937_64& rng) {
  const std::vector<Case> all = {
      {{1, 2, 3, 2, 2}, {5, 3, 3}, false, {}, "upsampling"},
      {{1, 2, 5, 3, 2}, {3, 2, 1}, false, {}, "downsampling"},
      {{1, 1, 4, 3, 3}, {6, 5, 5}, false, {{1.7}, {1.7}, {1.7}}, "scale_factor 1.7"},
      {{2, 1, 3, 3, 2}, {4, 5, 3}, true, {}, "align_corners"},
      {{1, 2, 4, 3, 2}, {5, 4, 3}, false, {}, "non-contiguous", Layout::NonContiguous},
  };
  std::vector<SampleInput> s;
  for (Case c : all) {
    c.input.resize(static_cast<size_t>(2 + D));
    c.output.resize(static_cast<size_t>(D));
    if (!c.scales.empty()) c.scales.resize(static_cast<size_t>(D));
    if (c.align_corners && !interpolating) continue;
    s.push_back({args_of(c, make_tensor(c.input, kFloat64, rng, -2, 2, c.layout), interpolating),
                 c.description});
  }
  return s;
}

std::vector<ErrorCase> errors(int D, bool interpolating) {
  auto input = [&](Shape spatial, int64_t channels = 2, ScalarType dt = kFloat32) {
    Shape s{1, channels};
    s.insert(s.end(), spatial.begin(), spatial.end());
    return zeros(s, dt);
  };
  const Shape in(static_cast<size_t>(D), 3), out(static_cast<size_t>(D), 4);
  auto c = [&](Tensor x, Shape o) {
    Case k{{}, std::move(o)};
    return args_of(k, x, interpolating);
  };
  Shape zero_spatial = in;
  zero_spatial.back() = 0;
  Shape zero_out = out;
  zero_out.front() = 0;
  Shape too_many = out;
  too_many.push_back(4);
  std::vector<ErrorCase> e = {
      {c(zeros(Shape(static_cast<size_t>(D + 1), 3)), out), ErrorKind::Shape,
       "input without a channel dim"},
      {c(input(in), too_many), ErrorKind::Value, "one output size too many"},
      {c(input(in), zero_out), ErrorKind::Value, "output size 0"},
      {c(input(in, 0), out), ErrorKind::Shape, "zero channels"},
      {c(input(zero_spatial), out), ErrorKind::Shape, "zero spatial size"},
      {c(input(in, 2, kBool), out), ErrorKind::DType, "bool input"}};
  if (interpolating) e.push_back({c(input(in, 2, kUInt8), out), ErrorKind::DType, "uint8 input"});
  return e;
}

std::pair<double, double> tolerance(ScalarType dt) {
  // Reduced floats: PyTorch stores the weights in the input's dtype (so does the op), the
  // reference keeps them exact.
  if (dt == kFloat16) return {1e-2, 1e-2};
  if (dt == kBFloat16) return {8e-2, 3e-2};
  return default_tolerance(dt);
}

void register_upsample(const char* name, Mode mode, int D) {
  const bool interpolating = mode == Mode::Linear || mode == Mode::Cubic;
  register_op_info(
      {.name = name,
       .samples = [=](ScalarType dt,
                      std::mt19937_64& rng) { return samples(D, interpolating, dt, rng); },
       .reference = [=](const Stack& a) { return reference(mode, a); },
       .error_cases = [=] { return errors(D, interpolating); },
       .tolerance = tolerance,
       .grad_samples = [=](std::mt19937_64& rng) { return grad_samples(D, interpolating, rng); }});
}

const bool registered = [] {
  register_upsample("upsample_nearest1d", Mode::Nearest, 1);
  register_upsample("upsample_nearest2d", Mode::Nearest, 2);
  register_upsample("upsample_nearest3d", Mode::Nearest, 3);
  register_upsample("_upsample_nearest_exact1d", Mode::NearestExact, 1);
  register_upsample("_upsample_nearest_exact2d", Mode::NearestExact, 2);
  register_upsample("_upsample_nearest_exact3d", Mode::NearestExact, 3);
  register_upsample("upsample_linear1d", Mode::Linear, 1);
  register_upsample("upsample_bilinear2d", Mode::Linear, 2);
  register_upsample("upsample_trilinear3d", Mode::Linear, 3);
  register_upsample("upsample_bicubic2d", Mode::Cubic, 2);
  return true;
}();

}  // namespace
}  // namespace kiln::testing
