// InstanceNorm1d/2d/3d and functional instance_norm: outputs and running statistics equal
// PyTorch's (literals from PyTorch 1.13 in float64; input k of each case is ((7 k) mod 11 - 5) /
// 2), train vs eval, unbatched inputs, the errors, and the same results compiled.
#include <gtest/gtest.h>

#include <algorithm>

#include "kiln/kiln.h"
#include "tests/capture/compare.h"

namespace kiln::nn {
namespace {

namespace F = functional;
using Shape = std::vector<int64_t>;

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

double max_diff(const Tensor& a, const Tensor& b) {
  return (a.detach().to(kFloat64) - b.detach().to(kFloat64)).abs().max().item<double>();
}

// Same shape and the same values.
bool same(const Tensor& a, const Tensor& b) {
  if (a.sizes().vec() != b.sizes().vec()) return false;
  return a.to_vector<double>() == b.to_vector<double>();
}

Tensor input(Shape shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k)
    v[static_cast<size_t>(k)] = static_cast<double>((k * 7) % 11 - 5) / 2;
  return from_vector(v, shape);
}

void expect_values(const Tensor& got, const std::vector<double>& expected) {
  const std::vector<double> v = got.detach().to_vector<double>();
  ASSERT_EQ(v.size(), expected.size());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], expected[i], 1e-9) << "element " << i;
}

TEST(InstanceNorm, TrainingNormalizesEachPlaneAndUpdatesRunningStatsAsPyTorch) {
  InstanceNorm2d m(3, {.momentum = 0.3, .affine = true, .track_running_stats = true});
  m.to(kFloat64);
  const Tensor x = input({2, 3, 2, 3});
  expect_values(
      m(x),
      {-1.3930495836, 0.6965247918, -0.4975177084, 1.592056667,   0.3980141668,  -0.7960283335,
       1.36196734,    0.1513297044, -1.0593079311, 1.0593079311,  -0.1513297044, -1.36196734,
       0.2862984913,  -1.087934267, 1.31697306,    -0.0572596983, -1.4314924565, 0.9734148704,
       0.2862984913,  -1.087934267, 1.31697306,    -0.0572596983, -1.4314924565, 0.9734148704,
       -0.9734148704, 1.4314924565, 0.0572596983,  -1.31697306,   1.087934267,   -0.2862984913,
       -0.9734148704, 1.4314924565, 0.0572596983,  -1.31697306,   1.087934267,   -0.2862984913});
  // The mean over the batch of each plane's update, with the unbiased variance.
  expect_values(m.running_mean, {-0.0875, 0.025, 0.0});
  expect_values(m.running_var, {1.58625, 1.5725, 1.4625});
  m(x * 2.0 + 1.0);
  expect_values(m.running_mean, {0.06375, 0.3675, 0.3});
  expect_values(m.running_var, {4.655375, 4.59075, 4.07375});
  EXPECT_EQ(m.num_batches_tracked.item<int64_t>(), 0);  // PyTorch's instance norm never counts

  // Eval: the running statistics normalize, batched or not.
  m.eval();
  const std::vector<double> eval = {-1.1882227738, 0.4339243577,  -0.4930168603, 1.1291302711,
                                    0.0618405842,  -0.8716021965, 0.7619226698,  -0.171520111,
                                    -1.1395414219, 0.5945433506,  -0.3963622337, -1.387267818};
  expect_values(m(input({1, 3, 2, 2})), eval);
  const Tensor unbatched = m(input({3, 2, 2}));
  EXPECT_EQ(unbatched.sizes().vec(), (Shape{3, 2, 2}));
  expect_values(unbatched, eval);
  expect_values(m.running_mean, {0.06375, 0.3675, 0.3});  // eval leaves them (up to rounding)
}

TEST(InstanceNorm, WithoutRunningStatsEvalStillUsesTheInputsStatistics) {
  InstanceNorm1d m(4);
  EXPECT_TRUE(m.parameters().empty());
  EXPECT_TRUE(m.buffers().empty());
  const Tensor x = randn({3, 4, 5});
  const Tensor train = m(x);
  m.eval();
  EXPECT_TRUE(same(m(x), train));
  // Equal to group_norm with one channel per group.
  EXPECT_LT(max_diff(train, group_norm(x, 4)), 1e-5);
  // The channel count is not used without parameters or statistics (PyTorch only warns).
  EXPECT_EQ(m(randn({2, 6, 5})).sizes().vec(), (Shape{2, 6, 5}));
  EXPECT_EQ(m.repr(),
            "InstanceNorm1d(4, eps=1e-05, momentum=0.1, affine=False, "
            "track_running_stats=False)");
}

