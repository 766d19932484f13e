// Layer behaviour beyond forward values: default initialization, train vs eval, and the errors
// bad configurations and bad inputs raise.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"

namespace kiln::nn {
namespace {

template <typename Kind, typename F>
std::string expect_error(F&& f) {
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

double max_abs(const Tensor& t) { return t.detach().abs().max().item<double>(); }

// ---- default initialization (PyTorch's) ----

TEST(DefaultInit, LinearAndConvDrawWeightsAndBiasesFromUOfOneOverSqrtFanIn) {
  manual_seed(0);
  Linear fc(400, 300);
  const double bound = 1.0 / std::sqrt(400.0);
  EXPECT_LE(max_abs(fc.weight), bound);
  EXPECT_GT(max_abs(fc.weight), 0.99 * bound);  // 120000 draws reach the edge
  EXPECT_LE(max_abs(fc.bias), bound);
  EXPECT_GT(max_abs(fc.bias), 0.9 * bound);
  // Uniform on [-b, b] has standard deviation b / sqrt(3).
  EXPECT_NEAR(fc.weight.detach().std().item<double>(), bound / std::sqrt(3.0), 0.01 * bound);

  Conv2d conv(8, 16, 3, {.groups = 2});  // fan_in = 8 / 2 * 3 * 3 = 36
  EXPECT_EQ(conv.weight.sizes().vec(), (std::vector<int64_t>{16, 4, 3, 3}));
  EXPECT_LE(max_abs(conv.weight), 1.0 / 6.0);
  EXPECT_GT(max_abs(conv.weight), 0.95 / 6.0);
  EXPECT_LE(max_abs(conv.bias), 1.0 / 6.0);
}

TEST(DefaultInit, NormsStartAtOnesAndZerosAndEmbeddingIsStandardNormalWithAZeroPaddingRow) {
  BatchNorm2d bn(4);
  EXPECT_EQ(bn.weight.to_vector<double>(), std::vector<double>(4, 1.0));
  EXPECT_EQ(bn.bias.to_vector<double>(), std::vector<double>(4, 0.0));
  EXPECT_EQ(bn.running_mean.to_vector<double>(), std::vector<double>(4, 0.0));
  EXPECT_EQ(bn.running_var.to_vector<double>(), std::vector<double>(4, 1.0));
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 0);
  LayerNorm ln({3, 2});
  EXPECT_EQ(ln.weight.to_vector<double>(), std::vector<double>(6, 1.0));
  GroupNorm gn(2, 4);
  EXPECT_EQ(gn.bias.to_vector<double>(), std::vector<double>(4, 0.0));

  manual_seed(0);
  Embedding emb(1000, 100, /*padding_idx=*/7);
  const Tensor w = emb.weight.detach();
  EXPECT_NEAR(w.mean().item<double>(), 0.0, 0.02);  // 1e5 draws: the mean's sd is 0.003
  EXPECT_NEAR(w.std().item<double>(), 1.0, 0.02);
  EXPECT_EQ(w.select(0, 7).to_vector<double>(), std::vector<double>(100, 0.0));
}

TEST(DefaultInit, MultiheadAttentionUsesXavierInputProjectionAndZeroBiases) {
  manual_seed(0);
  MultiheadAttention mha(64, 4);
  // xavier_uniform_ over the whole (3E, E) matrix: bound sqrt(6 / (E + 3E)).
  const double bound = std::sqrt(6.0 / (64.0 + 192.0));
  EXPECT_LE(max_abs(mha.in_proj_weight), bound);
  EXPECT_GT(max_abs(mha.in_proj_weight), 0.99 * bound);
  EXPECT_EQ(max_abs(mha.in_proj_bias), 0.0);
  EXPECT_EQ(max_abs(mha.out_proj->bias), 0.0);
  EXPECT_LE(max_abs(mha.out_proj->weight), 1.0 / 8.0);  // Linear's default
  EXPECT_EQ(mha.head_dim, 16);
}

TEST(DefaultInit, SameSeedSameModule) {
  manual_seed(42);
  Linear a(5, 4);
  manual_seed(42);
  Linear b(5, 4);
  EXPECT_EQ(a.weight.to_vector<double>(), b.weight.to_vector<double>());
  Linear c(5, 4);
  EXPECT_NE(a.weight.to_vector<double>(), c.weight.to_vector<double>());
}

// ---- train vs eval ----

TEST(Dropout, ZeroesAboutPOfTheElementsInTrainingAndScalesTheRest) {
  Dropout drop(0.25);
  const Tensor x = ones({100000});
  manual_seed(5);
  const std::vector<double> y = drop.forward(x).to_vector<double>();
  int64_t zeros_count = 0;
  for (double v : y) {
    if (v == 0.0) {
      ++zeros_count;
    } else {
      EXPECT_FLOAT_EQ(static_cast<float>(v), static_cast<float>(1.0 / 0.75));
    }
  }
  // Binomial(1e5, 0.25): standard deviation 137.
  EXPECT_NEAR(static_cast<double>(zeros_count), 25000.0, 700.0);
  // Seeded: the same seed gives the same mask.
  manual_seed(5);
  EXPECT_EQ(drop.forward(x).to_vector<double>(), y);
}

TEST(Dropout, IsTheIdentityInEvalModeAndWithPZero) {
  Dropout drop(0.5);
  drop.eval();
  const Tensor x = ones({10});
  EXPECT_TRUE(drop.forward(x).is_same(x));
  Dropout none(0.0);
  EXPECT_TRUE(none.forward(x).is_same(x));
}

TEST(Dropout, DrawsFromItsOwnGenerator) {
  Generator gen(123);
  Dropout drop(0.5, &gen);
  const Tensor x = ones({64});
  const std::vector<double> first = drop.forward(x).to_vector<double>();
  gen.manual_seed(123);
  manual_seed(999);  // the default generator plays no part
  EXPECT_EQ(drop.forward(x).to_vector<double>(), first);
}

TEST(Dropout, RejectsProbabilitiesOutsideZeroOne) {
  expect_contains(expect_error<ValueError>([] { Dropout(1.5); }), "Dropout");
  EXPECT_THROW(Dropout(-0.1), ValueError);
  EXPECT_EQ(Dropout(0.1).repr(), "Dropout(p=0.1, inplace=False)");
}

// The number of (n, c) channels of `y` that were dropped; each must be all zeros or all `kept`.
int64_t dropped_channels(const Tensor& y, int64_t channels, double kept) {
  const Tensor flat = y.reshape({channels, -1});
  int64_t dropped = 0;
  for (int64_t i = 0; i < channels; ++i) {
    const double lo = flat.select(0, i).min().item<double>();
    const double hi = flat.select(0, i).max().item<double>();
    EXPECT_EQ(lo, hi) << "channel " << i << " is partly dropped";
    EXPECT_TRUE(hi == 0.0 || std::abs(hi - kept) < 1e-6) << hi;
    dropped += hi == 0.0;
  }
  return dropped;
}

TEST(Dropout, ChannelDropoutZeroesWholeChannelsOfBatchedAndUnbatchedInputs) {
  manual_seed(11);
  Dropout2d drop2(0.5);
  // Binomial(512, 0.5): standard deviation 11.
  EXPECT_NEAR(static_cast<double>(dropped_channels(drop2.forward(ones({16, 32, 3, 3})), 512, 2.0)),
              256.0, 60.0);
  const int64_t unbatched = dropped_channels(drop2.forward(ones({64, 2, 2})), 64, 2.0);
  EXPECT_GT(unbatched, 0);
  EXPECT_LT(unbatched, 64);
  Dropout1d drop1(0.25);
  EXPECT_GT(dropped_channels(drop1.forward(ones({8, 16, 5})), 128, 1.0 / 0.75), 0);
  EXPECT_GT(dropped_channels(drop1.forward(ones({64, 5})), 64, 1.0 / 0.75), 0);
  Dropout3d drop3(0.5);
  EXPECT_GT(dropped_channels(drop3.forward(ones({4, 16, 2, 2, 2})), 64, 2.0), 0);
  EXPECT_GT(dropped_channels(drop3.forward(ones({64, 2, 2, 2})), 64, 2.0), 0);
  // The gradient is the mask.
  const Tensor x = ones({2, 8, 3, 3}).requires_grad_(true);
  const Tensor y = drop2.forward(x);
  y.sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), y.detach().to_vector<double>());
}

