// Gradients of the matrix products, convolutions and pooling through the public API, for what
// the op harness's gradient check can't reach: the kernels' fast paths on inputs too large for
// full finite differences (per-kernel-row products, batch-parallel weight accumulation, 2x2
// pooling vectors), the two max-pool gradients agreeing, partial output masks, ties, and saved
// tensors modified in place.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"

namespace kiln {
namespace {

void expect_near(const Tensor& actual, const Tensor& expected, double tol) {
  ASSERT_EQ(actual.sizes(), expected.sizes());
  const std::vector<double> a = actual.contiguous().to(kFloat64).to_vector<double>();
  const std::vector<double> e = expected.contiguous().to(kFloat64).to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], e[i], tol) << "at " << i;
}

// d loss / d t at a flat position, by central differences of a float64 `loss` (no grad).
template <typename Loss>
double numeric_derivative(const Tensor& t, int64_t flat, const Loss& loss) {
  constexpr double kEps = 1e-6;
  NoGradGuard no_grad;
  double* p = t.data_ptr<double>() + flat;
  const double saved = *p;
  *p = saved + kEps;
  const double plus = loss().template item<double>();
  *p = saved - kEps;
  const double minus = loss().template item<double>();
  *p = saved;
  return (plus - minus) / (2 * kEps);
}

TEST(LinalgGrad, DeepConvSpotCheckAgainstFiniteDifferences) {
  // 24 input channels x 3 kernel columns = 72 >= 64: the products run per kernel row, and 4
  // samples split over the threads accumulate the weight gradient separately. Too large for the
  // harness's full finite differences: spot-check a few coordinates of each input.
  const Tensor x = randn({4, 24, 7, 6}, kFloat64).requires_grad_();
  const Tensor w = randn({10, 24, 3, 3}, kFloat64).requires_grad_();
  const Tensor b = randn({10}, kFloat64).requires_grad_();
  const Tensor v = randn({4, 10, 4, 6}, kFloat64);  // output: stride (2, 1), padding 1
  auto loss = [&] { return (conv2d(x, w, b, {2, 1}, 1) * v).sum(); };
  loss().backward();
  for (int64_t flat : {0, 77, 1000, 4031}) {
    EXPECT_NEAR(x.grad().flatten().select(0, flat).item<double>(),
                numeric_derivative(x, flat, loss), 1e-6)
        << "input " << flat;
  }
  for (int64_t flat : {0, 5, 333, 2159}) {
    EXPECT_NEAR(w.grad().flatten().select(0, flat).item<double>(),
                numeric_derivative(w, flat, loss), 1e-6)
        << "weight " << flat;
  }
  EXPECT_NEAR(b.grad().select(0, 3).item<double>(), numeric_derivative(b, 3, loss), 1e-6);
}

TEST(LinalgGrad, ConvWeightGradientAloneMatchesTheFullBackward) {
  // A first layer: the input needs no gradient, so the backward skips grad_input.
  const Tensor x = randn({8, 3, 12, 12});
  const Tensor w = randn({16, 3, 5, 5}).requires_grad_();
  const Tensor v = randn({8, 16, 12, 12});
  (conv2d(x, w, {}, 1, 2) * v).sum().backward();
  const Tensor weight_only = w.grad().clone();
  const Tensor xg = x.clone().requires_grad_();
  w.mutable_grad() = Tensor();
  (conv2d(xg, w, {}, 1, 2) * v).sum().backward();
  ASSERT_TRUE(xg.grad().defined());
  expect_near(weight_only, w.grad(), 1e-4);
}

TEST(LinalgGrad, Float32ConvGradientsMatchFloat64) {
  // The demo's second layer at batch 16 (per-kernel-row products, batch-parallel accumulation)
  // in float32 against the same computation in float64.
  const Tensor x64 = randn({16, 32, 14, 14}, kFloat64),
               w64 = randn({64, 32, 5, 5}, kFloat64) * 0.05;
  const Tensor v64 = randn({16, 64, 14, 14}, kFloat64);
  auto grads = [&](ScalarType dt) {
    const Tensor x = x64.to(dt).requires_grad_(), w = w64.to(dt).requires_grad_();
    const Tensor b = zeros({64}, dt).requires_grad_();
    (conv2d(x, w, b, 1, 2) * v64.to(dt)).sum().backward();
    return std::vector<Tensor>{x.grad(), w.grad(), b.grad()};
  };
  const std::vector<Tensor> single = grads(kFloat32), dbl = grads(kFloat64);
  expect_near(single[0], dbl[0], 1e-3);
  expect_near(single[1], dbl[1], 2e-2);  // sums of 16 * 196 products
  expect_near(single[2], dbl[2], 2e-2);
}

