// Upsample / interpolate and PixelShuffle / PixelUnshuffle: values equal PyTorch's (literals from
// PyTorch 1.13 in float64; input k of each case is ((7 k) mod 11 - 5) / 2), the argument rules of
// torch.nn.functional.interpolate, the modules, and the same results and gradients compiled.
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"
#include "tests/capture/compare.h"

namespace kiln::nn {
namespace {

namespace F = functional;
using Shape = std::vector<int64_t>;

template <typename Kind, typename Fn>
std::string expect_error(Fn&& f) {
  try {
    f();
  } catch (const Kind& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong error kind: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error";
  return "";
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "\"" << part << "\" not in: " << text;
}

// Same shape and the same values.
bool same(const Tensor& a, const Tensor& b) {
  if (a.sizes().vec() != b.sizes().vec()) return false;
  return a.to_vector<double>() == b.to_vector<double>();
}

// The inputs the PyTorch literals were computed from.
Tensor input(Shape shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k)
    v[static_cast<size_t>(k)] = static_cast<double>((k * 7) % 11 - 5) / 2;
  return from_vector(v, shape);
}

void expect_values(const Tensor& got, Shape shape, const std::vector<double>& expected) {
  ASSERT_EQ(got.sizes().vec(), shape);
  const std::vector<double> v = got.to_vector<double>();
  ASSERT_EQ(v.size(), expected.size());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], expected[i], 1e-9) << "element " << i;
}

// ---- values: PyTorch's ----

TEST(Interpolate, BilinearMatchesPyTorchBothWaysOfAligningCorners) {
  const Tensor x = input({1, 1, 3, 4});
  expect_values(F::interpolate(x, {.scale_factor = {2}, .mode = "bilinear"}), {1, 1, 6, 8},
                {-2.5,   -1.625,   0.125,    0.5,      -0.5,     -0.125,  1.625,   2.5,
                 -1.75,  -1.21875, -0.15625, 0.21875,  -0.09375, 0.28125, 1.34375, 1.875,
                 -0.25,  -0.40625, -0.71875, -0.34375, 0.71875,  1.09375, 0.78125, 0.625,
                 -0.125, -0.28125, -0.59375, -0.21875, 0.84375,  0.875,   -0.125,  -0.625,
                 -1.375, -0.84375, 0.21875,  0.59375,  0.28125,  -0.375,  -1.375,  -1.875,
                 -2.0,   -1.125,   0.625,    1.0,      0.0,      -1.0,    -2.0,    -2.5});
  expect_values(
      F::interpolate(x, {.size = {5, 3}, .mode = "bilinear", .align_corners = true}), {1, 1, 5, 3},
      {-2.5, 0.0, 2.5, -1.0, 0.125, 1.25, 0.5, 0.25, 0.0, -0.75, 0.375, -1.25, -2.0, 0.5, -2.5});
}

TEST(Interpolate, BicubicMatchesPyTorchWithTheGivenScaleAndClampedBorders) {
  const Tensor x = input({1, 1, 3, 4});
  // 3 x 4 * 1.5 = 4 x 6: the coordinates use 1 / 1.5, not 3 / 4.
  expect_values(
      F::interpolate(x, {.scale_factor = {1.5}, .mode = "bicubic"}), {1, 1, 4, 6},
      {-3.1056797357, -0.5394422743, 1.1376671811,  -1.1810699588, 0.4960394965,  3.0622769579,
       -0.7859700521, -0.7670898438, -0.3422851562, 0.4916992188,  1.2280273438,  1.5494791667,
       0.5481549801,  -0.74130136,   -0.9324336634, 1.6298198517,  0.9617874711,  -0.7908649209,
       -1.8161309639, -0.1769929109, 1.1293858239,  0.2982279878,  -1.2414098669, -2.3665063175});
  expect_values(F::interpolate(x, {.size = {4, 5}, .mode = "bicubic", .align_corners = true}),
                {1, 1, 4, 5},
                {-2.5,          0.41796875,    0.0,          -0.41796875,  2.5,
                 -0.1666666667, -1.0979817708, 0.0862268519, 1.523473669,  1.0648148148,
                 0.0462962963,  -0.8850188079, 0.5188078704, 1.2056929977, -1.0648148148,
                 -2.0,          0.91796875,    1.015625,     -1.1640625,   -2.5});
}

