// Gradients of the nn, shape and index ops through the public API, for what the op harness's
// gradient check can't reach: rules that differ from the plain derivative (padding_idx, running
// statistics, every target ignored), the kernels' fast paths on inputs too large for finite
// differences, random ops, and in-place ops on views.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"

namespace kiln {
namespace {

void expect_near(const std::vector<double>& got, const std::vector<double>& expected, double tol) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tol) << "at " << i;
}

TEST(NnGrad, EmbeddingPaddingRowGetsNoGradient) {
  const Tensor w = randn({5, 3}, kFloat64).requires_grad_();
  const Tensor idx = tensor({0, 2, 0, 4});
  const Tensor g = randn({4, 3}, kFloat64);
  embedding(w, idx, /*padding_idx=*/0).backward(g);
  const std::vector<double> gv = g.to_vector<double>();
  std::vector<double> expected(15, 0.0);  // rows 0 (padding), 1 and 3 (unused) stay zero
  for (int d = 0; d < 3; ++d) {
    expected[2 * 3 + d] = gv[1 * 3 + d];
    expected[4 * 3 + d] = gv[3 * 3 + d];
  }
  expect_near(w.grad().to_vector<double>(), expected, 1e-15);
}

TEST(NnGrad, EmbeddingRepeatedIndicesAddUp) {
  const Tensor w = zeros({3, 2}).requires_grad_();
  embedding(w, tensor({1, 1, 1, 2})).backward(ones({4, 2}));
  expect_near(w.grad().to_vector<double>(), {0, 0, 3, 3, 1, 1}, 0);
}

TEST(NnGrad, BatchNormTrainingUpdatesRunningStatsOutsideTheGraph) {
  const Tensor x = randn({8, 3, 4}).requires_grad_();
  const Tensor w = ones({3}).requires_grad_(), b = zeros({3}).requires_grad_();
  const Tensor rm = zeros({3}), rv = ones({3});
  for (int step = 0; step < 3; ++step) {  // the training pattern: forward, update, backward
    const Tensor y = batch_norm(x, rm, rv, w, b, /*training=*/true, 0.1, 1e-5);
    y.backward(randn({8, 3, 4}));
  }
  EXPECT_FALSE(rm.requires_grad());
  EXPECT_FALSE(rv.requires_grad());
  EXPECT_FALSE(rm.grad().defined());
  EXPECT_TRUE(x.grad().defined());
  // Three momentum-0.1 updates towards the batch mean: rm = (1 - 0.9^3) * mean(x).
  const std::vector<double> mean = x.detach().mean({0, 2}).to_vector<double>();
  std::vector<double> expected;
  for (double m : mean) expected.push_back((1 - 0.9 * 0.9 * 0.9) * m);
  expect_near(rm.to_vector<double>(), expected, 1e-5);
}

TEST(NnGrad, BatchNormEvalIsAffineInInputAndRunningStats) {
  const Tensor x = randn({4, 2, 3}, kFloat64).requires_grad_();
  const Tensor w = randn({2}, kFloat64);
  const Tensor rm = randn({2}, kFloat64).requires_grad_();
  const Tensor rv = (rand({2}, kFloat64) + 0.5).requires_grad_();
  const Tensor g = randn({4, 2, 3}, kFloat64);
  const double eps = 1e-5;
  batch_norm(x, rm, rv, w, Tensor(), /*training=*/false, 0.1, eps).backward(g);
  const std::vector<double> xv = x.detach().to_vector<double>(), gv = g.to_vector<double>();
  const std::vector<double> wv = w.to_vector<double>(), mv = rm.detach().to_vector<double>(),
                            vv = rv.detach().to_vector<double>();
  std::vector<double> gx(24), grm(2, 0.0), grv(2, 0.0);
  for (int k = 0; k < 24; ++k) {
    const int c = (k / 3) % 2;
    const double invstd = 1 / std::sqrt(vv[c] + eps);
    gx[k] = gv[k] * wv[c] * invstd;
    grm[c] -= gv[k] * wv[c] * invstd;
    grv[c] += gv[k] * wv[c] * (xv[k] - mv[c]) * -0.5 * invstd * invstd * invstd;
  }
  expect_near(x.grad().to_vector<double>(), gx, 1e-12);
  expect_near(rm.grad().to_vector<double>(), grm, 1e-12);
  expect_near(rv.grad().to_vector<double>(), grv, 1e-12);
}