TEST(LinalgGrad, MaxPoolGradientsWithAndWithoutIndicesAgree) {
  // max_pool2d finds each window's argmax again; max_pool2d_with_indices scatters to its stored
  // indices. Both must pick the same element: overlapping windows with padding, exact 2x2 tiles
  // (the vector path), clipped ceil_mode tiles.
  struct Case {
    std::vector<int64_t> shape, kernel, stride, padding;
    bool ceil_mode;
  };
  const std::vector<Case> cases = {{{4, 8, 28, 28}, {2}, {}, {0}, false},
                                   {{2, 3, 9, 10}, {3}, {2}, {1}, false},
                                   {{2, 3, 9, 11}, {2}, {2}, {0}, true},
                                   {{2, 3, 8, 8}, {3, 2}, {1}, {1, 0}, false}};
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(::testing::Message() << "case " << i);
    const Tensor x = randn(c.shape).requires_grad_();
    const Tensor v =
        randn(max_pool2d(x.detach(), c.kernel, c.stride, c.padding, 1, c.ceil_mode).sizes());
    (max_pool2d(x, c.kernel, c.stride, c.padding, 1, c.ceil_mode) * v).sum().backward();
    const Tensor rescanned = x.grad().clone();
    x.mutable_grad() = Tensor();
    auto [values, indices] =
        max_pool2d_with_indices(x, c.kernel, c.stride, c.padding, 1, c.ceil_mode);
    (values * v).sum().backward();
    expect_near(rescanned, x.grad(), 0);
  }
}

TEST(LinalgGrad, MaxPoolTiesSendTheGradientToTheFirstMaximum) {
  // As PyTorch: the first largest element of the window (row-major) gets the whole gradient.
  for (int64_t width : {4, 40}) {  // 40: 2x2 tiles through the vector body
    const Tensor x = full({1, 1, 2, width}, 3.0).requires_grad_();
    max_pool2d(x, {2}).sum().backward();
    const std::vector<double> g = x.grad().to(kFloat64).to_vector<double>();
    for (int64_t i = 0; i < 2 * width; ++i)
      EXPECT_EQ(g[static_cast<size_t>(i)], i < width && i % 2 == 0 ? 1.0 : 0.0) << "at " << i;
  }
}

TEST(LinalgGrad, MaxPoolNaNTakesTheGradient) {
  // A NaN wins its window (NaN propagates), so it gets the gradient, as in PyTorch.
  const Tensor x = tensor({1.0, NAN, 5.0, 2.0}, kFloat32).reshape({1, 1, 2, 2}).requires_grad_();
  max_pool2d(x, {2}).sum().backward();
  expect_near(x.grad(), tensor({0.0, 1.0, 0.0, 0.0}, kFloat32).reshape({1, 1, 2, 2}), 0);
}

TEST(LinalgGrad, LinearOnBatchedInputMatchesTheMatrixFormulas) {
  // linear is a composite (reshape, addmm with a transposed weight, view).
  const Tensor x = randn({2, 3, 4}, kFloat64).requires_grad_();
  const Tensor w = randn({5, 4}, kFloat64).requires_grad_();
  const Tensor b = randn({5}, kFloat64).requires_grad_();
  const Tensor g = randn({2, 3, 5}, kFloat64);
  linear(x, w, b).backward(g);
  const Tensor g2 = g.reshape({6, 5}), x2 = x.detach().reshape({6, 4});
  expect_near(x.grad(), g2.mm(w.detach()).reshape({2, 3, 4}), 1e-12);
  expect_near(w.grad(), g2.t().mm(x2), 1e-12);
  expect_near(b.grad(), g2.sum({0}), 1e-12);
  // Note [Gradient layout of a transposed operand]: the weight's gradient arrives row-major.
  EXPECT_TRUE(w.grad().is_contiguous());
}

TEST(LinalgGrad, ATransposedMat2GetsAGradientOfItsOwnLayout) {
  const Tensor m1 = randn({3, 4}, kFloat64).requires_grad_();
  const Tensor base = randn({5, 4}, kFloat64).requires_grad_();
  const Tensor g = randn({3, 5}, kFloat64);
  const Tensor view = base.t();  // [4, 5], column-major
  const Tensor grad_view = kiln::grad({mm(m1, view)}, {view}, {g})[0];
  expect_near(grad_view, m1.detach().t().mm(g), 1e-12);
  EXPECT_EQ(grad_view.strides().vec(), view.strides().vec());  // the view's own layout
  mm(m1, base.t()).backward(g);
  expect_near(base.grad(), g.t().mm(m1.detach()), 1e-12);
  EXPECT_TRUE(base.grad().is_contiguous());
  // A row-major mat2 keeps the plain formula.
  const Tensor m2 = randn({4, 5}, kFloat64).requires_grad_();
  mm(m1, m2).backward(g);
  expect_near(m2.grad(), m1.detach().t().mm(g), 1e-12);
  EXPECT_TRUE(m2.grad().is_contiguous());
}

TEST(LinalgGrad, AddmmScalesItsGradientsByBetaAndAlpha) {
  const Tensor self = randn({3, 5}, kFloat64).requires_grad_();
  const Tensor m1 = randn({3, 4}, kFloat64).requires_grad_();
  const Tensor m2 = randn({4, 5}, kFloat64).requires_grad_();
  const Tensor g = randn({3, 5}, kFloat64);
  addmm(self, m1, m2, 0.5, -2.0).backward(g);
  expect_near(self.grad(), g * 0.5, 1e-12);
  expect_near(m1.grad(), g.mm(m2.detach().t()) * -2.0, 1e-12);
  expect_near(m2.grad(), m1.detach().t().mm(g) * -2.0, 1e-12);
}

TEST(LinalgGrad, ModifyingAConvWeightInPlaceAfterForwardFailsBackward) {
  const Tensor x = randn({1, 2, 5, 5}).requires_grad_();
  Tensor w = randn({3, 2, 3, 3}).requires_grad_();
  Tensor w2 = w * 1.0;
  Tensor y = conv2d(x, w2);
  w2.mul_(2.0);
  try {
    y.sum().backward();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Conv2dBackward"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln
