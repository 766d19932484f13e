// torch::nn::Upsample, PixelShuffle/PixelUnshuffle, InstanceNorm1d/2d/3d and their functionals
// and ATen ops: LibTorch's options reach Kiln's layers with the right settings, and results equal
// Kiln's own.
#include <gtest/gtest.h>

#include "kiln/ops/creation.h"
#include "kiln/ops/random.h"
#include "kiln/torch/nn.h"
#include "kiln/torch/tensor_ops.h"

namespace {

namespace F = torch::nn::functional;
namespace kf = kiln::nn::functional;
using kiln::Tensor;

double max_diff(const Tensor& a, const Tensor& b) {
  return (a.detach().to(kiln::kFloat64) - b.detach().to(kiln::kFloat64)).abs().max().item<double>();
}

TEST(TorchUpsample, OptionsBuilderReachesKilnsInterpolate) {
  torch::nn::Upsample up(torch::nn::UpsampleOptions()
                             .scale_factor(std::vector<double>{2, 2})
                             .mode(torch::kBilinear)
                             .align_corners(false));
  const Tensor x = kiln::randn({2, 3, 4, 5});
  EXPECT_TRUE(torch::equal(
      up(x),
      kf::interpolate(x, {.scale_factor = {2, 2}, .mode = "bilinear", .align_corners = false})));
  EXPECT_EQ(up->options.scale_factor()->size(), 2u);
  EXPECT_EQ(torch::enumtype::get_enum_name(up->options.mode()), "kBilinear");
  // Default options: nearest, no size yet (an error when it runs, as LibTorch).
  torch::nn::Upsample none;
  EXPECT_THROW(none(x), kiln::ValueError);
  torch::nn::Upsample sized(
      torch::nn::UpsampleOptions().size(std::vector<int64_t>{6, 7}).mode(torch::kNearest));
  EXPECT_EQ(sized(x).sizes().vec(), (std::vector<int64_t>{2, 3, 6, 7}));
  torch::nn::Upsample cubic(torch::nn::UpsampleOptions()
                                .size(std::vector<int64_t>{5, 8})
                                .mode(torch::kBicubic)
                                .align_corners(true));
  EXPECT_TRUE(torch::equal(cubic(x), kiln::upsample_bicubic2d(x, {5, 8}, true)));
}

TEST(TorchUpsample, InterpolateFuncOptionsEveryMode) {
  const Tensor x1 = kiln::randn({2, 3, 5}), x2 = kiln::randn({2, 3, 4, 5}),
               x3 = kiln::randn({1, 2, 3, 4, 2});
  const auto linear = F::InterpolateFuncOptions()
                          .size(std::vector<int64_t>{8})
                          .mode(torch::kLinear)
                          .align_corners(true);
  EXPECT_TRUE(torch::equal(F::interpolate(x1, linear), torch::upsample_linear1d(x1, {8}, true)));
  const auto exact = F::InterpolateFuncOptions()
                         .scale_factor(std::vector<double>{1.5, 2})
                         .mode(torch::kNearestExact);
  EXPECT_TRUE(torch::equal(F::interpolate(x2, exact),
                           torch::_upsample_nearest_exact2d(x2, {6, 10}, 1.5, 2.0)));
  const auto trilinear = F::InterpolateFuncOptions()
                             .scale_factor(std::vector<double>{2, 1.5, 1})
                             .mode(torch::kTrilinear)
                             .recompute_scale_factor(true);
  EXPECT_TRUE(torch::equal(F::interpolate(x3, trilinear),
                           torch::upsample_trilinear3d(x3, {6, 6, 2}, false)));
  const auto area = F::InterpolateFuncOptions().size(std::vector<int64_t>{2, 3}).mode(torch::kArea);
  EXPECT_TRUE(torch::equal(F::interpolate(x2, area), torch::adaptive_avg_pool2d(x2, {2, 3})));
  const auto nearest = F::InterpolateFuncOptions().size(std::vector<int64_t>{3, 3});
  EXPECT_TRUE(torch::equal(F::interpolate(x2, nearest), torch::upsample_nearest2d(x2, {3, 3})));
  EXPECT_THROW(
      F::interpolate(
          x2, F::InterpolateFuncOptions().size(std::vector<int64_t>{3, 3}).align_corners(true)),
      kiln::ValueError);
  EXPECT_THROW(F::interpolate(x2, F::InterpolateFuncOptions()
                                      .size(std::vector<int64_t>{3, 3})
                                      .mode(torch::kBilinear)
                                      .antialias(true)),
               kiln::NotImplementedError);
  EXPECT_EQ(torch::enumtype::kiln_name(torch::kNearestExact), "nearest-exact");
}

TEST(TorchPixelShuffle, ModulesFunctionalsAndOps) {
  const Tensor x = kiln::randn({2, 12, 3, 4});
  torch::nn::PixelShuffle shuffle(torch::nn::PixelShuffleOptions(2));
  torch::nn::PixelUnshuffle unshuffle(2);
  const Tensor y = shuffle(x);
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 3, 6, 8}));
  EXPECT_TRUE(torch::equal(y, kiln::pixel_shuffle(x, 2)));
  EXPECT_TRUE(torch::equal(unshuffle(y), x));
  EXPECT_TRUE(torch::equal(F::pixel_shuffle(x, F::PixelShuffleFuncOptions(2)), y));
  EXPECT_TRUE(torch::equal(F::pixel_unshuffle(y, F::PixelUnshuffleFuncOptions(2)), x));
  EXPECT_TRUE(torch::equal(torch::pixel_unshuffle(torch::pixel_shuffle(x, 2), 2), x));
  EXPECT_EQ(shuffle->options.upscale_factor(), 2);
  EXPECT_THROW(torch::nn::PixelShuffle(5)(x), kiln::ShapeError);
}