TEST(Interpolate, LinearUsesTheScaleFactorUnlessRecomputed) {
  const Tensor x = input({1, 2, 5});
  expect_values(F::interpolate(x, {.scale_factor = {0.7}, .mode = "linear"}), {1, 2, 3},
                {-1.75, -0.2857142857, 2.3571428571, -0.75, 0.7142857143, -1.75});
  expect_values(
      F::interpolate(x, {.scale_factor = {0.7}, .mode = "linear", .recompute_scale_factor = true}),
      {1, 2, 3}, {-1.3333333333, -1.0, 1.1666666667, -0.3333333333, 0.0, 0.3333333333});
}

TEST(Interpolate, NearestAndNearestExactMatchPyTorch) {
  const Tensor x = input({1, 2, 5});
  expect_values(
      F::interpolate(x, {.scale_factor = {1.7}}), {1, 2, 8},
      {-2.5, -2.5, 1.0, 1.0, -1.0, -1.0, 2.5, 0.5, -1.5, -1.5, 2.0, 2.0, 0.0, 0.0, -2.0, 1.5});
  expect_values(
      F::interpolate(x, {.scale_factor = {1.7}, .mode = "nearest-exact"}), {1, 2, 8},
      {-2.5, -2.5, 1.0, -1.0, -1.0, 2.5, 2.5, 0.5, -1.5, -1.5, 2.0, 0.0, 0.0, -2.0, -2.0, 1.5});
  // One scale per dim; uint8 works for the nearest modes.
  const Tensor x3 = input({1, 1, 2, 3, 2});
  const std::vector<double> nearest3d = {-2.5, -2.5, 1.0,  1.0,  -1.0, -1.0, 2.5,  2.5,  0.5,
                                         0.5,  -1.5, -1.5, -2.5, -2.5, 1.0,  1.0,  -1.0, -1.0,
                                         2.5,  2.5,  0.5,  0.5,  -1.5, -1.5, 2.0,  2.0,  0.0,
                                         0.0,  -2.0, -2.0, 1.5,  1.5,  -0.5, -0.5, -2.5, -2.5};
  expect_values(F::interpolate(x3, {.scale_factor = {1.5, 1, 2}}), {1, 1, 3, 3, 4}, nearest3d);
  const Tensor bytes = ((x3 + 3.0) * 2.0).to(kUInt8);
  std::vector<double> shifted;
  for (double v : nearest3d) shifted.push_back((v + 3) * 2);
  expect_values(F::interpolate(bytes, {.scale_factor = {1.5, 1, 2}}), {1, 1, 3, 3, 4}, shifted);
}

TEST(Interpolate, TrilinearAndAreaMatchPyTorch) {
  expect_values(
      F::interpolate(input({1, 1, 2, 3, 2}), {.size = {3, 4, 3}, .mode = "trilinear"}),
      {1, 1, 3, 4, 3},
      {-2.5,  -0.75, 1.0, -1.5625,  0.1875,   1.9375, -0.4375, 0.28125,  1.0, 0.5,  -0.5, -1.5,
       -0.25, 0.125, 0.5, -1.03125, 0.203125, 1.4375, -0.9375, -0.21875, 0.5, 0.0,  -1.0, -2.0,
       2.0,   1.0,   0.0, -0.5,     0.21875,  0.9375, -1.4375, -0.71875, 0.0, -0.5, -1.5, -2.5});
  expect_values(
      F::interpolate(input({1, 1, 5, 7}), {.size = {2, 3}, .mode = "area"}), {1, 1, 2, 3},
      {-0.1666666667, 0.1111111111, -0.2222222222, -0.0555555556, 0.2222222222, -0.1111111111});
  expect_values(F::interpolate(input({1, 2, 5}), {.size = {3}, .mode = "area"}), {1, 2, 3},
                {-0.75, 0.8333333333, 1.5, 0.25, 0.0, -0.25});
  expect_values(F::interpolate(input({1, 1, 3, 4, 5}), {.size = {2, 2, 3}, .mode = "area"}),
                {1, 1, 2, 2, 3},
                {0.375, 0.125, 0.5625, -0.375, -0.1666666667, -0.1875, 0.25, 0.0, -0.25, 0.1875,
                 0.1666666667, 0.375});
}

