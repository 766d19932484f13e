// Conv3d and the transposed convolutions (ConvTranspose1d/2d/3d) as modules: values against
// PyTorch 1.13 (literals computed with torch.nn.functional), PyTorch's initialization, forward
// with an output_size, sizes 0 and 1, and the errors bad configurations and inputs raise.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"

namespace kiln::nn {
namespace {

namespace F = kiln::nn::functional;

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

void expect_values(const Tensor& t, const std::vector<double>& expected, double tol = 1e-12) {
  const std::vector<double> got = t.contiguous().to_vector<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tol) << "element " << i;
}

Tensor ramp(std::vector<int64_t> shape, double scale, double offset) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return (arange(n).to(kFloat64) * scale + offset).reshape(shape);
}

double max_abs(const Tensor& t) { return t.detach().abs().max().item<double>(); }

TEST(Conv3d, MatchesPyTorch) {
  // torch.nn.functional.conv3d(arange(54)/10 as [1, 2, 3, 3, 3], arange(32)/20 - 0.8 as
  // [2, 2, 2, 2, 2], stride=(1, 2, 1), padding=1)
  Conv3d conv(2, 2, 2, {.stride = {1, 2, 1}, .padding = 1, .bias = false});
  {
    NoGradGuard no_grad;
    conv.weight.copy_(ramp({2, 2, 2, 2, 2}, 1.0 / 20, -0.8).to(kFloat32));
  }
  const Tensor x = ramp({1, 2, 3, 3, 3}, 0.1, 0.0);
  const Tensor y = F::conv3d(x, conv.weight.to(kFloat64), {}, {1, 2, 1}, 1);
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{1, 2, 4, 2, 4}));
  EXPECT_NEAR(y.sum().item<double>(), 107.1, 1e-6);
  expect_values(y.select(0, 0).select(0, 1).select(0, 2),
                {6.12, 11.88, 12.22, 5.9, 12.66, 24.38, 24.98, 11.96}, 1e-6);
  // The module runs the same op (float32 here).
  EXPECT_LT((conv(x.to(kFloat32)).to(kFloat64) - y).abs().max().item<double>(), 1e-4);
  EXPECT_EQ(conv.repr(),
            "Conv3d(2, 2, kernel_size=(2, 2, 2), stride=(1, 2, 1), padding=(1, 1, 1), bias=False)");
}

TEST(Conv3d, UnbatchedSizesOneAndZeroBatch) {
  Conv3d conv(3, 4, {1, 2, 2}, {.padding = "same"});
  EXPECT_EQ(conv(randn({3, 1, 5, 4})).sizes().vec(), (std::vector<int64_t>{4, 1, 5, 4}));
  EXPECT_EQ(conv(randn({1, 3, 1, 1, 1})).sizes().vec(), (std::vector<int64_t>{1, 4, 1, 1, 1}));
  const Tensor empty_batch = randn({0, 3, 2, 3, 3});
  const Tensor y = conv(empty_batch);
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{0, 4, 2, 3, 3}));
  y.sum().backward();
  EXPECT_EQ(max_abs(conv.weight.grad()), 0.0);
  // padding_mode other than zeros pads explicitly first.
  Conv3d circular(1, 1, 3, {.padding = 1, .bias = false, .padding_mode = "circular"});
  EXPECT_EQ(circular(randn({1, 1, 3, 4, 5})).sizes().vec(), (std::vector<int64_t>{1, 1, 3, 4, 5}));
}