TEST(NnGrad, CrossEntropyGradientIsSoftmaxMinusOneHot) {
  // float32, 37 classes: the vectorized rows with a ragged tail.
  const int64_t N = 64, C = 37;
  const Tensor x = (randn({N, C}) * 3.0).requires_grad_();
  const Tensor t = randint(0, C, {N});
  cross_entropy(x, t).backward();
  const std::vector<double> xv = x.detach().to_vector<double>();
  const std::vector<int64_t> tv = t.to_vector<int64_t>();
  std::vector<double> expected(static_cast<size_t>(N * C));
  for (int64_t s = 0; s < N; ++s) {
    double mx = -INFINITY, sum = 0;
    for (int64_t c = 0; c < C; ++c) mx = std::max(mx, xv[s * C + c]);
    for (int64_t c = 0; c < C; ++c) sum += std::exp(xv[s * C + c] - mx);
    for (int64_t c = 0; c < C; ++c)
      expected[s * C + c] = (std::exp(xv[s * C + c] - mx) / sum - (c == tv[s])) / N;
  }
  expect_near(x.grad().to_vector<double>(), expected, 1e-7);
}

TEST(NnGrad, CrossEntropyWithEveryTargetIgnoredHasZeroGradients) {
  const Tensor x = randn({3, 4}).requires_grad_();
  const Tensor loss = cross_entropy(x, full({3}, -100, kInt64));
  EXPECT_TRUE(std::isnan(loss.item<double>()));  // 0 / 0, as PyTorch
  loss.backward();
  expect_near(x.grad().to_vector<double>(), std::vector<double>(12, 0.0), 0);
}

TEST(NnGrad, CrossEntropyProbabilityTargetGetsAGradient) {
  // d loss / d target = -log_softmax(x) / N for 'mean' without smoothing.
  const Tensor x = randn({2, 3}, kFloat64).requires_grad_();
  const Tensor target = rand({2, 3}, kFloat64).requires_grad_();
  cross_entropy(x, target).backward();
  const std::vector<double> xv = x.detach().to_vector<double>();
  std::vector<double> expected;
  for (int s = 0; s < 2; ++s) {
    double lse = 0;
    for (int c = 0; c < 3; ++c) lse += std::exp(xv[s * 3 + c]);
    for (int c = 0; c < 3; ++c) expected.push_back(-(xv[s * 3 + c] - std::log(lse)) / 2);
  }
  expect_near(target.grad().to_vector<double>(), expected, 1e-12);
}

TEST(NnGrad, DropoutGradientUsesTheForwardMask) {
  const Tensor x = (rand({1000}) + 1.0).requires_grad_();  // no zeros: a zero output means dropped
  const Tensor y = dropout(x, 0.3, /*train=*/true);
  y.backward(ones({1000}));
  const std::vector<double> xv = x.detach().to_vector<double>(),
                            yv = y.detach().to_vector<double>();
  const std::vector<double> gv = x.grad().to_vector<double>();
  int dropped = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    if (yv[i] == 0) {
      ++dropped;
      EXPECT_EQ(gv[i], 0.0) << i;
    } else {
      EXPECT_NEAR(gv[i], 1 / 0.7, 1e-6) << i;
      EXPECT_NEAR(yv[i], xv[i] * gv[i], 1e-5) << i;
    }
  }
  EXPECT_GT(dropped, 200);
  EXPECT_LT(dropped, 400);
}

// The rows r of the layer-norm gradient of rows of n values, in double.
std::vector<double> layer_norm_grad_rows(const Tensor& x, const Tensor& g, const Tensor& w,
                                         const std::vector<int64_t>& rows, double eps) {
  const int64_t n = x.size(1);
  const std::vector<double> wv = w.to_vector<double>();
  std::vector<double> out;
  for (int64_t r : rows) {
    const std::vector<double> xr = x[r].to_vector<double>(), gr = g[r].to_vector<double>();
    double mean = 0, var = 0, sa = 0, saxh = 0;
    for (double v : xr) mean += v / n;
    for (double v : xr) var += (v - mean) * (v - mean) / n;
    const double rstd = 1 / std::sqrt(var + eps);
    for (int64_t i = 0; i < n; ++i) {
      sa += gr[i] * wv[i];
      saxh += gr[i] * wv[i] * (xr[i] - mean) * rstd;
    }
    for (int64_t i = 0; i < n; ++i)
      out.push_back(rstd * (gr[i] * wv[i] - sa / n - (xr[i] - mean) * rstd * saxh / n));
  }
  return out;
}

