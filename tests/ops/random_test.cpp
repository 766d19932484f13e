// Statistical and determinism behaviour of the random ops (the harness checks only shapes).
#include <gtest/gtest.h>

#include <omp.h>
#include <cmath>

#include "kiln/kiln.h"

using namespace kiln;

namespace {

std::pair<double, double> mean_var(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return {m, s / static_cast<double>(v.size() - 1)};
}

constexpr int64_t kSamples = 1000000;

TEST(Random, RandIsUniformInUnitInterval) {
  Generator gen(1);
  for (ScalarType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    std::vector<double> v = rand({kSamples}, gen, dt).to_vector<double>();
    for (double x : v) ASSERT_TRUE(x >= 0 && x < 1) << x;
    auto [m, var] = mean_var(v);
    EXPECT_NEAR(m, 0.5, 0.01) << dtype_name(dt);
    EXPECT_NEAR(var, 1.0 / 12, 0.01) << dtype_name(dt);
  }
}

TEST(Random, RandnIsStandardNormal) {
  Generator gen(2);
  auto [m, var] = mean_var(randn({kSamples}, gen, kFloat64).to_vector<double>());
  EXPECT_NEAR(m, 0, 0.005);
  EXPECT_NEAR(var, 1, 0.01);
}

TEST(Random, RandintCoversRangeUniformly) {
  Generator gen(3);
  std::vector<double> v = randint(-3, 7, {kSamples}, gen).to_vector<double>();
  for (double x : v) ASSERT_TRUE(x >= -3 && x < 7);
  auto [m, var] = mean_var(v);
  EXPECT_NEAR(m, 1.5, 0.02);
  EXPECT_NEAR(var, (100.0 - 1) / 12, 0.05);
}

TEST(Random, RandintFullUint64Range) {
  Generator gen(4);
  Tensor t = randint(Scalar(uint64_t{0}), Scalar(UINT64_MAX), {10000}, gen, kUInt64);
  uint64_t above = 0;
  for (uint64_t x : t.to_vector<uint64_t>()) above += x > (uint64_t{1} << 63);
  EXPECT_NEAR(static_cast<double>(above) / 10000, 0.5, 0.03);
  Tensor small = randint(250, 256, {1000}, gen, kUInt8);
  for (uint8_t x : small.to_vector<uint8_t>()) EXPECT_GE(x, 250);
}

TEST(Random, SameSeedSameValuesDifferentSeedDifferentValues) {
  manual_seed(42);
  std::vector<float> a = rand({100}).to_vector<float>();
  manual_seed(42);
  std::vector<float> b = rand({100}).to_vector<float>();
  manual_seed(43);
  std::vector<float> c = rand({100}).to_vector<float>();
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // Consecutive draws differ.
  EXPECT_NE(rand({100}).to_vector<float>(), rand({100}).to_vector<float>());
}

TEST(Random, ValuesDoNotDependOnThreadCount) {
  const int saved = omp_get_max_threads();
  Generator g1(9), g2(9);
  omp_set_num_threads(1);
  std::vector<double> a = randn({200000}, g1, kFloat64).to_vector<double>();
  omp_set_num_threads(4);
  std::vector<double> b = randn({200000}, g2, kFloat64).to_vector<double>();
  omp_set_num_threads(saved);
  EXPECT_EQ(a, b);
}

TEST(Random, DropoutScalesKeptValuesAndZeroesAboutP) {
  Generator gen(5);
  Tensor x = ones({kSamples}, kFloat32);
  std::vector<float> v = dropout(x, 0.25, true, gen).to_vector<float>();
  int64_t zeros_count = 0;
  for (float e : v) {
    if (e == 0)
      ++zeros_count;
    else
      ASSERT_FLOAT_EQ(e, 1.0f / 0.75f);
  }
  EXPECT_NEAR(static_cast<double>(zeros_count) / kSamples, 0.25, 0.005);
}

TEST(Random, DropoutEvalIsIdentityAndBadPRaises) {
  Tensor x = ones({4});
  EXPECT_TRUE(dropout(x, 0.5, false).is_same(x));
  EXPECT_THROW(dropout(x, 1.5, false), ValueError);
  EXPECT_THROW(dropout(x, -0.5, true), ValueError);
  for (float e : dropout(x, 1.0, true).to_vector<float>()) EXPECT_EQ(e, 0);
}

TEST(Random, LikeVariantsKeepShapeAndDtype) {
  Tensor t = zeros({2, 3}, kFloat64);
  EXPECT_EQ(rand_like(t).dtype(), kFloat64);
  EXPECT_EQ(randn_like(t).sizes(), t.sizes());
  EXPECT_EQ(randint_like(t, 0, 3).dtype(), kFloat64);
}

TEST(Random, PhiloxMatchesKnownAnswer) {
  // Random123's known-answer test for philox4x32-10 with zero counter and key.
  auto r = philox4x32_10(0, 0);
  EXPECT_EQ(r[0], 0x6627e8d5u);
  EXPECT_EQ(r[1], 0xe169c58du);
  EXPECT_EQ(r[2], 0xbc57ac4cu);
  EXPECT_EQ(r[3], 0x9b00dbd8u);
}

}  // namespace
