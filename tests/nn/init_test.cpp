// nn::init: bounds and statistics of large tensors, gains and fans, reproducibility, errors.
// Statistical checks use 1e5-element tensors and allow about 5 standard errors.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "kiln/kiln.h"

namespace kiln::nn {
namespace {

struct Stats {
  double min, max, mean, std;
};

Stats stats_of(const Tensor& t) {
  const Tensor d = t.detach().to(kFloat64);
  return {d.min().item<double>(), d.max().item<double>(), d.mean().item<double>(),
          d.std().item<double>()};
}

constexpr int64_t kN = 100000;

TEST(NnInit, UniformHasItsBoundsMeanAndVariance) {
  manual_seed(1);
  const Tensor t = empty({kN});
  init::uniform_(t, -2.0, 3.0);
  const Stats s = stats_of(t);
  EXPECT_GE(s.min, -2.0);
  EXPECT_LT(s.max, 3.0);
  const double sd = 5.0 / std::sqrt(12.0);  // of U(-2, 3)
  EXPECT_NEAR(s.mean, 0.5, 5 * sd / std::sqrt(double(kN)));
  EXPECT_NEAR(s.std, sd, 0.01 * sd);
}

TEST(NnInit, NormalHasItsMeanAndStd) {
  manual_seed(2);
  const Tensor t = empty({kN}, kFloat64);
  init::normal_(t, 1.5, 0.5);
  const Stats s = stats_of(t);
  EXPECT_NEAR(s.mean, 1.5, 5 * 0.5 / std::sqrt(double(kN)));
  EXPECT_NEAR(s.std, 0.5, 0.01 * 0.5);
}

TEST(NnInit, TruncNormalStaysInsideItsBoundsWithTheTruncatedVariance) {
  manual_seed(3);
  const Tensor t = empty({kN});
  init::trunc_normal_(t, 0.0, 1.0, -1.0, 2.0);
  const Stats s = stats_of(t);
  EXPECT_GE(s.min, -1.0);
  EXPECT_LE(s.max, 2.0);
  // Moments of N(0, 1) truncated to [a, b], with phi/Phi the standard normal pdf/cdf.
  auto phi = [](double x) { return std::exp(-x * x / 2) / std::sqrt(2 * std::numbers::pi); };
  auto Phi = [](double x) { return 0.5 * (1 + std::erf(x / std::numbers::sqrt2)); };
  const double a = -1.0, b = 2.0, z = Phi(b) - Phi(a);
  const double mean = (phi(a) - phi(b)) / z;
  const double var = 1 + (a * phi(a) - b * phi(b)) / z - mean * mean;
  EXPECT_NEAR(s.mean, mean, 5 * std::sqrt(var / double(kN)));
  EXPECT_NEAR(s.std, std::sqrt(var), 0.01);
}

TEST(NnInit, ConstantZerosOnesEye) {
  const Tensor t = empty({2, 3});
  init::constant_(t, 2.5);
  EXPECT_EQ(t.to_vector<double>(), std::vector<double>(6, 2.5));
  init::zeros_(t);
  EXPECT_EQ(t.to_vector<double>(), std::vector<double>(6, 0.0));
  init::ones_(t);
  EXPECT_EQ(t.to_vector<double>(), std::vector<double>(6, 1.0));
  init::eye_(t);
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{1, 0, 0, 0, 1, 0}));
  EXPECT_THROW(init::eye_(empty({2, 2, 2})), ValueError);
}

TEST(NnInit, FansCountTheReceptiveField) {
  const auto [fan_in, fan_out] = init::calculate_fan_in_and_fan_out(empty({8, 4, 3, 3}));
  EXPECT_EQ(fan_in, 4 * 9);
  EXPECT_EQ(fan_out, 8 * 9);
  EXPECT_THROW(init::calculate_fan_in_and_fan_out(empty({5})), ValueError);
  EXPECT_THROW(init::xavier_uniform_(empty({5})), ValueError);
}

