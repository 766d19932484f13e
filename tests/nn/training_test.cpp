// Training end to end: gradients reach every parameter, and a few steps of plain SGD written by
// hand (p -= lr * p.grad() under NoGradGuard) lower the loss of small models.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"

namespace kiln::nn {
namespace {

namespace F = functional;

void sgd_step(Module& model, double lr) {
  NoGradGuard no_grad;
  for (const Tensor& p : model.parameters())
    if (p.grad().defined()) p.sub_(p.grad(), lr);
}

// Runs `steps` steps of SGD on loss_fn() and returns the losses before each step.
template <typename LossFn>
std::vector<double> train(Module& model, LossFn loss_fn, int steps, double lr) {
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    model.zero_grad();
    Tensor loss = loss_fn();
    losses.push_back(loss.item<double>());
    loss.backward();
    sgd_step(model, lr);
  }
  return losses;
}

void expect_every_parameter_has_a_gradient(const Module& model) {
  for (const auto& [name, p] : model.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_EQ(p.grad().sizes().vec(), p.sizes().vec()) << name;
    EXPECT_TRUE(p.grad().isfinite().all().item<bool>()) << name;
  }
}

TEST(Training, MlpClassifierLossDecreases) {
  manual_seed(0);
  // Two Gaussian blobs around (-1, -1) and (1, 1).
  const Tensor labels = cat({zeros({32}, kInt64), ones({32}, kInt64)});
  const Tensor centers = labels.to(kFloat32).unsqueeze(1) * 2.0 - 1.0;
  const Tensor x = centers + randn({64, 2}) * 0.5;
  Sequential model{std::make_shared<Linear>(2, 16), std::make_shared<ReLU>(),
                   std::make_shared<Linear>(16, 2)};
  CrossEntropyLoss loss;
  const std::vector<double> losses = train(
      model, [&] { return loss(model(x), labels); }, 30, 0.5);
  expect_every_parameter_has_a_gradient(model);
  EXPECT_LT(losses.back(), 0.1 * losses.front());
}

TEST(Training, CnnWithBatchNormAndPoolingLossDecreases) {
  manual_seed(1);
  const Tensor images = randn({12, 1, 8, 8});
  const Tensor labels = randint(0, 3, {12});
  Sequential model{std::make_shared<Conv2d>(1, 4, 3, ConvOptions<2>{.padding = 1}),
                   std::make_shared<BatchNorm2d>(4),
                   std::make_shared<ReLU>(),
                   std::make_shared<MaxPool2d>(2),
                   std::make_shared<Flatten>(),
                   std::make_shared<Dropout>(0.1),
                   std::make_shared<Linear>(4 * 4 * 4, 3)};
  CrossEntropyLoss loss({.label_smoothing = 0.05});
  const std::vector<double> losses = train(
      model, [&] { return loss(model(images), labels); }, 25, 0.2);
  expect_every_parameter_has_a_gradient(model);
  EXPECT_LT(losses.back(), 0.3 * losses.front());
  EXPECT_EQ(model.at<BatchNorm2d>(1)->num_batches_tracked.item<int64_t>(), 25);
}

// Embedding -> TransformerEncoderLayer -> Linear learns to copy its input tokens.
struct TinyTransformer : Module {
  TinyTransformer() : Module("TinyTransformer") {
    embed = register_module("embed", std::make_shared<Embedding>(10, 8, /*padding_idx=*/0));
    encoder = register_module(
        "encoder",
        std::make_shared<TransformerEncoderLayer>(
            8, 2,
            TransformerEncoderLayerOptions{
                .dim_feedforward = 16, .dropout = 0.1, .activation = "gelu", .batch_first = true}));
    head = register_module("head", std::make_shared<Linear>(8, 10));
  }
  Tensor forward(const Tensor& tokens) override {
    return head->forward(encoder->forward(embed->forward(tokens), {}, tokens == 0));
  }
  std::shared_ptr<Embedding> embed;
  std::shared_ptr<TransformerEncoderLayer> encoder;
  std::shared_ptr<Linear> head;
};

TEST(Training, TransformerEncoderLossDecreases) {
  manual_seed(2);
  TinyTransformer model;
  const Tensor tokens = randint(1, 10, {6, 5});
  CrossEntropyLoss loss;
  const std::vector<double> losses = train(
      model, [&] { return loss(model(tokens).flatten(0, 1), tokens.flatten()); }, 30, 0.3);
  expect_every_parameter_has_a_gradient(model);
  // Token 0 (padding) never occurs, and its row gets no gradient.
  EXPECT_EQ(model.embed->weight.grad().select(0, 0).abs().sum().item<double>(), 0.0);
  EXPECT_LT(losses.back(), 0.2 * losses.front());
}

TEST(Training, AttentionWeightsAreDifferentiable) {
  manual_seed(3);
  MultiheadAttention mha(4, 2, {.dropout = 0.2});
  const Tensor q = randn({3, 2, 4});
  auto [out, weights] = mha.forward(q, q, q);
  (out.sum() + weights.pow(2.0).sum()).backward();
  expect_every_parameter_has_a_gradient(mha);
}

// Gradients of the composed losses against their derivatives written out.
TEST(Training, ComposedLossGradientsMatchTheirFormulas) {
  const Tensor x = tensor({-2.0, -0.3, 0.2, 1.5}, kFloat64).requires_grad_();
  const Tensor y = zeros({4}, kFloat64);
  F::huber_loss(x, y, "sum", 1.0).backward();
  // d/dx huber = clamp(x - y, -delta, delta).
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{-1.0, -0.3, 0.2, 1.0}));

  // BCE: d/dp = (p - t) / (p (1 - p)); a probability of exactly 0 or 1 gets 0, not NaN.
  const Tensor p = tensor({0.0, 0.25, 0.5, 1.0}, kFloat64).requires_grad_();
  const Tensor t = tensor({1.0, 1.0, 0.0, 1.0}, kFloat64);
  F::binary_cross_entropy(p, t, {}, "sum").backward();
  const std::vector<double> g = p.grad().to_vector<double>();
  EXPECT_EQ(g[0], 0.0);
  EXPECT_NEAR(g[1], (0.25 - 1.0) / (0.25 * 0.75), 1e-12);
  EXPECT_NEAR(g[2], 0.5 / 0.25, 1e-12);
  EXPECT_TRUE(std::isfinite(g[3]));

  // ELU: derivative alpha * exp(x) below 0, 1 above; finite for huge inputs.
  const Tensor z = tensor({-1.0, 2.0, 1000.0}, kFloat64).requires_grad_();
  F::elu(z, 2.0).sum().backward();
  const std::vector<double> dz = z.grad().to_vector<double>();
  EXPECT_NEAR(dz[0], 2.0 * std::exp(-1.0), 1e-12);
  EXPECT_EQ(dz[1], 1.0);
  EXPECT_EQ(dz[2], 1.0);
}

TEST(Training, ClipGradNormAfterBackward) {
  manual_seed(4);
  Linear fc(10, 10);
  (fc(randn({8, 10}) * 100.0).pow(2.0).sum()).backward();
  const double total = clip_grad_norm_(fc.parameters(), 1.0).item<double>();
  EXPECT_GT(total, 1.0);
  double clipped = 0.0;
  for (const Tensor& p : fc.parameters()) clipped += p.grad().pow(2.0).sum().item<double>();
  EXPECT_NEAR(std::sqrt(clipped), 1.0, 1e-4);
}

}  // namespace
}  // namespace kiln::nn
