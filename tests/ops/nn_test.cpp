// Behaviour of the nn ops that the OpInfo harness cannot express: in-place running statistics,
// equivalences between options, error messages.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"
#include "src/core/tensor_factory.h"
#include "src/ops/nn_backward.h"

namespace kiln {
namespace {

std::vector<double> vals(const Tensor& t) { return t.to_vector<double>(); }

void expect_near(const Tensor& a, const Tensor& b, double tol = 1e-6) {
  ASSERT_EQ(a.sizes(), b.sizes());
  const std::vector<double> x = vals(a), y = vals(b);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], tol) << "element " << i;
}

TEST(BatchNorm, TrainingUpdatesRunningStatsWithUnbiasedVarianceAndBumpsVersions) {
  // (N, C, L) = (2, 2, 2); channel 0 holds {1, 2, 3, 4}, channel 1 {0, 0, 4, 4}.
  Tensor x = from_vector(std::vector<float>{1, 2, 0, 0, 3, 4, 4, 4}, std::vector<int64_t>{2, 2, 2});
  Tensor rm = tensor({0.5, -1.0}, kFloat32), rv = tensor({1.0, 2.0}, kFloat32);
  const uint32_t vm = rm.version(), vv = rv.version();
  auto [out, save_mean, save_invstd] = native_batch_norm(x, {}, {}, rm, rv, true, 0.25, 1e-5);
  // Batch means 2.5 and 2; biased variances 1.25 and 4; unbiased 5/3 and 16/3.
  EXPECT_NEAR(vals(rm)[0], 0.75 * 0.5 + 0.25 * 2.5, 1e-6);
  EXPECT_NEAR(vals(rm)[1], 0.75 * -1.0 + 0.25 * 2.0, 1e-6);
  EXPECT_NEAR(vals(rv)[0], 0.75 * 1.0 + 0.25 * (5.0 / 3.0), 1e-6);
  EXPECT_NEAR(vals(rv)[1], 0.75 * 2.0 + 0.25 * (16.0 / 3.0), 1e-6);
  EXPECT_GT(rm.version(), vm);
  EXPECT_GT(rv.version(), vv);
  // The output uses the biased batch variance.
  EXPECT_NEAR(vals(save_mean)[0], 2.5, 1e-6);
  EXPECT_NEAR(vals(save_invstd)[1], 1.0 / std::sqrt(4.0 + 1e-5), 1e-6);
  EXPECT_NEAR(vals(out)[0], (1 - 2.5) / std::sqrt(1.25 + 1e-5), 1e-5);
}

TEST(BatchNorm, FunctionalFormUpdatesTheSameRunningStats) {
  Tensor x = from_vector(std::vector<double>{1, 5, 2, 7, 3, 9}, std::vector<int64_t>{3, 2});
  Tensor rm = zeros({2}, kFloat64), rv = ones({2}, kFloat64);
  Tensor y = batch_norm(x, rm, rv, {}, {}, true, 0.1, 1e-5);
  EXPECT_NEAR(vals(rm)[1], 0.1 * 7.0, 1e-12);
  EXPECT_NEAR(vals(rv)[0], 0.9 + 0.1 * 1.0, 1e-12);  // unbiased variance of {1, 2, 3} is 1
  EXPECT_EQ(y.sizes(), x.sizes());
}

TEST(BatchNorm, EvalUsesRunningStatsAndLeavesThemAlone) {
  Tensor x = from_vector(std::vector<float>{1, 2, 3, 4}, std::vector<int64_t>{2, 2});
  Tensor rm = tensor({1.0, 2.0}, kFloat32), rv = tensor({4.0, 1.0}, kFloat32);
  const uint32_t vm = rm.version();
  Tensor w = tensor({2.0, 1.0}, kFloat32), b = tensor({0.0, 1.0}, kFloat32);
  Tensor y = batch_norm(x, rm, rv, w, b, false, 0.1, 0.0);
  expect_near(y, from_vector(std::vector<float>{0, 1, 2, 3}, std::vector<int64_t>{2, 2}));
  EXPECT_EQ(rm.version(), vm);
  EXPECT_EQ(vals(rm)[0], 1.0);
}