// PyTorch interpolates even at an unchanged size (taps o and o, weights 1 and 0), so an inf
// there becomes NaN, as it does in PyTorch.
TEST(Interpolate, LinearAtTheSameSizeTakesBothTapsAsPyTorch) {
  const Tensor x = from_vector(std::vector<double>{1, INFINITY, 2}, Shape{1, 1, 3});
  const std::vector<double> v =
      F::interpolate(x, {.size = {3}, .mode = "linear"}).to_vector<double>();
  EXPECT_EQ(v[0], 1);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[2], 2);
  const Tensor ramp = input({2, 3, 4, 5});
  EXPECT_TRUE(same(F::interpolate(ramp, {.size = {4, 5}, .mode = "bilinear"}), ramp));
}

TEST(Interpolate, SizesOneAndAnEmptyBatch) {
  const Tensor one = input({2, 3, 1, 1});
  // Every tap of a size-1 dim is position 0; the cubic weights sum to 1 (up to rounding).
  const Tensor up = F::interpolate(one, {.size = {3, 2}, .mode = "bicubic"});
  EXPECT_EQ(up.sizes().vec(), (Shape{2, 3, 3, 2}));
  const double gap = (up - one.expand({2, 3, 3, 2})).abs().max().item<double>();
  EXPECT_LT(gap, 1e-12);
  const Tensor down = F::interpolate(input({1, 2, 4, 3}), {.size = {1}, .mode = "bilinear"});
  EXPECT_EQ(down.sizes().vec(), (Shape{1, 2, 1, 1}));
  const Tensor empty =
      F::interpolate(zeros({0, 3, 4, 4}), {.scale_factor = {2}, .mode = "bilinear"});
  EXPECT_EQ(empty.sizes().vec(), (Shape{0, 3, 8, 8}));
}

// ---- argument rules (torch.nn.functional.interpolate's) ----

TEST(Interpolate, RejectsBadArgumentsNamingThem) {
  const Tensor x = zeros({1, 2, 4, 4});
  expect_contains(
      expect_error<ValueError>([&] { F::interpolate(x, {.size = {8}, .align_corners = false}); }),
      "align_corners can only be set with the interpolating modes");
  expect_error<ValueError>(
      [&] { F::interpolate(x, {.size = {8}, .mode = "nearest-exact", .align_corners = true}); });
  expect_contains(expect_error<ValueError>([&] { F::interpolate(x, {}); }),
                  "exactly one of size and scale_factor (got neither)");
  expect_contains(
      expect_error<ValueError>([&] { F::interpolate(x, {.size = {8}, .scale_factor = {2}}); }),
      "(got both)");
  expect_contains(expect_error<ShapeError>([&] {
                    F::interpolate(zeros({1, 2, 4}), {.size = {8}, .mode = "bilinear"});
                  }),
                  "mode 'bilinear' needs a 4-D input");
  expect_error<ShapeError>([&] { F::interpolate(x, {.size = {8}, .mode = "trilinear"}); });
  expect_error<ShapeError>([&] { F::interpolate(zeros({2, 4}), {.size = {8}}); });
  expect_contains(
      expect_error<ValueError>([&] { F::interpolate(x, {.size = {8}, .mode = "cubic"}); }),
      "unknown mode 'cubic'");
  expect_contains(expect_error<ValueError>(
                      [&] { F::interpolate(x, {.size = {8}, .recompute_scale_factor = true}); }),
                  "recompute_scale_factor is not meaningful with an explicit size");
  expect_contains(expect_error<ValueError>([&] {
                    F::interpolate(x, {.size = {8, 8, 8}});
                  }),
                  "one value or one per spatial dim (2)");
  expect_contains(expect_error<ValueError>([&] { F::interpolate(x, {.scale_factor = {0.2}}); }),
                  "gives an output size of 0");
  expect_error<DTypeError>(
      [&] { F::interpolate(x.to(kInt32), {.size = {8}, .mode = "bilinear"}); });
}

// ---- the modules ----