TEST(ConvTranspose2d, MatchesPyTorchWithGroupsStrideAndOutputPadding) {
  // torch.nn.functional.conv_transpose2d(arange(8)/4 as [1, 2, 2, 2], arange(18)/10 - 0.5 as
  // [2, 1, 3, 3], bias=[0.5, -1], stride=2, padding=1, output_padding=1, groups=2)
  ConvTranspose2d up(2, 2, 3, {.stride = 2, .padding = 1, .output_padding = 1, .groups = 2});
  EXPECT_EQ(up.weight.sizes().vec(), (std::vector<int64_t>{2, 1, 3, 3}));
  {
    NoGradGuard no_grad;
    up.weight.copy_(ramp({2, 1, 3, 3}, 0.1, -0.5).to(kFloat32));
    up.bias.copy_(tensor({0.5, -1.0}));
  }
  const std::vector<double> expected = {0.5,  0.45,  0.475, 0.5,   0.3,  0.0,   0.25,  0.35,
                                        0.45, 0.35,  0.425, 0.5,   0.6,  0.725, 0.65,  0.725,
                                        -0.2, 0.775, 0.0,   0.125, 0.85, 3.05,  1.25,  1.55,
                                        0.2,  1.575, 0.4,   0.575, 0.65, 2.55,  0.925, 1.1};
  const Tensor x = ramp({1, 2, 2, 2}, 0.25, 0.0);
  const Tensor y = up(x.to(kFloat32));
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{1, 2, 4, 4}));
  expect_values(y, expected, 1e-5);
  expect_values(F::conv_transpose2d(x, up.weight.to(kFloat64), up.bias.to(kFloat64), 2, 1, 1, 2),
                expected, 1e-6);
  EXPECT_EQ(up.repr(),
            "ConvTranspose2d(2, 2, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), "
            "output_padding=(1, 1), groups=2)");
}

TEST(ConvTranspose3d, MatchesPyTorch) {
  // torch.nn.functional.conv_transpose3d(arange(8) - 3 as [1, 1, 2, 2, 2], arange(16)/8 as
  // [1, 2, 2, 2, 2], stride=2, padding=(0, 1, 0))
  const Tensor y = F::conv_transpose3d(ramp({1, 1, 2, 2, 2}, 1.0, -3.0),
                                       ramp({1, 2, 2, 2, 2}, 1.0 / 8, 0.0), {}, 2, {0, 1, 0});
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{1, 2, 4, 2, 4}));
  EXPECT_NEAR(y.sum().item<double>(), 22.0, 1e-12);
  expect_values(
      y.select(0, 0).select(0, 1).select(1, 1),
      {-1.0, -1.125, 0.0, 0.0, -1.5, -1.625, 0.0, 0.0, 3.0, 3.375, 4.0, 4.5, 4.5, 4.875, 6.0, 6.5});
  ConvTranspose3d layer(1, 2, 2, {.stride = 2, .padding = {0, 1, 0}, .bias = false});
  EXPECT_EQ(layer(randn({1, 2, 2, 2})).sizes().vec(), (std::vector<int64_t>{2, 4, 2, 4}));
}

TEST(ConvTranspose, IsTheInputGradientOfTheConvolution) {
  manual_seed(4);
  // conv1d (2, 4, 10) -> (2, 6, 3) with stride 3, padding 1, dilation 2, groups 2; its weight
  // (6, 2, 3) read as a transposed weight maps (2, 6, 3) back to (2, 4, 10) with output_padding 1.
  const Tensor x = randn({2, 4, 10}, kFloat64).requires_grad_(true);
  const Tensor w = randn({6, 2, 3}, kFloat64), g = randn({2, 6, 3}, kFloat64);
  conv1d(x, w, {}, 3, 1, 2, 2).backward(g);
  EXPECT_LT((conv_transpose1d(g, w, {}, 3, 1, 1, 2, 2) - x.grad()).abs().max().item<double>(),
            1e-12);
}

TEST(ConvTranspose, InitializesAsPyTorchWithFanInFromTheOutputChannels) {
  manual_seed(0);
  // weight [4, 8, 3, 3]: fan_in = weight.size(1) * 9 = 72, so bound 1 / sqrt(72) (not 1 / 6, what
  // in_channels * 9 would give).
  ConvTranspose2d up(4, 8, 3);
  EXPECT_EQ(up.weight.sizes().vec(), (std::vector<int64_t>{4, 8, 3, 3}));
  const double bound = 1.0 / std::sqrt(72.0);
  EXPECT_LE(max_abs(up.weight), bound);
  EXPECT_GT(max_abs(up.weight), 0.95 * bound);
  EXPECT_LE(max_abs(up.bias), bound);
  EXPECT_GT(max_abs(up.bias), 0.5 * bound);
  // groups divide the weight's second dim: [6, 4 / 2, 5] has fan_in 2 * 5 = 10.
  ConvTranspose1d grouped(6, 4, 5, {.groups = 2});
  EXPECT_EQ(grouped.weight.sizes().vec(), (std::vector<int64_t>{6, 2, 5}));
  EXPECT_LE(max_abs(grouped.weight), 1.0 / std::sqrt(10.0));
  up.reset_parameters();
  EXPECT_LE(max_abs(up.weight), bound);
}