TEST(Dropout, ChannelDropoutIsTheIdentityInEvalModeAndChecksItsInput) {
  Dropout2d drop(0.5);
  const Tensor x = ones({2, 3, 4, 4});
  drop.eval();
  EXPECT_TRUE(drop.forward(x).is_same(x));
  EXPECT_TRUE(Dropout1d(0.0).forward(ones({2, 3, 4})).defined());
  EXPECT_EQ(Dropout3d(1.0).forward(ones({2, 3, 2, 2, 2})).abs().sum().item<double>(), 0.0);
  expect_contains(expect_error<ShapeError>([] {
                    Dropout2d().forward(ones({4, 4}));
                  }),
                  "Dropout2d: expected a 3-D (C, *spatial) or 4-D (N, C, *spatial) input");
  expect_contains(expect_error<ShapeError>([] {
                    Dropout1d().forward(ones({2, 3, 4, 5}));
                  }),
                  "Dropout1d");
  expect_contains(expect_error<ValueError>([] { Dropout3d(1.5); }), "Dropout3d");
  EXPECT_EQ(Dropout2d(0.1).repr(), "Dropout2d(p=0.1, inplace=False)");
  expect_contains(expect_error<DTypeError>([] {
                    Dropout2d().forward(ones({2, 3, 4}, TensorOptions(kInt64)));
                  }),
                  "Dropout2d");
  // feature_dropout itself: (N, C, *) of at least 2 dims, identity when not training.
  EXPECT_THROW(feature_dropout(ones({5}), 0.5), ShapeError);
  EXPECT_TRUE(feature_dropout(x, 0.5, /*train=*/false).is_same(x));
  EXPECT_THROW(feature_dropout(x, -0.5), ValueError);
}