TEST(BatchNorm, MetaInputDoesNotTouchRunningStats) {
  Tensor x = empty_tensor({4, 3}, kFloat32, Device::Meta);
  Tensor rm = zeros({3}), rv = ones({3});
  const uint32_t vm = rm.version();
  auto [out, m, s] = native_batch_norm(x, {}, {}, rm, rv, true, 0.1, 1e-5);
  EXPECT_TRUE(out.is_meta());
  EXPECT_EQ(rm.version(), vm);
}

TEST(LayerNorm, NativeReturnsMeanAndRstdShapedForBroadcast) {
  Tensor x = from_vector(std::vector<float>{1, 2, 3, 4, 6, 8}, std::vector<int64_t>{2, 3});
  auto [y, mean, rstd] = native_layer_norm(x, {3});
  EXPECT_EQ(mean.sizes(), IntArrayRef({2, 1}));
  EXPECT_NEAR(vals(mean)[1], 6.0, 1e-6);
  EXPECT_NEAR(vals(rstd)[0], 1.0 / std::sqrt(2.0 / 3.0 + 1e-5), 1e-5);
  expect_near(layer_norm(x, {3}), y);
}

TEST(CrossEntropy, WeightedMeanDividesByWeightOfNonIgnoredTargets) {
  // Uniform logits: every log-probability is -log(3).
  Tensor x = zeros({4, 3});
  Tensor t = tensor({0, 1, -100, 2});
  Tensor w = tensor({1.0, 2.0, 4.0}, kFloat32);
  const double l = std::log(3.0);
  EXPECT_NEAR(cross_entropy(x, t, w).item<double>(), (1 + 2 + 4) * l / 7.0, 1e-6);
  EXPECT_NEAR(cross_entropy(x, t, w, "sum").item<double>(), 7 * l, 1e-5);
  expect_near(cross_entropy(x, t, w, "none"), tensor({l, 2 * l, 0.0, 4 * l}, kFloat32));
  // A custom ignore_index that is a real class.
  EXPECT_NEAR(cross_entropy(x, tensor({0, 1, 1, 2}), {}, "mean", 1).item<double>(), l, 1e-6);
}

TEST(CrossEntropy, AllTargetsIgnoredGivesNaNMean) {
  EXPECT_TRUE(std::isnan(cross_entropy(zeros({2, 3}), tensor({-100, -100})).item<double>()));
  EXPECT_EQ(cross_entropy(zeros({2, 3}), tensor({-100, -100}), {}, "sum").item<double>(), 0.0);
}

TEST(CrossEntropy, LabelSmoothingBlendsNllWithUniformTarget) {
  Tensor x = from_vector(std::vector<double>{1, 2, 3}, std::vector<int64_t>{1, 3});
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  const double lp[3] = {1 - lse, 2 - lse, 3 - lse};
  const double eps = 0.1;
  const double expected = (1 - eps) * -lp[0] + eps / 3 * -(lp[0] + lp[1] + lp[2]);
  EXPECT_NEAR(cross_entropy(x, tensor({0}), {}, "mean", -100, eps).item<double>(), expected, 1e-12);
}

TEST(CrossEntropy, OneHotProbabilitiesEqualClassIndices) {
  Tensor x =
      from_vector(std::vector<double>{0.3, -1, 2, 0.5, 0.1, -0.7}, std::vector<int64_t>{2, 3});
  Tensor onehot = from_vector(std::vector<double>{0, 0, 1, 1, 0, 0}, std::vector<int64_t>{2, 3});
  EXPECT_NEAR(cross_entropy(x, onehot).item<double>(),
              cross_entropy(x, tensor({2, 0})).item<double>(), 1e-12);
  // With smoothing, too (no weights, no ignored targets: both formulas agree).
  EXPECT_NEAR(cross_entropy(x, onehot, {}, "mean", -100, 0.2).item<double>(),
              cross_entropy(x, tensor({2, 0}), {}, "mean", -100, 0.2).item<double>(), 1e-12);
}

TEST(CrossEntropy, EqualsNllLossOfLogSoftmax) {
  Tensor x =
      from_vector(std::vector<double>{0.3, -1, 2, 0.5, 0.1, -0.7}, std::vector<int64_t>{2, 3});
  std::vector<double> lp = vals(x);
  for (int r = 0; r < 2; ++r) {
    double s = 0;
    for (int c = 0; c < 3; ++c) s += std::exp(lp[r * 3 + c]);
    for (int c = 0; c < 3; ++c) lp[r * 3 + c] -= std::log(s);
  }
  Tensor logp = from_vector(lp, std::vector<int64_t>{2, 3});
  EXPECT_NEAR(cross_entropy(x, tensor({1, 2})).item<double>(),
              nll_loss(logp, tensor({1, 2})).item<double>(), 1e-12);
}

