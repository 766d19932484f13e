// OpInfos for conv1d, conv2d, conv3d and their padding-string overloads. The reference is a
// direct convolution in float64 (for_each_tap, tests/ops/conv_ref.h).
#include "tests/ops/conv_ref.h"
#include "tests/ops/linalg_ref.h"

namespace kiln::testing {
namespace {

using Shape = std::vector<int64_t>;

std::pair<double, double> conv_tolerance(ScalarType dt) {
  if (dt == kFloat32) return {1e-4, 1e-5};
  if (dt == kFloat64) return {1e-10, 1e-10};
  return default_tolerance(dt);
}

// Direct convolution (for_each_tap in conv_ref.h), for 1-, 2- and 3-D.
Tensor conv_reference(const Stack& a) {
  const Tensor& input = a[0].tensor();
  const Tensor& weight = a[1].tensor();
  const int spatial = static_cast<int>(weight.dim()) - 2;
  const bool batched = input.dim() == spatial + 2;
  ConvRef g;
  g.groups = a[6].to_int();
  g.n = batched ? int64_t{input.size(0)} : 1;
  g.cx = input.size(batched ? 1 : 0), g.cy = weight.size(0);
  g.x = ref_sizes(input, spatial), g.k = ref_sizes(weight, spatial);
  g.stride = ref_dims(a[3].int_list(), spatial, 1);
  g.dilation = ref_dims(a[5].int_list(), spatial, 1);
  std::array<int64_t, 3> pad_after{0, 0, 0};
  if (a[4].is_string()) {
    for (int i = 0; i < 3; ++i) {
      const int64_t total = a[4].string() == "same" ? g.dilation[i] * (g.k[i] - 1) : 0;
      g.pad[i] = total / 2, pad_after[i] = total - g.pad[i];
    }
  } else {
    g.pad = pad_after = ref_dims(a[4].int_list(), spatial, 0);
  }
  for (int i = 0; i < 3; ++i)
    g.y[i] =
        (g.x[i] + g.pad[i] + pad_after[i] - g.dilation[i] * (g.k[i] - 1) - 1) / g.stride[i] + 1;
  const std::vector<double> x = input.to_vector<double>(), w = weight.to_vector<double>();
  const int64_t positions = g.y[0] * g.y[1] * g.y[2];
  std::vector<double> out(static_cast<size_t>(g.n * g.cy * positions), 0.0);
  if (!a[2].is_none()) add_bias_ref(out, a[2].tensor().to_vector<double>(), g.n, g.cy, positions);
  for_each_tap(g, [&](size_t xi, size_t yi, size_t wi) { out[yi] += x[xi] * w[wi]; });
  return from_vector(out, conv_shape_ref(batched, g.n, g.cy, g.y, spatial)).to(input.dtype());
}

Tensor mk(Shape s, ScalarType dt, std::mt19937_64& rng, Layout layout = Layout::Contiguous) {
  return make_tensor(s, dt, rng, -2, 2, layout);
}
IValue ints(Shape v) { return IValue(std::move(v)); }

std::vector<SampleInput> conv2d_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto add = [&](Tensor x, Tensor w, IValue b, Shape st, Shape pd, Shape dl, int64_t g,
                 std::string d) {
    s.push_back({{x, w, b, ints(st), ints(pd), ints(dl), g}, d});
  };
  add(mk({2, 3, 6, 7}, dt, rng), mk({4, 3, 3, 3}, dt, rng), mk({4}, dt, rng), {1}, {0}, {1}, 1,
      "3x3, bias");
  add(mk({2, 3, 6, 7}, dt, rng), mk({4, 3, 3, 2}, dt, rng), IValue(), {2, 1}, {1, 2}, {1}, 1,
      "stride (2, 1), padding (1, 2), no bias");
  add(mk({1, 4, 9, 8}, dt, rng), mk({6, 2, 3, 3}, dt, rng), mk({6}, dt, rng), {1}, {2}, {2, 3}, 2,
      "groups 2, dilation (2, 3)");
  add(mk({2, 4, 5, 5}, dt, rng), mk({4, 1, 3, 3}, dt, rng), IValue(), {1}, {1}, {1}, 4,
      "depthwise");
  add(mk({2, 3, 4, 5}, dt, rng), mk({5, 3, 1, 1}, dt, rng), mk({5}, dt, rng), {1}, {0}, {1}, 1,
      "1x1 (no unrolling)");
  add(mk({3, 6, 7}, dt, rng), mk({2, 3, 2, 2}, dt, rng), mk({2}, dt, rng), {1}, {0}, {1}, 1,
      "unbatched");
  add(mk({2, 3, 6, 7}, dt, rng).transpose(2, 3), mk({4, 3, 3, 3}, dt, rng, Layout::NonContiguous),
      IValue(), {1}, {1}, {1}, 1, "non-contiguous input and weight");
  // C_g * kW >= 64: the products run per kernel row (Note [Convolution by kernel rows]).
  add(mk({2, 24, 6, 7}, dt, rng), mk({5, 24, 3, 3}, dt, rng), mk({5}, dt, rng), {1}, {1}, {1}, 1,
      "24 channels, padding 1 (per kernel row)");
  add(mk({2, 64, 7, 6}, dt, rng), mk({6, 32, 3, 2}, dt, rng), IValue(), {2, 1}, {2, 1}, {2, 1}, 2,
      "groups 2, stride (2, 1), padding (2, 1), dilation (2, 1) (per kernel row)");
  add(mk({3, 16, 4, 4}, dt, rng), mk({4, 16, 5, 5}, dt, rng), mk({4}, dt, rng), {1}, {3}, {1}, 1,
      "padding 3 > kernel reach: output rows no kernel row reaches (per kernel row)");
  // Note [Convolution rows as one block]: stride 1 and outputs as wide as the input.
  add(mk({2, 3, 9, 10}, dt, rng), mk({4, 3, 3, 3}, dt, rng), mk({4}, dt, rng), {1}, {2}, {2}, 1,
      "dilation 2, padding 2: rows as one shifted block");
  add(mk({2, 24, 7, 9}, dt, rng), mk({5, 24, 3, 5}, dt, rng), IValue(), {1}, {1, 2}, {1}, 1,
      "3x5, padding (1, 2): rows as one block, per kernel row");
  add(mk({2, 3, 5, 8}, dt, rng), mk({4, 3, 1, 3}, dt, rng), mk({4}, dt, rng), {1}, {0, 1}, {1}, 1,
      "1x3, padding (0, 1): rows as one block");
  // Note [Shallow products]: unrolled depth <= 16 runs as vector loops, not BLAS; 6 output
  // channels (a block of four rows and two single rows) and 143 or 110 positions (vectors and a
  // scalar tail).
  add(mk({2, 1, 13, 11}, dt, rng), mk({6, 1, 3, 3}, dt, rng), mk({6}, dt, rng), {1}, {1}, {1}, 1,
      "one channel, 3x3, padding 1 (shallow product)");
  add(mk({3, 1, 13, 13}, dt, rng), mk({5, 1, 4, 4}, dt, rng), IValue(), {1}, {0}, {1}, 1,
      "one channel, 4x4: depth 16 (shallow product)");
  add(mk({2, 2, 10, 11}, dt, rng), mk({4, 2, 3, 3}, dt, rng), mk({4}, dt, rng), {1}, {1}, {1}, 1,
      "two channels, 3x3: depth 18 (BLAS)");
  add(mk({0, 3, 6, 7}, dt, rng), mk({4, 3, 3, 3}, dt, rng), mk({4}, dt, rng), {1}, {0}, {1}, 1,
      "zero batch");
  add(mk({2, 0, 4, 4}, dt, rng), mk({3, 0, 2, 2}, dt, rng), mk({3}, dt, rng), {1}, {0}, {1}, 1,
      "zero input channels: bias only");
  return s;
}

std::vector<SampleInput> conv1d_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto add = [&](Tensor x, Tensor w, IValue b, Shape st, Shape pd, Shape dl, int64_t g,
                 std::string d) {
    s.push_back({{x, w, b, ints(st), ints(pd), ints(dl), g}, d});
  };
  add(mk({2, 3, 10}, dt, rng), mk({4, 3, 3}, dt, rng), mk({4}, dt, rng), {1}, {0}, {1}, 1,
      "k3, bias");
  add(mk({2, 4, 11}, dt, rng), mk({6, 2, 3}, dt, rng), IValue(), {2}, {1}, {2}, 2,
      "stride 2, padding 1, dilation 2, groups 2");
  add(mk({3, 10}, dt, rng), mk({2, 3, 4}, dt, rng), mk({2}, dt, rng), {1}, {0}, {1}, 1,
      "unbatched");
  add(mk({2, 10, 3}, dt, rng).transpose(1, 2), mk({4, 3, 3}, dt, rng), IValue(), {1}, {0}, {1}, 1,
      "non-contiguous input");
  add(mk({0, 3, 10}, dt, rng), mk({4, 3, 3}, dt, rng), IValue(), {1}, {0}, {1}, 1, "zero batch");
  return s;
}

