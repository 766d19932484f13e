// clip_grad_norm_ and clip_grad_value_ on gradients set by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln/kiln.h"

namespace kiln::nn {
namespace {

// Two parameters whose gradients are [3, 4] (2-norm 5) and [12] (2-norm 12): total 2-norm 13.
std::vector<Tensor> params_with_grads() {
  Tensor a = zeros({2}).requires_grad_(), b = zeros({1}).requires_grad_();
  a.mutable_grad() = tensor({3.0, 4.0});
  b.mutable_grad() = tensor({12.0});
  return {a, b};
}

std::vector<double> grad_of(const Tensor& p) { return p.grad().to_vector<double>(); }

TEST(ClipGradNorm, ScalesAllGradientsByTheSameFactorAndReturnsTheTotalNorm) {
  const std::vector<Tensor> params = params_with_grads();
  const Tensor total = clip_grad_norm_(params, 6.5);
  EXPECT_EQ(total.dim(), 0);
  EXPECT_EQ(total.dtype(), kFloat32);
  EXPECT_NEAR(total.item<double>(), 13.0, 1e-5);
  const double coef = 6.5 / (13.0 + 1e-6);
  EXPECT_NEAR(grad_of(params[0])[0], 3.0 * coef, 1e-6);
  EXPECT_NEAR(grad_of(params[0])[1], 4.0 * coef, 1e-6);
  EXPECT_NEAR(grad_of(params[1])[0], 12.0 * coef, 1e-5);
}

TEST(ClipGradNorm, LeavesSmallGradientsAlone) {
  const std::vector<Tensor> params = params_with_grads();
  EXPECT_NEAR(clip_grad_norm_(params, 100.0).item<double>(), 13.0, 1e-5);
  EXPECT_EQ(grad_of(params[0]), (std::vector<double>{3.0, 4.0}));
  EXPECT_EQ(grad_of(params[1]), std::vector<double>{12.0});
}

TEST(ClipGradNorm, OtherNormTypes) {
  std::vector<Tensor> params = params_with_grads();
  EXPECT_NEAR(clip_grad_norm_(params, 100.0, kInfNorm).item<double>(), 12.0, 1e-6);
  EXPECT_NEAR(clip_grad_norm_(params, 100.0, 1.0).item<double>(), 19.0, 1e-5);
  // 3-norm: (27 + 64 + 1728)^(1/3).
  EXPECT_NEAR(clip_grad_norm_(params, 100.0, 3.0).item<double>(), std::cbrt(1819.0), 1e-4);
  clip_grad_norm_(params, 6.0, kInfNorm);
  EXPECT_NEAR(grad_of(params[1])[0], 12.0 * 6.0 / (12.0 + 1e-6), 1e-5);
  EXPECT_THROW(clip_grad_norm_(params, 1.0, 0.0), ValueError);
}

TEST(ClipGradNorm, SkipsParametersWithoutGradients) {
  std::vector<Tensor> params = params_with_grads();
  params.push_back(zeros({3}).requires_grad_());
  EXPECT_NEAR(clip_grad_norm_(params, 100.0).item<double>(), 13.0, 1e-5);
  EXPECT_FALSE(params[2].grad().defined());
  EXPECT_EQ(clip_grad_norm_({zeros({2}).requires_grad_()}, 1.0).item<double>(), 0.0);
}

TEST(ClipGradNorm, NonFiniteTotals) {
  std::vector<Tensor> params = params_with_grads();
  params[0].mutable_grad() = tensor({std::numeric_limits<double>::infinity(), 1.0});
  try {
    clip_grad_norm_(params, 1.0, 2.0, /*error_if_nonfinite=*/true);
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("non-finite"), std::string::npos) << e.what();
  }
  EXPECT_EQ(grad_of(params[1]), std::vector<double>{12.0});  // untouched by the failed call
  const Tensor total = clip_grad_norm_(params, 1.0);
  EXPECT_TRUE(std::isinf(total.item<double>()));
  EXPECT_EQ(grad_of(params[1]), std::vector<double>{0.0});  // scaled by max_norm / inf
}

TEST(ClipGradNorm, TotalHasThePromotedGradientDtype) {
  Tensor a = zeros({1}, kFloat64).requires_grad_();
  a.mutable_grad() = tensor({2.0}, kFloat64);
  Tensor b = zeros({1}).requires_grad_();
  b.mutable_grad() = tensor({1.0});
  EXPECT_EQ(clip_grad_norm_({a, b}, 10.0).dtype(), kFloat64);
}

TEST(ClipGradValue, ClampsEachElement) {
  const std::vector<Tensor> params = params_with_grads();
  clip_grad_value_(params, 3.5);
  EXPECT_EQ(grad_of(params[0]), (std::vector<double>{3.0, 3.5}));
  EXPECT_EQ(grad_of(params[1]), std::vector<double>{3.5});
  params[0].mutable_grad() = tensor({-10.0, 0.5});
  clip_grad_value_(params, 1.0);
  EXPECT_EQ(grad_of(params[0]), (std::vector<double>{-1.0, 0.5}));
  EXPECT_THROW(clip_grad_value_(params, -1.0), ValueError);
}

}  // namespace
}  // namespace kiln::nn