TEST(UpsampleModule, ForwardIsInterpolateAndPrintsAsPyTorch) {
  Upsample up({.scale_factor = {2, 2}, .mode = "bilinear", .align_corners = false});
  const Tensor x = input({2, 3, 3, 4});
  EXPECT_TRUE(same(up(x), F::interpolate(x, up.options)));
  EXPECT_EQ(up.repr(), "Upsample(scale_factor=(2.0, 2.0), mode='bilinear')");
  EXPECT_EQ(Upsample({.size = {5}}).repr(), "Upsample(size=5, mode='nearest')");
  EXPECT_EQ(Upsample({.scale_factor = {1.5}, .mode = "bicubic"}).repr(),
            "Upsample(scale_factor=1.5, mode='bicubic')");
  EXPECT_TRUE(up.parameters().empty());
}

TEST(UpsampleModule, ChecksItsModeWhenBuiltAndItsInputWhenRun) {
  expect_error<ValueError>([] { Upsample({.size = {4}, .mode = "box"}); });
  expect_error<ValueError>([] { Upsample({.size = {4}, .align_corners = true}); });
  Upsample no_size({});  // as PyTorch: an error only when it runs
  expect_contains(expect_error<ValueError>([&] { no_size(zeros({1, 1, 4})); }), "Upsample(");
  Upsample bilinear({.size = {4}, .mode = "bilinear"});
  expect_contains(expect_error<ShapeError>([&] {
                    bilinear(zeros({1, 1, 4}));
                  }),
                  "Upsample(size=4, mode='bilinear'): interpolate: mode 'bilinear' needs");
}

TEST(PixelShuffleModule, ShufflesAsPyTorchAndUnshuffleUndoesIt) {
  PixelShuffle shuffle(2);
  expect_values(
      shuffle(input({1, 8, 2, 3})), {1, 2, 4, 6},
      {-2.5, 2.0,  1.0,  0.0,  -1.0, -2.0, 1.0, 0.0, -1.0, -2.0, 2.5, 1.5, 2.5, 1.5,  0.5,  -0.5,
       -1.5, -2.5, 0.5,  -0.5, -1.5, -2.5, 2.0, 1.0, -1.0, -2.0, 2.5, 1.5, 0.5, -0.5, 2.5,  1.5,
       0.5,  -0.5, -1.5, -2.5, -1.5, -2.5, 2.0, 1.0, 0.0,  -1.0, 2.0, 1.0, 0.0, -1.0, -2.0, 2.5});
  PixelUnshuffle unshuffle(2);
  expect_values(unshuffle(input({1, 1, 4, 6})), {1, 4, 2, 3},
                {-2.5, -1.0, 0.5,  1.0, 2.5, -1.5, 1.0, 2.5, -1.5, -1.0, 0.5,  2.0,
                 2.0,  -2.0, -0.5, 0.0, 1.5, -2.5, 0.0, 1.5, -2.5, -2.0, -0.5, 1.0});
  const Tensor x = randn({2, 3, 12, 6, 4});
  EXPECT_TRUE(same(unshuffle(shuffle(x)), x));
  EXPECT_EQ(shuffle.repr(), "PixelShuffle(upscale_factor=2)");
  EXPECT_EQ(PixelUnshuffle(3).repr(), "PixelUnshuffle(downscale_factor=3)");
  // Never a view of the input, even for a factor of 1.
  const Tensor y = PixelShuffle(1)(x);
  EXPECT_TRUE(same(y, x));
  EXPECT_NE(y.data_ptr(), x.data_ptr());
}

TEST(PixelShuffleModule, RejectsFactorsThatDoNotDivideTheInput) {
  expect_error<ValueError>([] { PixelShuffle(0); });
  expect_error<ValueError>([] { PixelUnshuffle(-1); });
  expect_contains(expect_error<ShapeError>([] {
                    PixelShuffle(2)(zeros({1, 6, 2, 2}));
                  }),
                  "PixelShuffle(upscale_factor=2): pixel_shuffle: the input's channel dim (size 6");
  expect_contains(expect_error<ShapeError>([] {
                    PixelUnshuffle(2)(zeros({1, 1, 4, 5}));
                  }),
                  "must be divisible by downscale_factor 2");
  expect_error<ShapeError>([] { PixelShuffle(2)(zeros({4, 4})); });
}

// ---- compiled ----

