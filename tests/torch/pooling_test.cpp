// torch::nn's 1-d and 3-d pools and adaptive max pools (kiln/torch/nn_pooling.h): LibTorch's
// options, modules with forward_with_indices, the functionals and the torch:: free functions,
// each against Kiln's op with the same arguments (the ops are checked against float64 references
// in tests/ops and against PyTorch in tests/nn/pooling_test.cpp).
#include <gtest/gtest.h>

#include <optional>
#include <tuple>
#include <vector>

#include "kiln/ops/creation.h"
#include "kiln/ops/random.h"
#include "kiln/ops/reduce.h"
#include "kiln/torch/nn.h"
#include "kiln/torch/tensor_ops.h"

namespace {

namespace F = torch::nn::functional;
using kiln::Tensor;

std::vector<int64_t> shape(const Tensor& t) { return t.sizes().vec(); }

// Same shape and the same values (the same op runs on both sides).
void expect_same(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(shape(a), shape(b));
  EXPECT_TRUE(torch::equal(a.detach(), b.detach()));
}

TEST(TorchNnPooling, MaxPool1dAnd3dWithOptionsAndIndices) {
  const Tensor x1 = kiln::randn({2, 3, 9}), x3 = kiln::randn({2, 2, 5, 6, 7});
  torch::nn::MaxPool1d m1(torch::nn::MaxPool1dOptions(3).stride(2).padding(1).ceil_mode(true));
  expect_same(m1(x1), kiln::max_pool1d(x1, 3, 2, 1, 1, true));
  auto [v1, i1] = m1->forward_with_indices(x1);
  expect_same(i1, kiln::max_pool1d_with_indices(x1, 3, 2, 1, 1, true).second);
  expect_same(v1, m1(x1));
  EXPECT_EQ(shape(torch::nn::MaxPool1d(2)(x1)), (std::vector<int64_t>{2, 3, 4}));  // stride 2

  torch::nn::MaxPool3d m3(
      torch::nn::MaxPool3dOptions({2, 3, 2}).stride({1, 2, 2}).padding({1, 1, 0}).dilation(
          {1, 1, 2}));
  expect_same(m3(x3), kiln::max_pool3d(x3, {2, 3, 2}, {1, 2, 2}, {1, 1, 0}, {1, 1, 2}));
  std::tuple<Tensor, Tensor> with_indices = m3->forward_with_indices(x3);
  expect_same(std::get<1>(with_indices),
              kiln::max_pool3d_with_indices(x3, {2, 3, 2}, {1, 2, 2}, {1, 1, 0}, {1, 1, 2}).second);
  EXPECT_EQ(m3->options.kernel_size(), (torch::ExpandingArray<3>({2, 3, 2})));
  torch::nn::MaxPool2d m2(torch::nn::MaxPool2dOptions(2));
  const Tensor x2 = kiln::randn({2, 3, 6, 6});
  expect_same(std::get<1>(m2->forward_with_indices(x2)),
              kiln::max_pool2d_with_indices(x2, 2).second);
}

TEST(TorchNnPooling, AvgPool1dAnd3d) {
  const Tensor x1 = kiln::randn({2, 3, 9}), x3 = kiln::randn({1, 2, 5, 6, 7});
  torch::nn::AvgPool1d a1(
      torch::nn::AvgPool1dOptions(3).stride(2).padding(1).count_include_pad(false));
  expect_same(a1(x1), kiln::avg_pool1d(x1, 3, 2, 1, false, false));
  // LibTorch's 1-d average pooling ignores divisor_override.
  torch::nn::AvgPool1d ignored(torch::nn::AvgPool1dOptions(3).divisor_override(1));
  expect_same(ignored(x1), kiln::avg_pool1d(x1, 3));
  expect_same(F::avg_pool1d(x1, F::AvgPool1dFuncOptions(3).divisor_override(1)),
              kiln::avg_pool1d(x1, 3));
  torch::nn::AvgPool3d a3(torch::nn::AvgPool3dOptions(3).stride(2).padding(1).ceil_mode(true));
  expect_same(a3(x3), kiln::avg_pool3d(x3, 3, 2, 1, true));
  torch::nn::AvgPool3d divided(torch::nn::AvgPool3dOptions(2).divisor_override(3));
  expect_same(divided(x3), kiln::avg_pool3d(x3, 2, {}, 0, false, true, 3));
}

TEST(TorchNnPooling, AdaptivePoolsKeepADimGivenAsNullopt) {
  const Tensor x1 = kiln::randn({2, 3, 9}), x2 = kiln::randn({2, 3, 7, 8}),
               x3 = kiln::randn({2, 2, 5, 6, 7});
  expect_same(torch::nn::AdaptiveAvgPool1d(4)(x1), kiln::adaptive_avg_pool1d(x1, 4));
  torch::nn::AdaptiveAvgPool3d avg3(torch::nn::AdaptiveAvgPool3dOptions({2, std::nullopt, 3}));
  expect_same(avg3(x3), kiln::adaptive_avg_pool3d(x3, {2, 6, 3}));

  torch::nn::AdaptiveMaxPool1d max1(torch::nn::AdaptiveMaxPool1dOptions(4));
  expect_same(max1(x1), kiln::adaptive_max_pool1d(x1, 4).first);
  expect_same(std::get<1>(max1->forward_with_indices(x1)), kiln::adaptive_max_pool1d(x1, 4).second);
  torch::nn::AdaptiveMaxPool2d max2(torch::nn::AdaptiveMaxPool2dOptions({std::nullopt, 3}));
  expect_same(max2(x2), kiln::adaptive_max_pool2d(x2, {7, 3}).first);
  expect_same(std::get<1>(max2->forward_with_indices(x2)),
              kiln::adaptive_max_pool2d(x2, {7, 3}).second);
  torch::nn::AdaptiveMaxPool3d max3(torch::nn::AdaptiveMaxPool3dOptions({2, 3, 4}));
  expect_same(std::get<1>(max3->forward_with_indices(x3)),
              kiln::adaptive_max_pool3d(x3, {2, 3, 4}).second);
  EXPECT_THROW(max2(kiln::randn({7, 8})), kiln::ShapeError);
  EXPECT_THROW(avg3(kiln::randn({5, 6, 7})), kiln::ShapeError);
}

TEST(TorchNnPooling, FunctionalsAndFreeFunctions) {
  const Tensor x1 = kiln::randn({2, 3, 9}), x2 = kiln::randn({2, 3, 7, 8}),
               x3 = kiln::randn({2, 2, 5, 6, 7});
  expect_same(F::max_pool1d(x1, F::MaxPool1dFuncOptions(3)), kiln::max_pool1d(x1, 3));
  expect_same(F::max_pool3d(x3, F::MaxPool3dFuncOptions(2).stride(1)), kiln::max_pool3d(x3, 2, 1));
  auto [v1, i1] = F::max_pool1d_with_indices(x1, F::MaxPool1dFuncOptions(2).padding(1));
  expect_same(i1, kiln::max_pool1d_with_indices(x1, 2, {}, 1).second);
  auto [v3, i3] = F::max_pool3d_with_indices(x3, F::MaxPool3dFuncOptions(2).ceil_mode(true));
  expect_same(i3, kiln::max_pool3d_with_indices(x3, 2, {}, 0, 1, true).second);
  expect_same(F::avg_pool3d(x3, F::AvgPool3dFuncOptions(2).count_include_pad(false).padding(1)),
              kiln::avg_pool3d(x3, 2, {}, 1, false, false));
  expect_same(F::adaptive_avg_pool1d(x1, F::AdaptiveAvgPool1dFuncOptions(2)),
              kiln::adaptive_avg_pool1d(x1, 2));
  expect_same(F::adaptive_avg_pool3d(x3, F::AdaptiveAvgPool3dFuncOptions({std::nullopt, 2, 2})),
              kiln::adaptive_avg_pool3d(x3, {5, 2, 2}));
  expect_same(F::adaptive_max_pool1d(x1, F::AdaptiveMaxPool1dFuncOptions(2)),
              kiln::adaptive_max_pool1d(x1, 2).first);
  expect_same(F::adaptive_max_pool2d(x2, F::AdaptiveMaxPool2dFuncOptions(3)),
              kiln::adaptive_max_pool2d(x2, 3).first);
  expect_same(
      std::get<1>(F::adaptive_max_pool3d_with_indices(x3, F::AdaptiveMaxPool3dFuncOptions(2))),
      kiln::adaptive_max_pool3d(x3, 2).second);
  expect_same(std::get<1>(F::adaptive_max_pool2d_with_indices(
                  x2, F::AdaptiveMaxPool2dFuncOptions({2, std::nullopt}))),
              kiln::adaptive_max_pool2d(x2, {2, 8}).second);

  // ATen's free functions, as LibTorch programs call them.
  expect_same(torch::max_pool1d(x1, 3), kiln::max_pool1d(x1, 3));
  expect_same(torch::max_pool3d(x3, {2, 2, 2}, {1, 1, 1}), kiln::max_pool3d(x3, 2, 1));
  expect_same(std::get<1>(torch::max_pool3d_with_indices(x3, 2)),
              kiln::max_pool3d_with_indices(x3, 2).second);
  expect_same(torch::avg_pool1d(x1, 3), kiln::avg_pool1d(x1, 3));
  expect_same(torch::avg_pool3d(x3, 2), kiln::avg_pool3d(x3, 2));
  expect_same(torch::adaptive_avg_pool1d(x1, 2), kiln::adaptive_avg_pool1d(x1, 2));
  expect_same(torch::adaptive_avg_pool3d(x3, {1, 2, 3}), kiln::adaptive_avg_pool3d(x3, {1, 2, 3}));
  auto [values, indices] = torch::adaptive_max_pool2d(x2, {3, 3});
  expect_same(values, F::adaptive_max_pool2d(x2, F::AdaptiveMaxPool2dFuncOptions(3)));
  expect_same(std::get<0>(torch::adaptive_max_pool1d(x1, 2)),
              kiln::adaptive_max_pool1d(x1, 2).first);
  expect_same(std::get<1>(torch::adaptive_max_pool3d(x3, 2)),
              kiln::adaptive_max_pool3d(x3, 2).second);
}

TEST(TorchNnPooling, ModulesWorkInASequentialAndTrain) {
  torch::nn::Sequential net(torch::nn::MaxPool3d(2), torch::nn::AdaptiveAvgPool3d(1));
  const Tensor x = kiln::randn({2, 3, 4, 4, 4}).requires_grad_();
  const Tensor y = net->forward(x);
  EXPECT_EQ(shape(y), (std::vector<int64_t>{2, 3, 1, 1, 1}));
  y.sum().backward();
  // Each 2x2x2 window passes its maximum's gradient, 1 / 8 from the global average.
  EXPECT_DOUBLE_EQ(x.grad().sum().item<double>(), 6.0);
  int nonzero = 0;
  for (double g : x.grad().to_vector<double>()) nonzero += g != 0;
  EXPECT_EQ(nonzero, 2 * 3 * 8);
}

}  // namespace