TEST(Losses, UnknownReductionIsValueErrorNamingTheOp) {
  try {
    mse_loss(zeros({2}), zeros({2}), "average");
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("mse_loss"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("average"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cross_entropy(zeros({2, 3}), tensor({0, 1}), {}, "Mean"), ValueError);
}

TEST(Losses, BceWithLogitsIsFiniteForHugeLogits) {
  Tensor x = tensor({1000.0, -1000.0}, kFloat32), t = tensor({0.0, 1.0}, kFloat32);
  const std::vector<double> l = vals(binary_cross_entropy_with_logits(x, t, {}, {}, "none"));
  EXPECT_NEAR(l[0], 1000.0, 1e-3);
  EXPECT_NEAR(l[1], 1000.0, 1e-3);
}

TEST(Embedding, OutOfRangeIndexNamesTheIndexAndTableSize) {
  try {
    embedding(zeros({10, 4}), tensor({3, 12}));
    FAIL() << "expected IndexError";
  } catch (const IndexError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("embedding"), std::string::npos) << m;
    EXPECT_NE(m.find("12"), std::string::npos) << m;
    EXPECT_NE(m.find("10 rows"), std::string::npos) << m;
  }
}

TEST(Embedding, PaddingIdxDoesNotChangeTheForward) {
  Tensor w = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, std::vector<int64_t>{3, 2});
  expect_near(embedding(w, tensor({0, 2}), 0),
              from_vector(std::vector<float>{1, 2, 5, 6}, std::vector<int64_t>{2, 2}));
}

Tensor lower_triangular(int64_t L, int64_t S) {
  std::vector<double> m(static_cast<size_t>(L * S));
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < S; ++j) m[static_cast<size_t>(i * S + j)] = j <= i;
  return from_vector(m, std::vector<int64_t>{L, S}).to(kBool);
}

Tensor ramp(std::vector<int64_t> shape, double step) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = std::sin(step * static_cast<double>(i));
  return from_vector(v, shape).to(kFloat32);
}

TEST(Attention, CausalEqualsExplicitLowerTriangularMask) {
  for (auto [L, S] : {std::pair<int64_t, int64_t>{5, 5}, {3, 6}, {6, 3}}) {
    Tensor q = ramp({2, 2, L, 8}, 0.37), k = ramp({2, 2, S, 8}, 0.11), v = ramp({2, 2, S, 4}, 0.23);
    expect_near(scaled_dot_product_attention(q, k, v, {}, 0.0, true),
                scaled_dot_product_attention(q, k, v, lower_triangular(L, S)), 1e-6);
  }
}

TEST(Attention, BoolMaskEqualsMinusInfinityFloatMask) {
  Tensor q = ramp({4, 8}, 0.3), k = ramp({6, 8}, 0.7), v = ramp({6, 3}, 0.5);
  Tensor keep = lower_triangular(4, 6);
  std::vector<double> add(24);
  const std::vector<double> kv = vals(keep);
  for (size_t i = 0; i < add.size(); ++i) add[i] = kv[i] != 0 ? 0.0 : -INFINITY;
  Tensor fmask = from_vector(add, std::vector<int64_t>{4, 6}).to(kFloat32);
  expect_near(scaled_dot_product_attention(q, k, v, keep),
              scaled_dot_product_attention(q, k, v, fmask));
}

TEST(Attention, FullyMaskedRowGivesZerosLikePyTorchMathBackend) {
  Tensor q = ramp({3, 4}, 0.3), k = ramp({5, 4}, 0.7), v = ramp({5, 2}, 0.5);
  std::vector<double> keep(15, 1.0);
  for (int j = 0; j < 5; ++j) keep[static_cast<size_t>(5 + j)] = 0;  // row 1 attends to nothing
  Tensor out = scaled_dot_product_attention(
      q, k, v, from_vector(keep, std::vector<int64_t>{3, 5}).to(kBool));
  const std::vector<double> o = vals(out);
  EXPECT_EQ(o[2], 0.0);
  EXPECT_EQ(o[3], 0.0);
  EXPECT_FALSE(std::isnan(o[0]));
}