// Every mode on one input of its rank, the results flattened into one tensor: one compiled
// forward and one compiled loss (forward and backward) cover them all.
Tensor every_mode(const Tensor& x3, const Tensor& x4, const Tensor& x5, const Tensor& one) {
  const std::vector<std::pair<const Tensor*, F::InterpolateOptions>> cases = {
      {&x4, {.scale_factor = {1.7}, .mode = "bilinear"}},
      {&x4, {.size = {3, 7}, .mode = "bilinear", .align_corners = true}},
      {&x4, {.scale_factor = {1.5}, .mode = "bicubic"}},
      {&x4, {.scale_factor = {1.7}}},
      {&x3, {.size = {4}, .mode = "linear"}},
      {&x3, {.size = {8}, .mode = "nearest-exact"}},
      {&x5, {.scale_factor = {2, 1.5, 1}, .mode = "trilinear"}},
      {&x5, {.size = {3, 3, 1}}},
      {&one, {.size = {3, 2}, .mode = "bicubic"}},  // input size 1
  };
  std::vector<Tensor> flat;
  for (const auto& [x, options] : cases) flat.push_back(F::interpolate(*x, options).flatten());
  return cat(flat);
}

std::vector<Tensor> every_mode_inputs() {
  return {randn({2, 2, 6}), randn({2, 3, 5, 4}), randn({1, 2, 3, 2, 2}), randn({1, 2, 1, 1})};
}

TEST(CompiledUpsample, EveryModeMatchesEager) {
  const std::vector<Tensor> x = every_mode_inputs();
  auto f = compile(every_mode, testing::inductor());
  testing::expect_equal(f(x[0], x[1], x[2], x[3]), every_mode(x[0], x[1], x[2], x[3]));
}

TEST(CompiledUpsample, InputGradientsOfEveryModeMatchEager) {
  const std::vector<Tensor> inputs = every_mode_inputs();
  const Tensor w = randn(every_mode(inputs[0], inputs[1], inputs[2], inputs[3]).sizes().vec());
  auto loss = [&w](const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& d) {
    return (every_mode(a, b, c, d) * w).sum();
  };
  auto compiled_loss = compile(loss, testing::inductor());
  std::vector<Tensor> xc, xe;
  for (const Tensor& x : inputs) {
    xc.push_back(x.clone().requires_grad_());
    xe.push_back(x.clone().requires_grad_());
  }
  compiled_loss(xc[0], xc[1], xc[2], xc[3]).backward();
  loss(xe[0], xe[1], xe[2], xe[3]).backward();
  for (size_t i = 0; i < inputs.size(); ++i) testing::expect_equal(xc[i].grad(), xe[i].grad());
}

// The spatial sizes are specialized (Note [Upsampling coordinates]); the batch stays symbolic:
// a new batch size reuses the dynamic graph and still matches eager, a new spatial size traces
// again.
TEST(CompiledUpsample, DynamicBatchAndNewSpatialSizes) {
  Upsample up({.scale_factor = {2}, .mode = "bilinear"});
  CompileOptions o = testing::inductor();
  o.dynamic = true;
  auto f = compile([&up](const Tensor& x) { return up(x); }, o);
  for (Shape s : {Shape{2, 3, 4, 5}, Shape{3, 3, 4, 5}, Shape{2, 3, 3, 6}}) {
    const Tensor x = randn(s);
    testing::expect_equal(f(x), up(x));
  }
}

TEST(CompiledPixelShuffle, MatchesEagerWithGradientsAndDynamicSizes) {
  auto loss = [](const Tensor& x, const Tensor& w) {
    return (pixel_unshuffle(pixel_shuffle(x, 2).relu(), 3) * w).sum();
  };
  auto compiled_loss = compile(loss, testing::inductor());
  Tensor xc = randn({2, 8, 3, 3}).requires_grad_(), xe = xc.detach().clone().requires_grad_();
  const Tensor w = randn({2, 18, 2, 2});
  compiled_loss(xc, w).backward();
  loss(xe, w).backward();
  testing::expect_equal(xc.grad(), xe.grad());
  CompileOptions o = testing::inductor();
  o.dynamic = true;
  auto f = compile([](const Tensor& x) { return pixel_shuffle(x, 2) * 2.0; }, o);
  for (Shape s : {Shape{2, 8, 3, 4}, Shape{3, 12, 5, 2}}) {
    const Tensor x = randn(s);
    testing::expect_equal(f(x), pixel_shuffle(x, 2) * 2.0);
  }
}

}  // namespace
}  // namespace kiln::nn
