// Losses: reductions and shape checks that name the loss, and properties that follow from their
// definitions (values against PyTorch are in reference_test.cpp).
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"

namespace kiln::nn {
namespace {

namespace F = functional;

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

TEST(Loss, BadReductionIsAValueErrorNamingTheLoss) {
  expect_contains(expect_error<ValueError>([] { CrossEntropyLoss({.reduction = "avg"}); }),
                  "CrossEntropyLoss");
  expect_contains(expect_error<ValueError>([] { NLLLoss({.reduction = "avg"}); }), "NLLLoss");
  expect_contains(expect_error<ValueError>([] { MSELoss("avg"); }), "MSELoss");
  expect_contains(expect_error<ValueError>([] { L1Loss("avg"); }), "\"avg\"");
  expect_contains(expect_error<ValueError>([] { SmoothL1Loss("batchmean"); }), "SmoothL1Loss");
  expect_contains(expect_error<ValueError>([] { HuberLoss("avg"); }), "HuberLoss");
  expect_contains(expect_error<ValueError>([] { BCELoss({.reduction = "avg"}); }), "BCELoss");
  expect_contains(expect_error<ValueError>([] { BCEWithLogitsLoss({.reduction = "avg"}); }),
                  "BCEWithLogitsLoss");
  expect_contains(expect_error<ValueError>([] { KLDivLoss("avg"); }), "batchmean");
  EXPECT_EQ(KLDivLoss("batchmean").reduction, "batchmean");
  const Tensor x = zeros({2, 3});
  expect_contains(expect_error<ValueError>([&] { F::l1_loss(x, x, "avg"); }), "l1_loss");
  expect_contains(expect_error<ValueError>([&] { F::kl_div(x, x, "avg"); }), "kl_div");
}

TEST(Loss, ShapeMismatchesAreShapeErrorsNamingTheLoss) {
  const Tensor a = zeros({3, 4}), b = zeros({3, 5});
  expect_contains(expect_error<ShapeError>([&] { L1Loss()(a, b); }), "L1Loss");
  expect_contains(expect_error<ShapeError>([&] { MSELoss()(a, b); }), "MSELoss");
  expect_contains(expect_error<ShapeError>([&] { SmoothL1Loss()(a, b); }), "SmoothL1Loss");
  expect_contains(expect_error<ShapeError>([&] { HuberLoss()(a, b); }), "HuberLoss");
  expect_contains(expect_error<ShapeError>([&] { KLDivLoss()(a, b); }), "KLDivLoss");
  expect_contains(expect_error<ShapeError>([&] {
                    BCELoss()(full({3, 4}, 0.5), full({3, 1}, 0.5));
                  }),
                  "BCELoss");
  expect_contains(expect_error<ShapeError>([&] { BCEWithLogitsLoss()(a, b); }),
                  "BCEWithLogitsLoss");
  const std::string msg = expect_error<ShapeError>([&] {
    CrossEntropyLoss()(zeros({4, 3}), tensor({0, 1, 2}));
  });
  expect_contains(msg, "CrossEntropyLoss");
  expect_contains(msg, "[4]");
  expect_contains(expect_error<ShapeError>([&] {
                    NLLLoss()(zeros({4, 3}), tensor({0, 1}));
                  }),
                  "NLLLoss");
}

TEST(Loss, BCERejectsInputsOutsideZeroOne) {
  const std::string msg = expect_error<ValueError>([] {
    BCELoss()(tensor({0.5, 1.5}), tensor({1.0, 0.0}));
  });
  expect_contains(msg, "BCELoss");
  expect_contains(msg, "[0, 1]");
  EXPECT_THROW(F::binary_cross_entropy(tensor({NAN}), tensor({1.0})), ValueError);
}

TEST(Loss, BCEClampsTheLogAtMinus100) {
  // A confident wrong answer costs exactly 100, not infinity.
  const Tensor loss = BCELoss({.reduction = "none"})(tensor({0.0, 1.0}), tensor({1.0, 0.0}));
  EXPECT_EQ(loss.to_vector<double>(), (std::vector<double>{100.0, 100.0}));
}

TEST(Loss, SmoothL1WithBetaZeroIsL1AndHuberIsBetaTimesSmoothL1) {
  manual_seed(0);
  const Tensor x = randn({50}), y = randn({50});
  const std::vector<double> l1 = F::l1_loss(x, y, "none").to_vector<double>();
  EXPECT_EQ(F::smooth_l1_loss(x, y, "none", 0.0).to_vector<double>(), l1);
  // huber(delta) = delta * smooth_l1(beta = delta), by their definitions.
  const std::vector<double> huber = F::huber_loss(x, y, "none", 0.7).to_vector<double>();
  const std::vector<double> smooth = F::smooth_l1_loss(x, y, "none", 0.7).to_vector<double>();
  for (size_t i = 0; i < huber.size(); ++i) EXPECT_NEAR(huber[i], 0.7 * smooth[i], 1e-6);
  EXPECT_THROW(SmoothL1Loss("mean", -1.0), ValueError);
  EXPECT_THROW(HuberLoss("mean", 0.0), ValueError);
}

TEST(Loss, KLDivergenceOfADistributionWithItselfIsZero) {
  const Tensor p = softmax(tensor({1.0, 2.0, 0.5, -1.0}, kFloat64).view({1, 4}), 1);
  EXPECT_NEAR(F::kl_div(p.log(), p, "sum").item<double>(), 0.0, 1e-15);
  EXPECT_NEAR(F::kl_div(p.log(), p.log(), "batchmean", true).item<double>(), 0.0, 1e-15);
}

TEST(Loss, WeightsAreBuffersInTheStateDict) {
  CrossEntropyLoss weighted({.weight = tensor({1.0, 2.0})});
  EXPECT_EQ(weighted.state_dict().tensors.count("weight"), 1u);
  EXPECT_TRUE(CrossEntropyLoss().state_dict().empty());
  BCEWithLogitsLoss bce({.pos_weight = tensor({3.0})});
  EXPECT_EQ(bce.state_dict().tensors.count("pos_weight"), 1u);
  EXPECT_EQ(bce.state_dict().tensors.count("weight"), 0u);
}

TEST(Loss, IntegerInputsAreRejected) {
  EXPECT_THROW(F::l1_loss(tensor({1, 2}), tensor({1, 2})), DTypeError);
}

TEST(Activations, LeakyReluAndEluFollowTheirDefinitions) {
  const Tensor x = tensor({-2.0, -0.5, 0.0, 3.0}, kFloat64);
  EXPECT_EQ(F::leaky_relu(x, 0.1).to_vector<double>(), (std::vector<double>{-0.2, -0.05, 0, 3}));
  const std::vector<double> e = F::elu(x, 2.0).to_vector<double>();
  EXPECT_DOUBLE_EQ(e[0], 2.0 * std::expm1(-2.0));
  EXPECT_DOUBLE_EQ(e[1], 2.0 * std::expm1(-0.5));
  EXPECT_EQ(e[2], 0.0);
  EXPECT_EQ(e[3], 3.0);
  // A huge input stays finite (the exponential only sees the negative side).
  EXPECT_EQ(F::elu(tensor({1000.0}, kFloat64)).item<double>(), 1000.0);
}

}  // namespace
}  // namespace kiln::nn