std::vector<SampleInput> conv3d_samples(ScalarType dt, std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto add = [&](Tensor x, Tensor w, IValue b, Shape st, Shape pd, Shape dl, int64_t g,
                 std::string d) {
    s.push_back({{x, w, b, ints(st), ints(pd), ints(dl), g}, d});
  };
  add(mk({2, 3, 4, 5, 5}, dt, rng), mk({4, 3, 3, 3, 3}, dt, rng), mk({4}, dt, rng), {1}, {0}, {1},
      1, "3x3x3, bias");
  add(mk({2, 2, 5, 6, 5}, dt, rng), mk({3, 2, 2, 3, 2}, dt, rng), IValue(), {2, 1, 2}, {1, 0, 1},
      {1}, 1, "stride (2, 1, 2), padding (1, 0, 1), no bias");
  add(mk({1, 4, 5, 5, 6}, dt, rng), mk({4, 2, 2, 2, 3}, dt, rng), mk({4}, dt, rng), {1}, {1},
      {2, 1, 2}, 2, "groups 2, dilation (2, 1, 2)");
  add(mk({2, 3, 3, 4, 4}, dt, rng), mk({2, 3, 1, 1, 1}, dt, rng), mk({2}, dt, rng), {1}, {0}, {1},
      1, "1x1x1 (no unrolling)");
  add(mk({2, 2, 3, 4, 4}, dt, rng), mk({3, 2, 1, 3, 3}, dt, rng), IValue(), {1}, {0, 1, 1}, {1}, 1,
      "kernel depth 1 over depth 3");
  add(mk({1, 2, 2, 3, 3}, dt, rng), mk({2, 2, 2, 2, 2}, dt, rng), mk({2}, dt, rng), {1}, {2, 1, 1},
      {1}, 1, "depth padding 2: output depths no tap reaches");
  add(mk({3, 4, 4, 5}, dt, rng), mk({2, 3, 2, 2, 2}, dt, rng), mk({2}, dt, rng), {1}, {0}, {1}, 1,
      "unbatched");
  add(mk({2, 3, 3, 5, 4}, dt, rng).transpose(3, 4),
      mk({4, 3, 2, 2, 2}, dt, rng, Layout::NonContiguous), IValue(), {1}, {1}, {1}, 1,
      "non-contiguous input and weight");
  // A depth of 1 everywhere is a 2-D convolution: the planar kernels, per kernel row at 24
  // channels (Note [Convolution by kernel rows]).
  add(mk({2, 3, 1, 5, 5}, dt, rng), mk({4, 3, 1, 3, 3}, dt, rng), mk({4}, dt, rng), {1}, {0, 1, 1},
      {1}, 1, "depth 1 (planar)");
  add(mk({2, 24, 1, 6, 7}, dt, rng), mk({5, 24, 1, 3, 3}, dt, rng), IValue(), {1}, {0, 1, 1}, {1},
      1, "depth 1, 24 channels (planar, per kernel row)");
  add(mk({2, 24, 3, 4, 4}, dt, rng), mk({4, 24, 2, 3, 3}, dt, rng), mk({4}, dt, rng), {1}, {0}, {1},
      1, "24 channels, 2x3x3");
  add(mk({2, 1, 4, 5, 6}, dt, rng), mk({5, 1, 2, 2, 2}, dt, rng), mk({5}, dt, rng), {1}, {0}, {1},
      1, "one channel, 2x2x2: depth 8 (shallow product)");
  add(mk({1, 2, 1, 1, 1}, dt, rng), mk({3, 2, 1, 1, 1}, dt, rng), mk({3}, dt, rng), {1}, {0}, {1},
      1, "sizes 1");
  add(mk({0, 3, 4, 4, 4}, dt, rng), mk({4, 3, 3, 3, 3}, dt, rng), mk({4}, dt, rng), {1}, {0}, {1},
      1, "zero batch");
  add(mk({2, 0, 3, 3, 3}, dt, rng), mk({3, 0, 2, 2, 2}, dt, rng), mk({3}, dt, rng), {1}, {0}, {1},
      1, "zero input channels: bias only");
  return s;
}

// The padding-string overloads: "same" (odd and even kernels, dilation) and "valid".
std::vector<SampleInput> padding_samples(ScalarType dt, std::mt19937_64& rng, int spatial) {
  std::vector<SampleInput> s;
  const Shape x = spatial == 3   ? Shape{2, 3, 4, 4, 5}
                  : spatial == 2 ? Shape{2, 3, 6, 7}
                                 : Shape{2, 3, 9};
  for (int64_t k : {3, 4}) {
    Shape w = spatial == 3   ? Shape{4, 3, k, k - 1, 2}
              : spatial == 2 ? Shape{4, 3, k, k - 1}
                             : Shape{4, 3, k};
    s.push_back({{mk(x, dt, rng), mk(w, dt, rng), mk({4}, dt, rng), ints({1}), "same", ints({1}),
                  int64_t{1}},
                 "same, kernel " + std::to_string(k)});
    s.push_back(
        {{mk(x, dt, rng), mk(w, dt, rng), IValue(), ints({1}), "same", ints({2}), int64_t{1}},
         "same, dilation 2, kernel " + std::to_string(k)});
    s.push_back(
        {{mk(x, dt, rng), mk(w, dt, rng), IValue(), ints({2}), "valid", ints({1}), int64_t{1}},
         "valid, stride 2, kernel " + std::to_string(k)});
  }
  return s;
}