TEST(NnGrad, LayerNormLargeInputMatchesFloat64Rows) {
  // 16 MiB of float32: the parallel path with streaming stores (Note [Streaming stores]).
  const int64_t M = 1024, N = 4096;
  const Tensor x = (rand({M, N}) * 4.0 - 2.0).requires_grad_();
  const Tensor w = randn({N}).requires_grad_();
  const Tensor g = rand({M, N}) * 2.0 - 1.0;
  layer_norm(x, {N}, w, Tensor(), 1e-5).backward(g);
  const std::vector<int64_t> rows{0, 517, M - 1};
  std::vector<double> got;
  for (int64_t r : rows)
    for (double v : x.grad()[r].to_vector<double>()) got.push_back(v);
  expect_near(got, layer_norm_grad_rows(x.detach(), g, w.detach(), rows, 1e-5), 2e-4);
}

TEST(NnGrad, BatchNormLargeInputMatchesFloat64Channels) {
  // 16 MiB of float32: the streaming-store path of the batch_norm backward.
  const Tensor x = (rand({64, 4, 128, 128}) * 4.0 - 2.0).requires_grad_();
  const Tensor g = rand({64, 4, 128, 128}) * 2.0 - 1.0;
  batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), /*training=*/true, 0.1, 1e-5).backward(g);
  // Channel 2 as rows of one [1, count] layer norm: the same gradient.
  const Tensor xc = x.detach().select(1, 2).reshape({1, -1}).to(kFloat64);
  const Tensor gc = g.select(1, 2).reshape({1, -1}).to(kFloat64);
  const std::vector<double> expected =
      layer_norm_grad_rows(xc, gc, ones({xc.size(1)}, kFloat64), {0}, 1e-5);
  const std::vector<double> got = x.grad().select(1, 2).reshape({-1}).to_vector<double>();
  expect_near(got, expected, 1e-5);
}

TEST(NnGrad, IndexPutOnAViewOfATrackedTensor) {
  // base[1:3][[0, 1], [2, 0]] = v: the view's in-place write rebases base's history.
  const Tensor x = randn({4, 3}, kFloat64).requires_grad_();
  const Tensor v = randn({2}, kFloat64).requires_grad_();
  const Tensor base = x * 1.0;
  const Tensor view = base.narrow(0, 1, 2);
  index_put_(view, {tensor({0, 1}), tensor({2, 0})}, v);
  base.backward(ones({4, 3}, kFloat64));
  // x gets ones except at the overwritten positions (1, 2) and (2, 0); v gets ones.
  std::vector<double> gx(12, 1.0);
  gx[1 * 3 + 2] = 0;
  gx[2 * 3 + 0] = 0;
  expect_near(x.grad().to_vector<double>(), gx, 0);
  expect_near(v.grad().to_vector<double>(), {1, 1}, 0);
}

TEST(NnGrad, ScatterAddOfTrackedSourceGathersTheGradient) {
  const Tensor src = randn({2, 3}, kFloat64).requires_grad_();
  const Tensor index = tensor({0, 2, 2, 1, 0, 1}).reshape({2, 3});
  const Tensor g = randn({3, 3}, kFloat64);
  zeros({3, 3}, kFloat64).scatter_add(0, index, src).backward(g);
  const std::vector<double> gv = g.to_vector<double>();
  const std::vector<int64_t> iv = index.to_vector<int64_t>();
  std::vector<double> expected;
  for (int k = 0; k < 6; ++k) expected.push_back(gv[iv[k] * 3 + k % 3]);
  expect_near(src.grad().to_vector<double>(), expected, 0);
}

}  // namespace
}  // namespace kiln