TEST(InstanceNorm, ModuleShapesAndStateDictAsPyTorch) {
  InstanceNorm3d m(2, {.affine = true, .track_running_stats = true});
  std::vector<std::string> names;
  for (const auto& [name, t] : m.state_dict().tensors) names.push_back(name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"bias", "num_batches_tracked", "running_mean",
                                             "running_var", "weight"}));
  EXPECT_EQ(m(randn({2, 2, 3, 2, 2})).sizes().vec(), (Shape{2, 2, 3, 2, 2}));
  EXPECT_EQ(m(randn({2, 3, 2, 2})).sizes().vec(), (Shape{2, 3, 2, 2}));  // unbatched
  expect_contains(expect_error<ShapeError>([&] {
                    m(randn({2, 3, 3, 2, 2}));
                  }),
                  "InstanceNorm3d(2, eps=1e-05, momentum=0.1, affine=True, "
                  "track_running_stats=True): expected 2 channels in dim 1");
  expect_contains(expect_error<ShapeError>([&] {
                    m(randn({2, 2}));
                  }),
                  "expected a 4-D (C, *spatial) or 5-D (N, C, *spatial) input");
  expect_contains(expect_error<ValueError>([&] {
                    m(randn({2, 2, 1, 1, 1}));
                  }),
                  "expected more than 1 spatial element");
  expect_error<ValueError>([] { InstanceNorm2d(0); });
  expect_error<ValueError>([] { InstanceNorm2d(3, {.momentum = 1.5}); });
}

TEST(InstanceNorm, FunctionalWithRunningStatsInEvalMatchesPyTorch) {
  const Tensor rm = from_vector(std::vector<double>{0.5, -1, 2});
  const Tensor rv = from_vector(std::vector<double>{1.5, 0.25, 2});
  expect_values(
      F::instance_norm(input({2, 3, 4}), rm, rv, {}, {}, /*use_input_stats=*/false),
      {-2.4494815779, 0.4082469296,  -1.2247407889, 1.6329877186,  2.9999400018,  -0.9999800006,
       5.9998800036,  1.9999600012,  -2.8284200537, -0.3535525067, -1.7677625336, -3.1819725604,
       0.4082469296,  -1.2247407889, 1.6329877186,  0.0,           -0.9999800006, 5.9998800036,
       1.9999600012,  -1.9999600012, -0.3535525067, -1.7677625336, -3.1819725604, -0.7071050134});
  expect_contains(expect_error<ValueError>([] {
                    F::instance_norm(randn({2, 3, 4}), {}, {}, {}, {}, false);
                  }),
                  "instance_norm: use_input_stats=false normalizes with running_mean");
}

TEST(InstanceNorm, AnEmptyBatchKeepsTheRunningStats) {
  InstanceNorm1d m(3, {.track_running_stats = true});
  EXPECT_EQ(m(zeros({0, 3, 4})).sizes().vec(), (Shape{0, 3, 4}));
  EXPECT_EQ(m.running_mean.to_vector<float>(), std::vector<float>(3, 0.0f));
  EXPECT_EQ(m.running_var.to_vector<float>(), std::vector<float>(3, 1.0f));
}

// ---- compiled ----

// A compiled training forward gives eager's output, input and weight gradients, and running
// statistics; then eval mode (a guard on the module's mode) too.
TEST(CompiledInstanceNorm, TrainingAndEvalMatchEager) {
  InstanceNorm2d compiled_norm(3, {.affine = true, .track_running_stats = true});
  InstanceNorm2d eager_norm(3, {.affine = true, .track_running_stats = true});
  auto loss = [](Module& m, const Tensor& x, const Tensor& w) { return (m(x) * w).sum(); };
  auto f = compile(loss, testing::inductor());
  const Tensor x0 = randn({2, 3, 4, 5}), w = randn({2, 3, 4, 5});
  for (int step = 0; step < 2; ++step) {
    Tensor xc = x0.clone().requires_grad_(), xe = x0.clone().requires_grad_();
    f(compiled_norm, xc, w).backward();
    loss(eager_norm, xe, w).backward();
    testing::expect_equal(xc.grad(), xe.grad());
    testing::expect_equal(compiled_norm.weight.grad(), eager_norm.weight.grad());
    testing::expect_equal(compiled_norm.running_mean, eager_norm.running_mean);
    testing::expect_equal(compiled_norm.running_var, eager_norm.running_var);
  }
  compiled_norm.eval();
  eager_norm.eval();
  auto g = compile([](Module& m, const Tensor& x) { return m(x); }, testing::inductor());
  testing::expect_equal(g(compiled_norm, x0), eager_norm(x0));
}

TEST(CompiledInstanceNorm, WithoutRunningStatsMatchesEagerWithGradients) {
  InstanceNorm1d norm(4, {.affine = true});
  auto loss = [](Module& m, const Tensor& x, const Tensor& w) { return (m(x) * w).sum(); };
  auto f = compile(loss, testing::inductor());
  Tensor xc = randn({3, 4, 6}).requires_grad_();
  Tensor xe = xc.detach().clone().requires_grad_();
  const Tensor w = randn({3, 4, 6});
  f(norm, xc, w).backward();
  const Tensor weight_grad = norm.weight.grad().clone();
  norm.zero_grad();
  loss(norm, xe, w).backward();
  testing::expect_equal(xc.grad(), xe.grad());
  testing::expect_equal(weight_grad, norm.weight.grad());
}

}  // namespace
}  // namespace kiln::nn