TEST(TorchInstanceNorm, OptionsReachKilnsLayer) {
  torch::nn::InstanceNorm2d norm(
      torch::nn::InstanceNorm2dOptions(3).affine(true).track_running_stats(true).momentum(0.2));
  EXPECT_EQ(norm->options.num_features(), 3);
  EXPECT_TRUE(norm->options.affine());
  EXPECT_EQ(norm->weight.sizes().vec(), (std::vector<int64_t>{3}));
  EXPECT_TRUE(norm->running_mean.defined());
  EXPECT_DOUBLE_EQ(norm->kiln::nn::InstanceNormBase::options.momentum, 0.2);
  kiln::nn::InstanceNorm2d kiln_norm(
      3, {.momentum = 0.2, .affine = true, .track_running_stats = true});
  const Tensor x = kiln::randn({2, 3, 4, 4});
  EXPECT_TRUE(torch::equal(norm(x), kiln_norm(x)));
  EXPECT_TRUE(torch::equal(norm->running_var, kiln_norm.running_var));
  torch::nn::InstanceNorm1d plain(4);
  EXPECT_TRUE(plain->parameters().empty());
  torch::nn::InstanceNorm3d three(torch::nn::InstanceNorm3dOptions(2).eps(1e-3));
  EXPECT_EQ(three(kiln::randn({1, 2, 2, 3, 2})).sizes().vec(),
            (std::vector<int64_t>{1, 2, 2, 3, 2}));
}

TEST(TorchInstanceNorm, FunctionalAndAtenOp) {
  const Tensor x = kiln::randn({2, 3, 5});
  const Tensor rm = kiln::randn({3}), rv = kiln::rand({3}) + 0.5;
  const Tensor w = kiln::randn({3}), b = kiln::randn({3});
  const Tensor expected = kiln::instance_norm(x, rm, rv, w, b, false, 0.1, 1e-5);
  const auto options = F::InstanceNormFuncOptions()
                           .running_mean(rm)
                           .running_var(rv)
                           .weight(w)
                           .bias(b)
                           .use_input_stats(false);
  EXPECT_TRUE(torch::equal(F::instance_norm(x, options), expected));
  EXPECT_TRUE(
      torch::equal(torch::instance_norm(x, w, b, rm, rv, false, 0.1, 1e-5, false), expected));
  EXPECT_LT(max_diff(F::instance_norm(x), kiln::group_norm(x, 3)), 1e-5);
}

}  // namespace