TEST(Attention, DefaultScaleIsInverseSqrtOfHeadDim) {
  Tensor q = ramp({3, 16}, 0.3), k = ramp({5, 16}, 0.7), v = ramp({5, 2}, 0.5);
  expect_near(scaled_dot_product_attention(q, k, v),
              scaled_dot_product_attention(q, k, v, {}, 0.0, false, 0.25));
}

// Note [Attention outputs in the projections' layout]: with 4-d operands the output and the
// gradients are (batch, heads, L, E) views of [batch, L, heads, E] memory, so that multi-head
// attention's transpose(1, 2).reshape(batch, L, heads * E) is a view; their values equal those of
// the same heads computed as 3-d (contiguous) operands, for float32 and float16.
TEST(Attention, FourDimOutputsAreLaidOutAsTheProjections) {
  const int64_t B = 2, H = 3, L = 5, S = 4, E = 8, Ev = 6;
  for (ScalarType dtype : {kFloat32, kFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor q = ramp({B, H, L, E}, 0.37).to(dtype), k = ramp({B, H, S, E}, 0.11).to(dtype);
    Tensor v = ramp({B, H, S, Ev}, 0.23).to(dtype), g = ramp({B, H, L, Ev}, 0.29).to(dtype);
    Tensor out = scaled_dot_product_attention(q, k, v);
    EXPECT_EQ(out.strides(), IntArrayRef({L * H * Ev, Ev, H * Ev, 1}));
    EXPECT_EQ(out.transpose(1, 2).reshape({B, L, H * Ev}).data_ptr(), out.data_ptr());
    auto flat = [&](const Tensor& t) { return t.reshape({B * H, t.size(2), t.size(3)}); };
    Tensor flat_out = scaled_dot_product_attention(flat(q), flat(k), flat(v));
    EXPECT_TRUE(flat_out.is_contiguous());
    const double tol = dtype == kFloat16 ? 0.0 : 1e-6;  // the same products, the same rounding
    expect_near(flat(out).to(kFloat32), flat_out.to(kFloat32), tol);

    auto [dq, dk, dv] = scaled_dot_product_attention_backward(g, q, k, v, {}, false, std::nullopt,
                                                              {true, true, true});
    auto [fdq, fdk, fdv] = scaled_dot_product_attention_backward(
        flat(g), flat(q), flat(k), flat(v), {}, false, std::nullopt, {true, true, true});
    EXPECT_EQ(dq.strides(), IntArrayRef({L * H * E, E, H * E, 1}));
    EXPECT_EQ(dk.strides(), IntArrayRef({S * H * E, E, H * E, 1}));
    EXPECT_EQ(dv.strides(), IntArrayRef({S * H * Ev, Ev, H * Ev, 1}));
    expect_near(flat(dq).to(kFloat32), fdq.to(kFloat32), tol);
    expect_near(flat(dk).to(kFloat32), fdk.to(kFloat32), tol);
    expect_near(flat(dv).to(kFloat32), fdv.to(kFloat32), tol);
  }
}

TEST(Attention, DropoutIsNotImplementedYet) {
  Tensor q = zeros({2, 4});
  EXPECT_THROW(scaled_dot_product_attention(q, q, q, {}, 0.1), NotImplementedError);
}

TEST(GroupNorm, OneGroupPerChannelEqualsInstanceNormalization) {
  Tensor x = ramp({2, 3, 5}, 0.9);
  auto [y, mean, rstd] = native_group_norm(x, {}, {}, 3, 1e-5);
  EXPECT_EQ(mean.sizes(), IntArrayRef({2, 3}));
  const std::vector<double> xv = vals(x), yv = vals(y);
  for (int g = 0; g < 6; ++g) {
    double m = 0, var = 0;
    for (int i = 0; i < 5; ++i) m += xv[static_cast<size_t>(g * 5 + i)] / 5;
    for (int i = 0; i < 5; ++i) var += std::pow(xv[static_cast<size_t>(g * 5 + i)] - m, 2) / 5;
    for (int i = 0; i < 5; ++i)
      EXPECT_NEAR(yv[static_cast<size_t>(g * 5 + i)],
                  (xv[static_cast<size_t>(g * 5 + i)] - m) / std::sqrt(var + 1e-5), 1e-5);
  }
}

}  // namespace
}  // namespace kiln