TEST(Dropout, ChannelDropoutDrawsFromItsOwnGenerator) {
  Generator gen(9);
  Dropout2d drop(0.5, &gen);
  const Tensor x = ones({4, 16, 2, 2});
  const std::vector<double> first = drop.forward(x).to_vector<double>();
  gen.manual_seed(9);
  manual_seed(1234);
  EXPECT_EQ(drop.forward(x).to_vector<double>(), first);
}

TEST(BatchNorm, TrainingNormalizesWithBatchStatisticsAndEvalWithRunningOnes) {
  BatchNorm1d bn(2, {.eps = 0.0, .momentum = 0.5});
  // Channel 0: {1, 3}, channel 1: {10, 30}.
  const Tensor x = from_vector(std::vector<float>{1, 10, 3, 30}, std::vector<int64_t>{2, 2});
  NoGradGuard no_grad;
  const std::vector<double> y = bn.forward(x).to_vector<double>();
  // Batch mean 2 and 20, biased variance 1 and 100: every output is -1 or 1.
  EXPECT_EQ(y, (std::vector<double>{-1, -1, 1, 1}));
  // Running statistics: 0.5 * initial + 0.5 * batch (unbiased variance 2 and 200).
  EXPECT_EQ(bn.running_mean.to_vector<double>(), (std::vector<double>{1.0, 10.0}));
  EXPECT_EQ(bn.running_var.to_vector<double>(), (std::vector<double>{1.5, 100.5}));
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  bn.eval();
  const std::vector<double> z = bn.forward(x).to_vector<double>();
  EXPECT_NEAR(z[0], (1.0 - 1.0) / std::sqrt(1.5), 1e-6);
  EXPECT_NEAR(z[3], (30.0 - 10.0) / std::sqrt(100.5), 1e-5);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);  // eval leaves the statistics alone
  EXPECT_EQ(bn.running_mean.to_vector<double>(), (std::vector<double>{1.0, 10.0}));
}

TEST(BatchNorm, NeedsMoreThanOneValuePerChannelInTraining) {
  BatchNorm1d bn(3);
  NoGradGuard no_grad;
  expect_contains(expect_error<ValueError>([&] {
                    bn.forward(ones({1, 3}));
                  }),
                  "more than 1 value per channel");
  bn.eval();
  EXPECT_EQ(bn.forward(ones({1, 3})).sizes().vec(), (std::vector<int64_t>{1, 3}));
}

TEST(ShapeModules, IdentityFlattenUnflatten) {
  const Tensor x = arange(24).view({2, 3, 4});
  EXPECT_TRUE(Identity().forward(x).is_same(x));
  EXPECT_EQ(Flatten().forward(x).sizes().vec(), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(Flatten(0, 1).forward(x).sizes().vec(), (std::vector<int64_t>{6, 4}));
  const Tensor y = Unflatten(2, {2, -1}).forward(x);
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 3, 2, 2}));
  EXPECT_EQ(y.to_vector<int64_t>(), x.to_vector<int64_t>());
  EXPECT_EQ(Unflatten(1, {3, 1}).repr(), "Unflatten(dim=1, unflattened_size=(3, 1))");
}

// ---- bad configurations and inputs ----

TEST(Errors, LinearInFeaturesMismatch) {
  Linear fc(4, 3);
  NoGradGuard no_grad;
  const std::string msg = expect_error<ShapeError>([&] { fc.forward(ones({2, 5})); });
  expect_contains(msg, "Linear(in_features=4, out_features=3, bias=True)");
  expect_contains(msg, "[2, 5]");
  EXPECT_THROW(Linear(-1, 3), ValueError);
}