TEST(NnInit, GainsFollowPyTorchsTable) {
  EXPECT_EQ(init::calculate_gain("linear"), 1.0);
  EXPECT_EQ(init::calculate_gain("conv2d"), 1.0);
  EXPECT_EQ(init::calculate_gain("sigmoid"), 1.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain("tanh"), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain("relu"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(init::calculate_gain("leaky_relu"), std::sqrt(2.0 / (1 + 0.01 * 0.01)));
  EXPECT_DOUBLE_EQ(init::calculate_gain("leaky_relu", 0.2), std::sqrt(2.0 / (1 + 0.2 * 0.2)));
  EXPECT_DOUBLE_EQ(init::calculate_gain("selu"), 0.75);
  try {
    init::calculate_gain("swish");
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("swish"), std::string::npos) << e.what();
  }
}

TEST(NnInit, XavierUsesFanInPlusFanOut) {
  manual_seed(4);
  const Tensor w = empty({200, 500});
  init::xavier_uniform_(w, 2.0);
  const double bound = 2.0 * std::sqrt(6.0 / 700.0);
  Stats s = stats_of(w);
  EXPECT_GE(s.min, -bound);
  EXPECT_LE(s.max, bound);
  EXPECT_NEAR(s.std, bound / std::sqrt(3.0), 0.01 * bound);
  init::xavier_normal_(w);
  s = stats_of(w);
  EXPECT_NEAR(s.std, std::sqrt(2.0 / 700.0), 0.01 * std::sqrt(2.0 / 700.0));
}

TEST(NnInit, KaimingUsesTheModesFanAndTheNonlinearitysGain) {
  manual_seed(5);
  const Tensor w = empty({400, 100, 3});  // fan_in 300, fan_out 1200
  init::kaiming_normal_(w, 0.0, "fan_out", "relu");
  double expected = std::sqrt(2.0) / std::sqrt(1200.0);
  Stats s = stats_of(w);
  EXPECT_NEAR(s.std, expected, 0.01 * expected);
  EXPECT_NEAR(s.mean, 0.0, 5 * expected / std::sqrt(120000.0));
  init::kaiming_uniform_(w, 0.3);  // fan_in, leaky_relu with slope 0.3
  expected = std::sqrt(2.0 / (1 + 0.09)) / std::sqrt(300.0);
  s = stats_of(w);
  EXPECT_LE(s.max, std::sqrt(3.0) * expected);
  EXPECT_NEAR(s.std, expected, 0.01 * expected);
  EXPECT_THROW(init::kaiming_uniform_(w, 0.0, "fan_avg"), ValueError);
  EXPECT_THROW(init::kaiming_normal_(w, 0.0, "fan_in", "swish"), ValueError);
}

TEST(NnInit, AGeneratorMakesDrawsReproducible) {
  Generator g1(7), g2(7), g3(8);
  const Tensor a = empty({50}), b = empty({50}), c = empty({50});
  init::kaiming_uniform_(a.view({5, 10}), 0.0, "fan_in", "relu", &g1);
  init::kaiming_uniform_(b.view({5, 10}), 0.0, "fan_in", "relu", &g2);
  init::kaiming_uniform_(c.view({5, 10}), 0.0, "fan_in", "relu", &g3);
  EXPECT_EQ(a.to_vector<double>(), b.to_vector<double>());
  EXPECT_NE(a.to_vector<double>(), c.to_vector<double>());
  // The default generator is not touched.
  manual_seed(1);
  const Tensor before = rand({3});
  manual_seed(1);
  init::normal_(empty({10}), 0.0, 1.0, &g1);
  EXPECT_EQ(rand({3}).to_vector<double>(), before.to_vector<double>());
}

TEST(NnInit, WorksInPlaceOnParametersThatRequireGrad) {
  const Tensor p = zeros({4, 4}).requires_grad_();
  init::normal_(p);
  init::xavier_uniform_(p);
  EXPECT_TRUE(p.is_leaf());
  EXPECT_TRUE(p.requires_grad());
  EXPECT_GT(p.detach().abs().sum().item<double>(), 0.0);
}

TEST(NnInit, ReducedPrecisionAndNonContiguousTensors) {
  manual_seed(6);
  const Tensor h = empty({1000}, kBFloat16);
  init::uniform_(h, -1.0, 1.0);
  const Stats s = stats_of(h);
  EXPECT_GE(s.min, -1.0);
  EXPECT_LE(s.max, 1.0);
  const Tensor m = zeros({4, 6});
  init::ones_(m.t());
  init::normal_(m.slice(1, 0, 6, 2));  // every other column
  EXPECT_EQ(m.select(1, 1).to_vector<double>(), std::vector<double>(4, 1.0));
}

TEST(NnInit, RejectsIntegerTensorsAndBadArguments) {
  EXPECT_THROW(init::uniform_(zeros({3}, kInt64)), DTypeError);
  EXPECT_THROW(init::uniform_(zeros({3}), 1.0, 0.0), ValueError);
  EXPECT_THROW(init::normal_(zeros({3}), 0.0, -1.0), ValueError);
  EXPECT_THROW(init::trunc_normal_(zeros({3}), 0.0, 1.0, 2.0, -2.0), ValueError);
  EXPECT_THROW(init::zeros_(Tensor()), ValueError);
}

}  // namespace
}  // namespace kiln::nn