TEST(ConvTranspose, OutputSizePicksTheOutputPadding) {
  ConvTranspose2d up(3, 2, 3, {.stride = 2, .padding = 1});
  const Tensor x = randn({1, 3, 4, 4});
  // (4 - 1) * 2 - 2 + 2 + 1 = 7 smallest, 8 largest.
  EXPECT_EQ(up(x).sizes().vec(), (std::vector<int64_t>{1, 2, 7, 7}));
  const Tensor y = up.forward(x, {8, 7});
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{1, 2, 8, 7}));
  EXPECT_LT((y - conv_transpose2d(x, up.weight, up.bias, 2, 1, {1, 0})).abs().max().item<double>(),
            1e-6);
  EXPECT_EQ(up.forward(x, {1, 2, 8, 8}).sizes().vec(), (std::vector<int64_t>{1, 2, 8, 8}));
  EXPECT_EQ(up.forward(randn({3, 4, 4}), {2, 8, 8}).sizes().vec(), (std::vector<int64_t>{2, 8, 8}));
  expect_contains(expect_error<ValueError>([&] { up.forward(x, {9, 9}); }), "7 to 8");
  expect_contains(expect_error<ValueError>([&] { up.forward(x, {6, 7}); }), "ConvTranspose2d");
  expect_contains(expect_error<ValueError>([&] { up.forward(x, {8, 8, 8}); }), "output_size");
}

TEST(ConvTranspose, SizesOneAndZero) {
  ConvTranspose2d up(3, 2, 1);
  EXPECT_EQ(up(randn({1, 3, 1, 1})).sizes().vec(), (std::vector<int64_t>{1, 2, 1, 1}));
  const Tensor y = up(randn({0, 3, 4, 4}));
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{0, 2, 4, 4}));
  y.sum().backward();
  EXPECT_EQ(max_abs(up.weight.grad()), 0.0);
  EXPECT_EQ(max_abs(up.bias.grad()), 0.0);
  // A zero-size spatial input still has the kernel's reach as output: only the bias.
  ConvTranspose1d wide(2, 1, 3);
  const Tensor z = wide(randn({1, 2, 0}));
  EXPECT_EQ(z.sizes().vec(), (std::vector<int64_t>{1, 1, 2}));
  EXPECT_EQ(max_abs(z - wide.bias.reshape({1, 1, 1})), 0.0);
}

TEST(ConvTranspose, BadConfigurationsAndInputs) {
  expect_contains(expect_error<ValueError>([] { ConvTranspose2d(3, 4, 3, {.groups = 2}); }),
                  "divisible by groups");
  expect_contains(expect_error<ValueError>(
                      [] { ConvTranspose2d(4, 4, 3, {.stride = 2, .output_padding = 2}); }),
                  "output_padding");
  expect_contains(
      expect_error<ValueError>([] { ConvTranspose1d(4, 4, 3, {.padding_mode = "reflect"}); }),
      "zeros");
  EXPECT_THROW(ConvTranspose3d(4, 4, 0), ValueError);
  ConvTranspose2d up(3, 2, 3);
  expect_contains(expect_error<ShapeError>([&] {
                    up(randn({1, 4, 5, 5}));
                  }),
                  "ConvTranspose2d(3, 2");
  expect_contains(expect_error<ShapeError>([&] { up(randn({5, 5})); }), "ConvTranspose2d");
  ConvTranspose1d shrink(2, 2, 1, {.padding = 1});
  expect_contains(expect_error<ShapeError>([&] { shrink(randn({1, 2, 1})); }), "output size");
}

}  // namespace
}  // namespace kiln::nn