// ---- gradient check samples (float64, at most 80 elements in input, weight and bias) ----

Tensor g64(Shape s, std::mt19937_64& rng, Layout layout = Layout::Contiguous) {
  return make_tensor(s, kFloat64, rng, -1, 1, layout);
}

std::vector<SampleInput> conv2d_grad_samples(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto add = [&](Tensor x, Tensor w, IValue b, Shape st, Shape pd, Shape dl, int64_t g,
                 std::string d) {
    s.push_back({{x, w, b, ints(st), ints(pd), ints(dl), g}, d});
  };
  add(g64({1, 2, 4, 4}, rng), g64({2, 2, 2, 2}, rng), g64({2}, rng), {1}, {0}, {1}, 1, "2x2, bias");
  add(g64({1, 2, 4, 5}, rng), g64({3, 2, 2, 2}, rng), g64({3}, rng), {2, 1}, {1, 0}, {1}, 1,
      "stride (2, 1), padding (1, 0)");
  add(g64({1, 1, 5, 7}, rng), g64({2, 1, 3, 3}, rng), IValue(), {1, 3}, {0, 1}, {1}, 1,
      "stride (1, 3), padding (0, 1)");
  add(g64({1, 2, 5, 5}, rng), g64({2, 1, 2, 2}, rng), g64({2}, rng), {1}, {1}, {2, 1}, 2,
      "groups 2, dilation (2, 1), padding 1");
  add(g64({1, 2, 4, 4}, rng), g64({4, 1, 3, 3}, rng), IValue(), {1}, {1}, {1}, 2,
      "depthwise, channel multiplier 2");
  add(g64({2, 3, 2, 3}, rng), g64({2, 3, 1, 1}, rng), g64({2}, rng), {1}, {0}, {1}, 1,
      "1x1 (no unrolling)");
  add(g64({3, 1, 4, 4}, rng), g64({2, 1, 3, 3}, rng), g64({2}, rng), {1}, {0}, {1}, 1,
      "3 samples (batch-parallel)");
  add(g64({2, 1, 5, 6}, rng), g64({5, 1, 3, 3}, rng), g64({5}, rng), {1}, {1}, {1}, 1,
      "one channel, padding 1: 30 positions (shallow product, vectors and a tail)");
  add(g64({2, 4, 4}, rng), g64({2, 2, 3, 3}, rng), g64({2}, rng), {1}, {1}, {1}, 1, "unbatched");
  add(g64({1, 2, 5, 4}, rng).transpose(2, 3), g64({2, 2, 2, 2}, rng, Layout::NonContiguous),
      IValue(), {1}, {0}, {1}, 1, "non-contiguous input and weight");
  return s;
}