TEST(Errors, Conv2dWrongRankOrChannels) {
  Conv2d conv(3, 8, 3);
  NoGradGuard no_grad;
  std::string msg = expect_error<ShapeError>([&] { conv.forward(ones({2, 3, 5})); });
  expect_contains(msg, "Conv2d(3, 8");
  expect_contains(msg, "[2, 3, 5]");  // a 3-D input is unbatched (C, H, W): 2 channels, not 3
  msg = expect_error<ShapeError>([&] { conv.forward(ones({3, 5})); });
  expect_contains(msg, "3-D (unbatched) or 4-D (batched)");
  msg = expect_error<ShapeError>([&] { conv.forward(ones({1, 4, 5, 5})); });
  expect_contains(msg, "3 channels");
  expect_contains(msg, "[1, 4, 5, 5]");
  // An input smaller than the kernel: the op's complaint, prefixed with the module's name.
  msg = expect_error<ShapeError>([&] { conv.forward(ones({1, 3, 2, 2})); });
  expect_contains(msg, "Conv2d");
}

TEST(Errors, ConvOptions) {
  expect_contains(expect_error<ValueError>([] { Conv2d(3, 8, 3, {.groups = 2}); }),
                  "divisible by groups");
  expect_contains(
      expect_error<ValueError>([] { Conv2d(4, 8, 3, {.stride = 2, .padding = "same"}); }),
      "strided");
  expect_contains(expect_error<ValueError>([] { Conv1d(4, 8, 3, {.padding = "full"}); }), "full");
  expect_contains(expect_error<ValueError>([] { Conv2d(4, 8, 3, {.padding_mode = "mirror"}); }),
                  "padding_mode");
  EXPECT_THROW(Conv2d(4, 8, 0), ValueError);
  EXPECT_THROW(Conv2d(4, 8, {3, 3, 3}), ValueError);  // three sizes for two dims
}

TEST(Errors, AttentionAndTransformerConfigurations) {
  expect_contains(expect_error<ValueError>([] { MultiheadAttention(5, 2); }),
                  "embed_dim (5) must be divisible by num_heads (2)");
  expect_contains(
      expect_error<ValueError>([] { TransformerEncoderLayer(4, 2, {.activation = "tanh"}); }),
      "tanh");
  expect_contains(expect_error<ValueError>([] { GELU("fast"); }), "fast");
  expect_contains(expect_error<ValueError>([] { GroupNorm(3, 4); }), "divisible");
  EXPECT_THROW(Embedding(5, 3, /*padding_idx=*/5), ValueError);
}

TEST(Errors, AttentionInputs) {
  MultiheadAttention mha(4, 2);
  NoGradGuard no_grad;
  const Tensor q = ones({3, 2, 4}), kv = ones({5, 2, 4});
  expect_contains(expect_error<ShapeError>([&] {
                    mha.forward(ones({3, 2, 6}), kv, kv);
                  }),
                  "embed_dim = 4");
  expect_contains(expect_error<ShapeError>([&] {
                    mha.forward(q, kv, ones({4, 2, 4}));
                  }),
                  "key and value");
  expect_contains(expect_error<ShapeError>([&] {
                    mha.forward(q, ones({5, 3, 4}), ones({5, 3, 4}));
                  }),
                  "batch size");
  expect_contains(expect_error<ShapeError>([&] {
                    mha.forward(q, kv, kv, ones({2, 4}).to(kBool));
                  }),
                  "key_padding_mask");
  expect_contains(expect_error<ShapeError>([&] {
                    mha.forward(q, kv, kv, {}, true, ones({3, 4}).to(kBool));
                  }),
                  "attn_mask");
  EXPECT_THROW(mha.forward(q, kv, kv, {}, true, ones({3, 5}, kInt64)), DTypeError);
}

TEST(Errors, NormAndEmbeddingInputs) {
  NoGradGuard no_grad;
  BatchNorm2d bn(3);
  expect_contains(expect_error<ShapeError>([&] { bn.forward(ones({2, 3, 4})); }), "BatchNorm2d");
  expect_contains(expect_error<ShapeError>([&] { bn.forward(ones({2, 4, 2, 2})); }), "3 channels");
  BatchNorm1d bn1(3);
  EXPECT_THROW(bn1.forward(ones({2, 3, 4, 5})), ShapeError);
  LayerNorm ln({4});
  expect_contains(expect_error<ShapeError>([&] { ln.forward(ones({2, 5})); }), "LayerNorm((4,)");
  Embedding emb(5, 3);
  const std::string msg = expect_error<IndexError>([&] { emb.forward(tensor({0, 5})); });
  expect_contains(msg, "Embedding(5, 3)");
  MaxPool2d pool(2);
  EXPECT_THROW(pool.forward(ones({4, 4})), ShapeError);
}

}  // namespace
}  // namespace kiln::nn
