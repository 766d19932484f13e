// torch::nn::Conv3d, ConvTranspose1d/2d/3d and their functionals and torch:: ops: LibTorch's
// options reach Kiln's layers (kiln::nn::ConvNd, ConvTransposeNd), and the functionals and ops
// equal Kiln's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/generator.h"
#include "kiln/nn/conv.h"
#include "kiln/nn/conv_transpose.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/random.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"
#include "kiln/torch/nn.h"

namespace {

namespace F = torch::nn::functional;
using kiln::Tensor;

double max_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.sizes().vec(), b.sizes().vec());
  return (a.detach().to(kiln::kFloat64) - b.detach().to(kiln::kFloat64)).abs().max().item<double>();
}

std::vector<int64_t> shape(const Tensor& t) { return t.sizes().vec(); }

TEST(TorchNnConv3d, OptionsReachKilnsConv3d) {
  kiln::manual_seed(1);
  torch::nn::Conv3d conv(
      torch::nn::Conv3dOptions(4, 6, {1, 3, 3}).stride({1, 2, 2}).padding(1).groups(2));
  auto* kiln_layer = dynamic_cast<kiln::nn::Conv3d*>(conv.get());
  ASSERT_NE(kiln_layer, nullptr);
  EXPECT_EQ(shape(conv->weight), (std::vector<int64_t>{6, 2, 1, 3, 3}));
  EXPECT_EQ(conv->options.groups(), 2);
  const Tensor x = kiln::randn({2, 4, 3, 5, 5});
  const Tensor y = conv(x);
  EXPECT_EQ(shape(y), (std::vector<int64_t>{2, 6, 5, 3, 3}));
  EXPECT_LT(max_diff(y, torch::conv3d(x, conv->weight, conv->bias, {1, 2, 2}, 1, 1, 2)), 1e-6);
  EXPECT_LT(
      max_diff(y,
               F::conv3d(
                   x, conv->weight,
                   F::Conv3dFuncOptions().bias(conv->bias).stride({1, 2, 2}).padding(1).groups(2))),
      1e-6);
  torch::nn::Conv3d same(torch::nn::Conv3dOptions(2, 2, 3).padding(torch::kSame).bias(false));
  EXPECT_EQ(shape(same(kiln::randn({2, 4, 5, 3}))), (std::vector<int64_t>{2, 4, 5, 3}));
}

TEST(TorchNnConvTranspose3d, OptionsFunctionalAndOp) {
  kiln::manual_seed(2);
  torch::nn::ConvTranspose3d up(
      torch::nn::ConvTranspose3dOptions(4, 2, 2).stride(2).padding({0, 1, 0}).output_padding(1));
  auto* kiln_layer = dynamic_cast<kiln::nn::ConvTranspose3d*>(up.get());
  ASSERT_NE(kiln_layer, nullptr);
  EXPECT_EQ(kiln_layer->options.output_padding[0], 1);
  EXPECT_EQ(shape(up->weight), (std::vector<int64_t>{4, 2, 2, 2, 2}));
  const Tensor x = kiln::randn({1, 4, 2, 3, 2});
  const Tensor y = up(x);
  // (2 - 1) * 2 + 1 + 1 + 1 = 5, (3 - 1) * 2 - 2 + 2 = 4 (+ 1), 5.
  EXPECT_EQ(shape(y), (std::vector<int64_t>{1, 2, 5, 5, 5}));
  EXPECT_LT(max_diff(y, torch::conv_transpose3d(x, up->weight, up->bias, 2, {0, 1, 0}, 1)), 1e-6);
  EXPECT_LT(max_diff(y, F::conv_transpose3d(x, up->weight,
                                            F::ConvTranspose3dFuncOptions()
                                                .bias(up->bias)
                                                .stride(2)
                                                .padding({0, 1, 0})
                                                .output_padding(1))),
            1e-6);
  EXPECT_EQ(shape(up->forward(x, {4, 4, 4})), (std::vector<int64_t>{1, 2, 4, 4, 4}));
}

TEST(TorchNnConvTranspose, LayersAreKilnsModules) {
  torch::nn::ConvTranspose2d up(torch::nn::ConvTranspose2dOptions(8, 4, 4).stride(2).padding(1));
  ASSERT_NE(dynamic_cast<kiln::nn::ConvTranspose2d*>(up.get()), nullptr);
  EXPECT_EQ(up->options.stride()->at(0), 2);
  EXPECT_EQ(up->repr(), "ConvTranspose2d(8, 4, kernel_size=(4, 4), stride=(2, 2), padding=(1, 1))");
  const Tensor x = kiln::randn({2, 8, 5, 5});
  EXPECT_LT(max_diff(F::conv_transpose2d(x, up->weight, F::ConvTranspose2dFuncOptions().stride(2)),
                     kiln::conv_transpose2d(x, up->weight, {}, 2)),
            1e-6);
  torch::nn::ConvTranspose1d line(torch::nn::ConvTranspose1dOptions(3, 2, 3).dilation(2));
  EXPECT_EQ(shape(line(kiln::randn({3, 4}))), (std::vector<int64_t>{2, 8}));
}

}  // namespace