std::vector<SampleInput> conv1d_grad_samples(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto add = [&](Tensor x, Tensor w, IValue b, Shape st, Shape pd, Shape dl, int64_t g,
                 std::string d) {
    s.push_back({{x, w, b, ints(st), ints(pd), ints(dl), g}, d});
  };
  add(g64({2, 2, 6}, rng), g64({3, 2, 3}, rng), g64({3}, rng), {1}, {0}, {1}, 1, "k3, bias");
  add(g64({2, 4, 7}, rng), g64({2, 2, 3}, rng), IValue(), {2}, {1}, {2}, 2,
      "stride 2, padding 1, dilation 2, groups 2");
  add(g64({3, 8}, rng), g64({2, 3, 4}, rng), g64({2}, rng), {1}, {0}, {1}, 1, "unbatched");
  add(g64({2, 8, 3}, rng).transpose(1, 2), g64({2, 3, 3}, rng), IValue(), {1}, {0}, {1}, 1,
      "non-contiguous input");
  return s;
}

// "same" with odd and even kernels and dilations (an odd total puts the extra zero at the end),
// and "valid".
std::vector<SampleInput> padding_grad_samples(std::mt19937_64& rng, int spatial) {
  std::vector<SampleInput> s;
  auto add = [&](Shape x, Shape w, bool bias, Shape st, std::string mode, Shape dl, std::string d) {
    s.push_back({{g64(x, rng), g64(w, rng), bias ? IValue(g64({w[0]}, rng)) : IValue(), ints(st),
                  mode, ints(dl), int64_t{1}},
                 d});
  };
  if (spatial == 3) {
    add({1, 1, 3, 3, 3}, {2, 1, 2, 3, 2}, true, {1}, "same", {1}, "same, kernel 2x3x2");
    add({1, 1, 3, 3, 4}, {2, 1, 2, 2, 2}, false, {1}, "same", {1, 1, 2},
        "same, kernel 2x2x2, dilation (1, 1, 2)");
    add({1, 2, 2, 3, 3}, {2, 2, 2, 2, 2}, false, {2}, "valid", {1}, "valid, stride 2");
  } else if (spatial == 2) {
    add({1, 2, 4, 5}, {2, 2, 3, 2}, true, {1}, "same", {1}, "same, kernel 3x2");
    add({1, 1, 5, 5}, {2, 1, 2, 2}, false, {1}, "same", {1, 3},
        "same, kernel 2x2, dilation (1, 3)");
    add({2, 4, 4}, {2, 2, 2, 2}, true, {1}, "same", {1}, "same, unbatched");
    add({1, 2, 5, 5}, {2, 2, 2, 2}, false, {2}, "valid", {1}, "valid, stride 2");
  } else {
    add({2, 2, 5}, {3, 2, 4}, true, {1}, "same", {1}, "same, kernel 4");
    add({2, 2, 6}, {2, 2, 2}, false, {1}, "same", {3}, "same, kernel 2, dilation 3");
    add({2, 2, 7}, {2, 2, 3}, false, {1}, "same", {2}, "same, kernel 3, dilation 2");
    add({2, 2, 7}, {2, 2, 3}, true, {2}, "valid", {1}, "valid, stride 2");
  }
  return s;
}

// At most 80 elements in input, weight and bias.
std::vector<SampleInput> conv3d_grad_samples(std::mt19937_64& rng) {
  std::vector<SampleInput> s;
  auto add = [&](Tensor x, Tensor w, IValue b, Shape st, Shape pd, Shape dl, int64_t g,
                 std::string d) {
    s.push_back({{x, w, b, ints(st), ints(pd), ints(dl), g}, d});
  };
  add(g64({1, 1, 3, 3, 3}, rng), g64({2, 1, 2, 2, 2}, rng), g64({2}, rng), {1}, {0}, {1}, 1,
      "2x2x2, bias");
  add(g64({1, 2, 2, 3, 3}, rng), g64({2, 1, 2, 2, 2}, rng), g64({2}, rng), {1, 2, 1}, {1, 0, 1},
      {1}, 2, "groups 2, stride (1, 2, 1), padding (1, 0, 1)");
  add(g64({1, 3, 3, 3}, rng), g64({2, 1, 2, 2, 2}, rng), IValue(), {1}, {0}, {1, 1, 2}, 1,
      "unbatched, dilation (1, 1, 2)");
  add(g64({2, 1, 2, 3, 3}, rng), g64({3, 1, 1, 2, 2}, rng), g64({3}, rng), {1}, {0}, {1}, 1,
      "two samples, kernel depth 1");
  add(g64({1, 1, 3, 4, 3}, rng).transpose(3, 4), g64({1, 1, 2, 2, 2}, rng, Layout::NonContiguous),
      IValue(), {1}, {1}, {1}, 1, "non-contiguous input and weight");
  return s;
}

std::vector<ErrorCase> conv3d_errors() {
  const Tensor x = zeros({1, 4, 4, 5, 5}), w = zeros({6, 2, 3, 3, 3});
  auto c = [](Tensor x, Tensor w, IValue b, Shape st, Shape pd, Shape dl, int64_t g) {
    return Stack{x, w, b, ints(st), ints(pd), ints(dl), g};
  };
  return {
      {c(x, w, IValue(), {1}, {0}, {1}, 1), ErrorKind::Shape, "channels 4 vs 2 * groups 1"},
      {c(x, zeros({6, 2, 3, 3}), IValue(), {1}, {0}, {1}, 2), ErrorKind::Shape, "4-D weight"},
      {c(zeros({4, 5, 5}), w, IValue(), {1}, {0}, {1}, 2), ErrorKind::Shape, "3-D input"},
      {c(x, zeros({6, 2, 5, 3, 3}), IValue(), {1}, {0}, {1}, 2), ErrorKind::Shape,
       "kernel depth 5 > input depth 4"},
      {c(x, w, IValue(), {1, 0, 1}, {0}, {1}, 2), ErrorKind::Value, "stride 0 in H"},
      {c(x, w, IValue(), {1, 1}, {0}, {1}, 2), ErrorKind::Value, "two strides for three dims"},
      {c(x, w, IValue(), {1}, {0, 0, -1}, {1}, 2), ErrorKind::Value, "negative padding"},
      {c(x, w, zeros({5}), {1}, {0}, {1}, 2), ErrorKind::Shape, "bias size"},
      {c(zeros({1, 4, 4, 5, 5}, kInt32), zeros({6, 2, 3, 3, 3}, kInt32), IValue(), {1}, {0}, {1},
         2),
       ErrorKind::DType, "int32"},
  };
}

std::vector<ErrorCase> conv2d_errors() {
  const Tensor x = zeros({1, 4, 5, 5}), w = zeros({6, 2, 3, 3});
  auto c = [](Tensor x, Tensor w, IValue b, Shape st, Shape pd, Shape dl, int64_t g) {
    return Stack{x, w, b, ints(st), ints(pd), ints(dl), g};
  };
  return {
      {c(x, w, IValue(), {1}, {0}, {1}, 1), ErrorKind::Shape, "channels 4 vs 2 * groups 1"},
      {c(x, zeros({5, 2, 3, 3}), IValue(), {1}, {0}, {1}, 2), ErrorKind::Shape,
       "5 out channels, groups 2"},
      {c(x, zeros({6, 2, 3}), IValue(), {1}, {0}, {1}, 2), ErrorKind::Shape, "3-D weight"},
      {c(zeros({4, 5}), w, IValue(), {1}, {0}, {1}, 2), ErrorKind::Shape, "2-D input"},
      {c(x, zeros({6, 2, 7, 7}), IValue(), {1}, {0}, {1}, 2), ErrorKind::Shape,
       "kernel larger than input"},
      {c(x, w, IValue(), {1}, {0}, {3}, 2), ErrorKind::Shape, "dilated kernel larger than input"},
      {c(x, w, IValue(), {0}, {0}, {1}, 2), ErrorKind::Value, "stride 0"},
      {c(x, w, IValue(), {1}, {-1}, {1}, 2), ErrorKind::Value, "negative padding"},
      {c(x, w, IValue(), {1}, {0}, {1}, 0), ErrorKind::Value, "groups 0"},
      {c(x, w, IValue(), {1, 1, 1}, {0}, {1}, 2), ErrorKind::Value, "three strides"},
      {c(x, w, zeros({5}), {1}, {0}, {1}, 2), ErrorKind::Shape, "bias size"},
      {c(x, zeros({6, 2, 3, 3}, kFloat64), IValue(), {1}, {0}, {1}, 2), ErrorKind::DType,
       "mixed dtypes"},
      {c(zeros({1, 4, 5, 5}, kInt32), zeros({6, 2, 3, 3}, kInt32), IValue(), {1}, {0}, {1}, 2),
       ErrorKind::DType, "int32"},
  };
}

const bool registered = [] {
  auto ref = [](const Stack& a) { return std::vector<Tensor>{conv_reference(a)}; };
  register_op_info({.name = "conv2d",
                    .samples = conv2d_samples,
                    .reference = ref,
                    .error_cases = conv2d_errors,
                    .tolerance = conv_tolerance,
                    .grad_samples = conv2d_grad_samples});
  register_op_info(
      {.name = "conv1d",
       .samples = conv1d_samples,
       .reference = ref,
       .error_cases =
           [] {
             const Tensor x = zeros({1, 4, 5});
             return std::vector<ErrorCase>{
                 {{x, zeros({6, 3, 3}), IValue(), ints({1}), ints({0}), ints({1}), int64_t{1}},
                  ErrorKind::Shape,
                  "channels"},
                 {{x, zeros({6, 4, 3, 3}), IValue(), ints({1}), ints({0}), ints({1}), int64_t{1}},
                  ErrorKind::Shape,
                  "4-D weight"},
                 {{x, zeros({6, 4, 9}), IValue(), ints({1}), ints({1}), ints({1}), int64_t{1}},
                  ErrorKind::Shape,
                  "kernel 9 > padded 7"},
                 {{x, zeros({6, 4, 3}), IValue(), ints({-2}), ints({0}), ints({1}), int64_t{1}},
                  ErrorKind::Value,
                  "negative stride"}};
           },
       .tolerance = conv_tolerance,
       .grad_samples = conv1d_grad_samples});
  register_op_info({.name = "conv3d",
                    .samples = conv3d_samples,
                    .reference = ref,
                    .error_cases = conv3d_errors,
                    .tolerance = conv_tolerance,
                    .grad_samples = conv3d_grad_samples});
  register_op_info(
      {.name = "conv3d.padding",
       .samples = [](ScalarType dt, std::mt19937_64& rng) { return padding_samples(dt, rng, 3); },
       .reference = ref,
       .error_cases =
           [] {
             const Tensor x = zeros({1, 4, 3, 5, 5}), w = zeros({6, 4, 3, 3, 3});
             return std::vector<ErrorCase>{
                 {{x, w, IValue(), ints({1, 1, 2}), "same", ints({1}), int64_t{1}},
                  ErrorKind::Value,
                  "same with stride 2 in W"},
                 {{x, zeros({6, 4, 4, 3, 3}), IValue(), ints({1}), "valid", ints({1}), int64_t{1}},
                  ErrorKind::Shape,
                  "valid, kernel depth 4 > input depth 3"}};
           },
       .tolerance = conv_tolerance,
       .grad_samples = [](std::mt19937_64& rng) { return padding_grad_samples(rng, 3); }});
  register_op_info(
      {.name = "conv2d.padding",
       .samples = [](ScalarType dt, std::mt19937_64& rng) { return padding_samples(dt, rng, 2); },
       .reference = ref,
       .error_cases =
           [] {
             const Tensor x = zeros({1, 4, 5, 5}), w = zeros({6, 4, 3, 3});
             return std::vector<ErrorCase>{
                 {{x, w, IValue(), ints({2}), "same", ints({1}), int64_t{1}},
                  ErrorKind::Value,
                  "same with stride 2"},
                 {{x, w, IValue(), ints({1}), "full", ints({1}), int64_t{1}},
                  ErrorKind::Value,
                  "unknown padding mode"},
                 {{x, zeros({6, 4, 7, 7}), IValue(), ints({1}), "valid", ints({1}), int64_t{1}},
                  ErrorKind::Shape,
                  "valid, kernel larger than input"}};
           },
       .tolerance = conv_tolerance,
       .grad_samples = [](std::mt19937_64& rng) { return padding_grad_samples(rng, 2); }});
  register_op_info(
      {.name = "conv1d.padding",
       .samples = [](ScalarType dt, std::mt19937_64& rng) { return padding_samples(dt, rng, 1); },
       .reference = ref,
       .error_cases =
           [] {
             return std::vector<ErrorCase>{{{zeros({1, 4, 5}), zeros({6, 4, 3}), IValue(),
                                             ints({2}), "same", ints({1}), int64_t{1}},
                                            ErrorKind::Value,
                                            "same with stride 2"}};
           },
       .tolerance = conv_tolerance,
       .grad_samples = [](std::mt19937_64& rng) { return padding_grad_samples(rng, 1); }});
  return true;
}();

}  // namespace
}  // namespace kiln::testing
