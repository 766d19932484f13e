// torch::nn (kiln/torch/nn.h): LibTorch's options builders reach Kiln's layers with the right
// settings, holders and containers behave as LibTorch's, and the functionals and torch:: ops
// equal Kiln's.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/generator.h"
#include "kiln/nn/functional.h"
#include "kiln/ops/binary.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/random.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"
#include "kiln/torch/nn.h"

namespace {

namespace F = torch::nn::functional;
using kiln::Tensor;

template <typename Kind, typename Fn>
std::string expect_error(Fn&& fn) {
  try {
    fn();
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
  EXPECT_EQ(a.sizes().vec(), b.sizes().vec());
  return (a.detach().to(kiln::kFloat64) - b.detach().to(kiln::kFloat64)).abs().max().item<double>();
}

std::vector<int64_t> shape(const Tensor& t) { return t.sizes().vec(); }

std::vector<std::string> parameter_names(const kiln::nn::Module& m) {
  std::vector<std::string> names;
  for (const auto& [name, p] : m.named_parameters()) names.push_back(name);
  return names;
}

// ---- enums and ExpandingArray ----

TEST(TorchNnEnum, ConstantsNameKilnsStringsAndLibTorchsNames) {
  EXPECT_EQ(torch::enumtype::kiln_name(torch::kSum), "sum");
  EXPECT_EQ(torch::enumtype::kiln_name(torch::kBatchMean), "batchmean");
  const std::variant<torch::enumtype::kNone, torch::enumtype::kMean> r = torch::kNone;
  EXPECT_EQ(torch::enumtype::kiln_name(r), "none");
  EXPECT_EQ(torch::enumtype::get_enum_name(r), "kNone");
}

TEST(TorchNnExpandingArray, ExpandsOneValueAndChecksTheCount) {
  const torch::ExpandingArray<2> one(3);
  EXPECT_EQ((*one)[0], 3);
  EXPECT_EQ(one->at(1), 3);
  const torch::ExpandingArray<2> two({3, 5});
  EXPECT_EQ(two.to_kiln()[1], 5);
  const std::vector<int64_t> sizes = {4, 6};
  EXPECT_EQ(torch::ExpandingArray<2>(torch::IntArrayRef(sizes))[1], 6);
  EXPECT_THROW(torch::ExpandingArray<2>({1, 2, 3}), kiln::ValueError);
  const torch::ExpandingArrayWithOptionalElem<2> partial({7, std::nullopt});
  EXPECT_EQ(partial[0], 7);
  EXPECT_FALSE(partial[1].has_value());
  EXPECT_FALSE(partial.all_given());
}

// ---- holders ----

struct TwoLayerImpl : torch::nn::Module {
  TwoLayerImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(4, 3));
    fc2 = register_module("fc2", torch::nn::Linear(torch::nn::LinearOptions(3, 2).bias(false)));
  }
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::relu(fc1(x))); }
  torch::nn::Linear fc1{nullptr};
  torch::nn::Linear fc2{nullptr};
};
TORCH_MODULE(TwoLayer);

TEST(TorchNnHolder, RegisterModuleWithAHolderNamesTheParametersAfterIt) {
  TwoLayer net;
  EXPECT_EQ(parameter_names(*net),
            (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight"}));
  EXPECT_EQ(shape(net(kiln::randn({5, 4}))), (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(net->state_dict().tensors.size(), 3u);
}

TEST(TorchNnHolder, AnEmptyHolderRaisesValueErrorWhenUsed) {
  torch::nn::Linear none{nullptr};
  EXPECT_TRUE(none.is_empty());
  EXPECT_FALSE(none);
  expect_contains(expect_error<kiln::ValueError>([&] {
                    none->forward(kiln::randn({1, 2}));
                  }),
                  "nullptr");
  EXPECT_THROW(none(kiln::randn({1, 2})), kiln::ValueError);
}

TEST(TorchNnHolder, CopyingAHolderSharesItsModule) {
  torch::nn::Sequential seq(torch::nn::Linear(2, 2));
  torch::nn::Sequential copy(seq);  // a non-const lvalue: still a copy, not a nested Sequential
  EXPECT_EQ(copy.get(), seq.get());
  torch::nn::ModuleList list{torch::nn::ReLU()};
  torch::nn::ModuleList list_copy(list);
  EXPECT_EQ(list_copy.get(), list.get());
}

// ---- linear, flatten ----

TEST(TorchNnLinear, OptionsReachKilnsLinear) {
  torch::nn::Linear plain(4, 3);
  EXPECT_TRUE(plain->bias.defined());
  EXPECT_EQ(plain->options.in_features(), 4);
  torch::nn::Linear no_bias(torch::nn::LinearOptions(4, 3).bias(false));
  EXPECT_FALSE(no_bias->bias.defined());
  EXPECT_EQ(no_bias->parameters().size(), 1u);
  EXPECT_EQ(shape(no_bias->weight), (std::vector<int64_t>{3, 4}));
  const Tensor x = kiln::randn({2, 4});
  EXPECT_LT(max_diff(plain(x), F::linear(x, plain->weight, plain->bias)), 1e-6);
  EXPECT_LT(max_diff(no_bias(x), kiln::linear(x, no_bias->weight)), 1e-6);
  expect_contains(expect_error<kiln::ShapeError>([&] { plain(kiln::randn({2, 5})); }), "Linear");
}

TEST(TorchNnLinear, FlattenUnflattenAndIdentity) {
  const Tensor x = kiln::randn({2, 3, 4, 5});
  EXPECT_EQ(shape(torch::nn::Flatten()(x)), (std::vector<int64_t>{2, 60}));
  torch::nn::Flatten middle(torch::nn::FlattenOptions().start_dim(1).end_dim(2));
  EXPECT_EQ(shape(middle(x)), (std::vector<int64_t>{2, 12, 5}));
  torch::nn::Unflatten unflatten(1, std::vector<int64_t>{3, 4});
  EXPECT_EQ(shape(unflatten(kiln::randn({2, 12}))), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_TRUE(torch::nn::Identity()(x).is_same(x));
}

// ---- convolution ----

TEST(TorchNnConv, Conv2dOptionsSetStridePaddingAndBias) {
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(1, 4, 3).stride(2).padding(1).bias(false));
  EXPECT_FALSE(conv->bias.defined());
  EXPECT_EQ(conv->parameters().size(), 1u);
  EXPECT_EQ(conv->options.stride()[0], 2);
  const Tensor x = kiln::randn({2, 1, 8, 8});
  const Tensor y = conv(x);
  EXPECT_EQ(shape(y), (std::vector<int64_t>{2, 4, 4, 4}));
  EXPECT_LT(max_diff(y, kiln::conv2d(x, conv->weight, {}, 2, 1)), 1e-5);
  // The shorthand and a braced padding.
  torch::nn::Conv2d plain(1, 2, torch::ExpandingArray<2>({3, 5}));
  EXPECT_TRUE(plain->bias.defined());
  EXPECT_EQ(shape(plain->weight), (std::vector<int64_t>{2, 1, 3, 5}));
  torch::nn::Conv2d braced(torch::nn::Conv2dOptions(1, 2, {3, 5}).padding({1, 2}));
  EXPECT_EQ(shape(braced(x)), (std::vector<int64_t>{2, 2, 8, 8}));
}

TEST(TorchNnConv, PaddingModesGroupsDilationAndSame) {
  const Tensor x = kiln::randn({1, 4, 9, 9});
  torch::nn::Conv2d same(torch::nn::Conv2dOptions(4, 2, 3).padding(torch::kSame));
  EXPECT_EQ(shape(same(x)), (std::vector<int64_t>{1, 2, 9, 9}));
  torch::nn::Conv2d valid(torch::nn::Conv2dOptions(4, 2, 3).padding(torch::kValid));
  EXPECT_EQ(shape(valid(x)), (std::vector<int64_t>{1, 2, 7, 7}));
  torch::nn::Conv2d grouped(torch::nn::Conv2dOptions(4, 4, 3).groups(2).dilation(2));
  EXPECT_EQ(shape(grouped->weight), (std::vector<int64_t>{4, 2, 3, 3}));
  EXPECT_EQ(shape(grouped(x)), (std::vector<int64_t>{1, 4, 5, 5}));
  torch::nn::Conv2d reflect(
      torch::nn::Conv2dOptions(4, 2, 3).padding(1).padding_mode(torch::kReflect));
  const Tensor expected =
      kiln::conv2d(kiln::pad(x, {1, 1, 1, 1}, "reflect"), reflect->weight, reflect->bias);
  EXPECT_LT(max_diff(reflect(x), expected), 1e-5);
  torch::nn::Conv1d conv1d(2, 3, 3);
  EXPECT_EQ(shape(conv1d(kiln::randn({1, 2, 10}))), (std::vector<int64_t>{1, 3, 8}));
}

TEST(TorchNnConv, BadInputRaisesNamingTheLayerAndFunctionalEqualsKiln) {
  torch::nn::Conv2d conv(1, 2, 3);
  expect_contains(expect_error<kiln::ShapeError>([&] { conv(kiln::randn({8, 8})); }), "Conv2d");
  const Tensor x = kiln::randn({1, 3, 7, 7}), w = kiln::randn({4, 3, 3, 3}), b = kiln::randn({4});
  EXPECT_LT(max_diff(F::conv2d(x, w, F::Conv2dFuncOptions().stride(2).padding(1).bias(b)),
                     kiln::conv2d(x, w, b, 2, 1)),
            1e-5);
  EXPECT_EQ(shape(F::conv2d(x, w, F::Conv2dFuncOptions().padding(torch::kSame))),
            (std::vector<int64_t>{1, 4, 7, 7}));
  const Tensor x1 = kiln::randn({1, 3, 6}), w1 = kiln::randn({2, 3, 2});
  EXPECT_LT(max_diff(F::conv1d(x1, w1, F::Conv1dFuncOptions().dilation(2)),
                     kiln::conv1d(x1, w1, {}, 1, 0, 2)),
            1e-5);
}

// ---- transposed convolution ----

TEST(TorchNnConvTranspose, EqualsTheGradientOfTheConvolution) {
  kiln::manual_seed(3);
  // conv2d: (2, 4, 5, 5) -> (2, 6, 3, 3) with stride 2, padding 1, groups 2; its weight
  // (6, 2, 3, 3) read as a transposed-convolution weight maps (., 6, 3, 3) back to (., 4, 5, 5).
  const Tensor x = kiln::randn({2, 4, 5, 5}).requires_grad_(true);
  const Tensor w = kiln::randn({6, 2, 3, 3});
  const Tensor g = kiln::randn({2, 6, 3, 3});
  kiln::conv2d(x, w, {}, 2, 1, 1, 2).backward(g);
  EXPECT_LT(max_diff(torch::conv_transpose2d(g, w, {}, 2, 1, 0, 2), x.grad()), 1e-4);
  // 1-d, with dilation and an output_padding that the stride allows.
  const Tensor x1 = kiln::randn({1, 3, 10}).requires_grad_(true);
  const Tensor w1 = kiln::randn({5, 3, 3});
  const Tensor g1 = kiln::randn({1, 5, 3});
  kiln::conv1d(x1, w1, {}, 3, 1, 2).backward(g1);
  EXPECT_LT(max_diff(torch::conv_transpose1d(g1, w1, {}, 3, 1, 1, 1, 2), x1.grad()), 1e-4);
}

TEST(TorchNnConvTranspose, DCGANGeneratorShapesBiasAndGradient) {
  torch::nn::ConvTranspose2d c1(torch::nn::ConvTranspose2dOptions(16, 8, 4).bias(false));
  torch::nn::ConvTranspose2d c2(torch::nn::ConvTranspose2dOptions(8, 4, 3).stride(2).padding(1));
  torch::nn::ConvTranspose2d c3(torch::nn::ConvTranspose2dOptions(4, 1, 4).stride(2).padding(1));
  EXPECT_FALSE(c1->bias.defined());
  EXPECT_EQ(shape(c1->weight), (std::vector<int64_t>{16, 8, 4, 4}));
  EXPECT_EQ(parameter_names(*c2), (std::vector<std::string>{"weight", "bias"}));
  const Tensor noise = kiln::randn({2, 16, 1, 1});
  const Tensor a = c1(noise), b = c2(a), c = c3(b);
  EXPECT_EQ(shape(a), (std::vector<int64_t>{2, 8, 4, 4}));
  EXPECT_EQ(shape(b), (std::vector<int64_t>{2, 4, 7, 7}));
  EXPECT_EQ(shape(c), (std::vector<int64_t>{2, 1, 14, 14}));
  // The bias is added per output channel.
  const Tensor no_bias = torch::conv_transpose2d(a, c2->weight, {}, 2, 1);
  EXPECT_LT(max_diff(b, no_bias + c2->bias.reshape({1, 4, 1, 1})), 1e-5);
  c.sum().backward();
  EXPECT_TRUE(c1->weight.grad().defined());
  // Unbatched input, output_size, F::, and a refused padding mode.
  EXPECT_EQ(shape(c2(kiln::randn({8, 4, 4}))), (std::vector<int64_t>{4, 7, 7}));
  EXPECT_EQ(shape(c2->forward(a, {8, 8})), (std::vector<int64_t>{2, 4, 8, 8}));
  EXPECT_THROW(c2->forward(a, {10, 10}), kiln::ValueError);
  EXPECT_LT(max_diff(F::conv_transpose2d(a, c2->weight,
                                         F::ConvTranspose2dFuncOptions().stride(2).padding(1)),
                     no_bias),
            1e-6);
  expect_contains(expect_error<kiln::ValueError>([] {
                    torch::nn::ConvTranspose2d(
                        torch::nn::ConvTranspose2dOptions(1, 1, 3).padding_mode(torch::kReflect));
                  }),
                  "ConvTranspose2d");
  expect_contains(expect_error<kiln::ShapeError>([&] {
                    c2(kiln::randn({2, 3, 4, 4}));
                  }),
                  "ConvTranspose2d");
}

// ---- normalization ----

TEST(TorchNnNorm, BatchNormOptionsReachKilnsBatchNorm) {
  torch::nn::BatchNorm2d bn(torch::nn::BatchNorm2dOptions(3).eps(1e-3).momentum(0.5).affine(false));
  EXPECT_FALSE(bn->weight.defined());
  EXPECT_TRUE(bn->parameters().empty());
  const Tensor x = kiln::randn({4, 3, 2, 2}) + 1.0;
  bn(x);
  const Tensor batch_mean = x.mean({0, 2, 3});
  EXPECT_LT(max_diff(bn->running_mean, batch_mean * 0.5), 1e-5);
  EXPECT_DOUBLE_EQ(bn->options.eps(), 1e-3);
  // A number converts to the options, as in LibTorch: torch::nn::BatchNorm2d(128).
  torch::nn::BatchNorm2d plain(5);
  EXPECT_EQ(shape(plain->weight), (std::vector<int64_t>{5}));
  // momentum nullopt: a cumulative average.
  torch::nn::BatchNorm1d cumulative(torch::nn::BatchNorm1dOptions(2).momentum(std::nullopt));
  const Tensor a = kiln::randn({8, 2}), b = kiln::randn({8, 2});
  cumulative(a);
  cumulative(b);
  EXPECT_LT(max_diff(cumulative->running_mean, (a.mean({0}) + b.mean({0})) / 2.0), 1e-5);
  torch::nn::BatchNorm2d untracked(torch::nn::BatchNorm2dOptions(3).track_running_stats(false));
  EXPECT_FALSE(untracked->running_mean.defined());
  expect_contains(expect_error<kiln::ShapeError>([&] {
                    plain(kiln::randn({2, 5}));
                  }),
                  "BatchNorm2d");
}

TEST(TorchNnNorm, LayerNormGroupNormAndTheirFunctionals) {
  const Tensor x = kiln::randn({2, 4, 3});
  torch::nn::LayerNorm ln(torch::nn::LayerNormOptions({3}).elementwise_affine(false).eps(1e-3));
  EXPECT_FALSE(ln->weight.defined());
  EXPECT_LT(max_diff(ln(x), kiln::layer_norm(x, {3}, {}, {}, 1e-3)), 1e-6);
  torch::nn::LayerNorm affine(std::vector<int64_t>{4, 3});
  EXPECT_EQ(shape(affine->weight), (std::vector<int64_t>{4, 3}));
  EXPECT_LT(max_diff(F::layer_norm(x, F::LayerNormFuncOptions({3}).eps(1e-3)), ln(x)), 1e-6);
  torch::nn::GroupNorm gn(torch::nn::GroupNormOptions(2, 4).affine(false));
  EXPECT_FALSE(gn->weight.defined());
  EXPECT_LT(max_diff(gn(x), F::group_norm(x, F::GroupNormFuncOptions(2))), 1e-6);
  EXPECT_TRUE(torch::nn::GroupNorm(2, 4)->weight.defined());
}

TEST(TorchNnNorm, BatchNormFunctionalUpdatesRunningStatsAndNeedsMomentum) {
  const Tensor x = kiln::randn({6, 2}) + 3.0;
  const Tensor mean = kiln::zeros({2}), var = kiln::ones({2});
  F::batch_norm(x, mean, var, F::BatchNormFuncOptions().training(true).momentum(1.0));
  EXPECT_LT(max_diff(mean, x.mean({0})), 1e-5);
  expect_contains(expect_error<kiln::ValueError>([&] {
                    F::batch_norm(x, mean, var, F::BatchNormFuncOptions().momentum(std::nullopt));
                  }),
                  "momentum");
  // ATen's argument order: weight and bias before the running statistics.
  const Tensor out = torch::batch_norm(x, kiln::full({2}, 2.0), kiln::ones({2}), kiln::zeros({2}),
                                       kiln::ones({2}), false, 0.1, 0.0, false);
  EXPECT_LT(max_diff(out, x * 2.0 + 1.0), 1e-5);
}

// ---- dropout ----

TEST(TorchNnDropout, OptionsSetPAndEvalModeIsTheIdentity) {
  torch::nn::Dropout drop(torch::nn::DropoutOptions(0.25));
  EXPECT_DOUBLE_EQ(drop->p, 0.25);
  EXPECT_DOUBLE_EQ(drop->options.p(), 0.25);
  EXPECT_DOUBLE_EQ(torch::nn::Dropout(0.75)->p, 0.75);
  EXPECT_DOUBLE_EQ(torch::nn::Dropout()->p, 0.5);
  const Tensor x = kiln::ones({1000});
  kiln::manual_seed(1);
  const Tensor y = drop(x);
  EXPECT_NEAR((y == 0.0).sum().item<double>(), 250.0, 60.0);
  drop->eval();
  EXPECT_TRUE(drop(x).is_same(x));
  EXPECT_THROW(torch::nn::Dropout(1.5), kiln::ValueError);
}

// Every (n, c) slice of `y` is all zeros or all `kept`.
void expect_whole_channels(const Tensor& y, int64_t n, int64_t c, double kept) {
  const Tensor flat = y.reshape({n * c, -1});
  int64_t zeroed = 0;
  for (int64_t i = 0; i < n * c; ++i) {
    const Tensor row = flat.select(0, i);
    const double lo = row.min().item<double>(), hi = row.max().item<double>();
    EXPECT_EQ(lo, hi) << "channel " << i << " is partly dropped";
    EXPECT_TRUE(hi == 0.0 || std::abs(hi - kept) < 1e-6) << hi;
    zeroed += hi == 0.0;
  }
  EXPECT_GT(zeroed, 0);
  EXPECT_LT(zeroed, n * c);
}

TEST(TorchNnDropout, Dropout2dZeroesWholeChannels) {
  kiln::manual_seed(2);
  torch::nn::Dropout2d drop(0.5);
  expect_whole_channels(drop(kiln::ones({4, 16, 3, 3})), 4, 16, 2.0);
  expect_whole_channels(drop(kiln::ones({16, 3, 3})), 1, 16, 2.0);  // unbatched (C, H, W)
  expect_whole_channels(torch::nn::Dropout1d(0.5)(kiln::ones({4, 8, 5})), 4, 8, 2.0);
  expect_whole_channels(torch::nn::Dropout3d(0.5)(kiln::ones({2, 8, 2, 2, 2})), 2, 8, 2.0);
  expect_contains(expect_error<kiln::ShapeError>([&] { drop(kiln::ones({4, 16})); }), "Dropout2d");
  drop->eval();
  const Tensor x = kiln::ones({2, 3, 4, 4});
  EXPECT_TRUE(drop(x).is_same(x));
}

TEST(TorchNnDropout, FunctionalsAndTorchOps) {
  const Tensor x = kiln::ones({4, 16, 3, 3});
  EXPECT_TRUE(F::dropout(x, F::DropoutFuncOptions().p(0.5).training(false)).is_same(x));
  kiln::manual_seed(4);
  const Tensor y = F::dropout(x, F::DropoutFuncOptions().p(0.5));  // training by default
  EXPECT_GT((y == 0.0).sum().item<double>(), 0.0);
  expect_whole_channels(F::dropout2d(x, F::Dropout2dFuncOptions().p(0.5)), 4, 16, 2.0);
  expect_whole_channels(F::dropout3d(kiln::ones({2, 8, 2, 2, 2})), 2, 8, 2.0);
  expect_whole_channels(torch::feature_dropout(x, 0.5, true), 4, 16, 2.0);
  EXPECT_TRUE(torch::dropout(x, 0.5, false).is_same(x));
  EXPECT_THROW(F::dropout2d(kiln::ones({3})), kiln::ShapeError);
  EXPECT_THROW(F::dropout2d(x, F::Dropout2dFuncOptions().p(2.0)), kiln::ValueError);
}

// ---- embedding ----

TEST(TorchNnEmbedding, OptionsPaddingIdxGivenWeightAndFromPretrained) {
  torch::nn::Embedding emb(torch::nn::EmbeddingOptions(10, 3).padding_idx(0));
  EXPECT_EQ(emb->weight.select(0, 0).abs().sum().item<double>(), 0.0);
  const Tensor idx = kiln::tensor({0, 3, 3});
  EXPECT_EQ(shape(emb(idx)), (std::vector<int64_t>{3, 3}));
  const Tensor table = kiln::arange(12, kiln::kFloat32).reshape({4, 3});
  torch::nn::Embedding given(torch::nn::EmbeddingOptions(4, 3)._weight(table));
  EXPECT_LT(max_diff(given(kiln::tensor({2})), table.select(0, 2).unsqueeze(0)), 1e-9);
  EXPECT_TRUE(given->weight.requires_grad());
  auto frozen = torch::nn::Embedding::from_pretrained(table);
  EXPECT_FALSE(frozen->weight.requires_grad());
  EXPECT_EQ(frozen->num_embeddings, 4);
  auto trained = torch::nn::Embedding::from_pretrained(
      table, torch::nn::EmbeddingFromPretrainedOptions().freeze(false));
  EXPECT_TRUE(trained->weight.requires_grad());
  EXPECT_THROW(torch::nn::Embedding(torch::nn::EmbeddingOptions(5, 3)._weight(table)),
               kiln::ShapeError);
  expect_contains(expect_error<kiln::NotImplementedError>([] {
                    torch::nn::Embedding(torch::nn::EmbeddingOptions(5, 3).max_norm(1.0));
                  }),
                  "max_norm");
  EXPECT_LT(max_diff(F::embedding(idx, table), kiln::embedding(table, idx)), 1e-9);
  EXPECT_LT(max_diff(torch::embedding(table, idx), kiln::embedding(table, idx)), 1e-9);
  EXPECT_THROW(F::embedding(idx, table, F::EmbeddingFuncOptions().sparse(true)),
               kiln::NotImplementedError);
}

// ---- pooling ----

TEST(TorchNnPooling, MaxAndAvgPoolOptions) {
  const Tensor x = kiln::randn({2, 3, 9, 9});
  torch::nn::MaxPool2d pool(torch::nn::MaxPool2dOptions(3).stride(2).padding(1));
  EXPECT_EQ(shape(pool(x)), (std::vector<int64_t>{2, 3, 5, 5}));
  EXPECT_LT(max_diff(pool(x), kiln::max_pool2d(x, 3, 2, 1)), 1e-9);
  EXPECT_EQ(shape(torch::nn::MaxPool2d(2)(x)), (std::vector<int64_t>{2, 3, 4, 4}));  // stride 2
  torch::nn::MaxPool2d ceil(torch::nn::MaxPool2dOptions(2).ceil_mode(true));
  EXPECT_EQ(shape(ceil(x)), (std::vector<int64_t>{2, 3, 5, 5}));
  torch::nn::AvgPool2d avg(
      torch::nn::AvgPool2dOptions(3).stride(1).padding(1).count_include_pad(false));
  EXPECT_LT(max_diff(avg(x), kiln::avg_pool2d(x, 3, 1, 1, false, false)), 1e-6);
  torch::nn::AvgPool2d divided(torch::nn::AvgPool2dOptions(3).divisor_override(1));
  EXPECT_LT(max_diff(divided(x), kiln::avg_pool2d(x, 3) * 9.0), 1e-4);
  EXPECT_LT(
      max_diff(F::max_pool2d(x, F::MaxPool2dFuncOptions(2).stride(1)), kiln::max_pool2d(x, 2, 1)),
      1e-9);
  EXPECT_LT(max_diff(F::avg_pool2d(x, F::AvgPool2dFuncOptions(3)), kiln::avg_pool2d(x, 3)), 1e-9);
  EXPECT_LT(max_diff(torch::max_pool2d(x, 2), kiln::max_pool2d(x, {2, 2})), 1e-9);
  auto [values, indices] = F::max_pool2d_with_indices(x, F::MaxPool2dFuncOptions(3));
  EXPECT_EQ(shape(indices), (std::vector<int64_t>{2, 3, 3, 3}));
  EXPECT_LT(max_diff(values, kiln::max_pool2d(x, 3)), 1e-9);
}

TEST(TorchNnPooling, AdaptiveAvgPoolKeepsADimGivenAsNullopt) {
  const Tensor x = kiln::randn({2, 3, 8, 6});
  EXPECT_EQ(shape(torch::nn::AdaptiveAvgPool2d(1)(x)), (std::vector<int64_t>{2, 3, 1, 1}));
  torch::nn::AdaptiveAvgPool2d keep_w(torch::nn::AdaptiveAvgPool2dOptions({2, std::nullopt}));
  EXPECT_EQ(shape(keep_w(x)), (std::vector<int64_t>{2, 3, 2, 6}));
  EXPECT_LT(max_diff(keep_w(x), kiln::adaptive_avg_pool2d(x, {2, 6})), 1e-9);
  EXPECT_LT(max_diff(F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions({4, 3})),
                     kiln::adaptive_avg_pool2d(x, {4, 3})),
            1e-9);
  EXPECT_THROW(keep_w(kiln::randn({8, 6})), kiln::ShapeError);
}

// ---- activations ----

TEST(TorchNnActivation, OptionsReachKilnsActivations) {
  const Tensor x = kiln::tensor({-1.0, 0.5, 2.0});
  torch::nn::LeakyReLU leaky(torch::nn::LeakyReLUOptions().negative_slope(0.2));
  EXPECT_NEAR(leaky(x).to_vector<float>()[0], -0.2, 1e-6);
  EXPECT_NEAR(torch::nn::LeakyReLU()(x).to_vector<float>()[0], -0.01, 1e-6);
  torch::nn::ELU elu(torch::nn::ELUOptions().alpha(2.0));
  EXPECT_NEAR(elu(x).to_vector<float>()[0], 2.0 * (std::exp(-1.0) - 1.0), 1e-5);
  torch::nn::GELU gelu(torch::nn::GELUOptions().approximate("tanh"));
  EXPECT_LT(max_diff(gelu(x), kiln::gelu(x, "tanh")), 1e-7);
  EXPECT_GT(max_diff(torch::nn::GELU()(x), kiln::gelu(x, "tanh")), 0.0);
  torch::nn::Softplus softplus(torch::nn::SoftplusOptions().beta(2.0).threshold(1.0));
  EXPECT_LT(max_diff(softplus(x), kiln::softplus(x, 2.0, 1.0)), 1e-7);
  EXPECT_LT(max_diff(torch::nn::ReLU()(x), kiln::relu(x)), 1e-9);
  EXPECT_LT(max_diff(torch::nn::SiLU()(x), kiln::silu(x)), 1e-9);
  EXPECT_LT(max_diff(torch::nn::Sigmoid()(x), kiln::sigmoid(x)), 1e-9);
  EXPECT_LT(max_diff(torch::nn::Tanh()(x), kiln::tanh(x)), 1e-9);
  const Tensor m = kiln::randn({2, 5});
  EXPECT_LT(max_diff(torch::nn::Softmax(1)(m).sum({1}), kiln::ones({2})), 1e-6);
  EXPECT_LT(
      max_diff(torch::nn::LogSoftmax(torch::nn::LogSoftmaxOptions(0))(m), kiln::log_softmax(m, 0)),
      1e-9);
  EXPECT_EQ(torch::nn::Softmax(1)->options.dim(), 1);
}

TEST(TorchNnActivation, FunctionalsAndTorchOpsEqualKilns) {
  const Tensor x = kiln::randn({3, 4});
  EXPECT_LT(max_diff(F::relu(x), kiln::relu(x)), 1e-9);
  EXPECT_LT(max_diff(F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.3)),
                     kiln::nn::functional::leaky_relu(x, 0.3)),
            1e-9);
  EXPECT_LT(max_diff(F::elu(x, F::ELUFuncOptions().alpha(0.5)), kiln::nn::functional::elu(x, 0.5)),
            1e-9);
  EXPECT_LT(max_diff(F::gelu(x, F::GELUFuncOptions().approximate("tanh")), kiln::gelu(x, "tanh")),
            1e-9);
  EXPECT_LT(max_diff(F::silu(x), kiln::silu(x)), 1e-9);
  EXPECT_LT(max_diff(F::softplus(x, F::SoftplusFuncOptions().beta(3.0)), kiln::softplus(x, 3.0)),
            1e-9);
  EXPECT_LT(max_diff(F::sigmoid(x), kiln::sigmoid(x)), 1e-9);
  EXPECT_LT(max_diff(F::tanh(x), kiln::tanh(x)), 1e-9);
  EXPECT_LT(max_diff(F::softmax(x, F::SoftmaxFuncOptions(1)), kiln::softmax(x, 1)), 1e-9);
  EXPECT_EQ(F::softmax(x, F::SoftmaxFuncOptions(1).dtype(kiln::kFloat64)).dtype(), kiln::kFloat64);
  EXPECT_LT(max_diff(F::log_softmax(x, F::LogSoftmaxFuncOptions(0)), kiln::log_softmax(x, 0)),
            1e-9);
  EXPECT_LT(max_diff(torch::relu(x), kiln::relu(x)), 1e-9);
  EXPECT_LT(max_diff(torch::log_softmax(x, 1), kiln::log_softmax(x, 1)), 1e-9);
  EXPECT_LT(max_diff(torch::softmax(x, 0), kiln::softmax(x, 0)), 1e-9);
  EXPECT_LT(max_diff(torch::sigmoid(x), kiln::sigmoid(x)), 1e-9);
  EXPECT_LT(max_diff(torch::tanh(x), kiln::tanh(x)), 1e-9);
  EXPECT_LT(max_diff(torch::leaky_relu(x, 0.2), kiln::nn::functional::leaky_relu(x, 0.2)), 1e-9);
  // An unqualified call under `using namespace torch` finds one function through both names.
  using namespace torch;
  EXPECT_LT(max_diff(relu(x), kiln::relu(x)), 1e-9);
}

// ---- losses ----

TEST(TorchNnLoss, ReductionsSumMeanAndNone) {
  const Tensor a = kiln::randn({4, 3}), b = kiln::randn({4, 3});
  const Tensor squared = (a - b) * (a - b);
  torch::nn::MSELoss sum(torch::nn::MSELossOptions().reduction(torch::kSum));
  EXPECT_NEAR(sum(a, b).item<double>(), squared.sum().item<double>(), 1e-4);
  torch::nn::MSELoss mean;
  EXPECT_NEAR(mean(a, b).item<double>(), squared.mean().item<double>(), 1e-5);
  torch::nn::MSELoss none(torch::kNone);
  EXPECT_EQ(shape(none->forward(a, b)), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(none->reduction, "none");
  torch::nn::L1Loss l1(torch::kSum);
  EXPECT_NEAR(l1(a, b).item<double>(), (a - b).abs().sum().item<double>(), 1e-4);
  torch::nn::SmoothL1Loss smooth(torch::nn::SmoothL1LossOptions().beta(0.5));
  EXPECT_NEAR(smooth(a, b).item<double>(),
              kiln::nn::functional::smooth_l1_loss(a, b, "mean", 0.5).item<double>(), 1e-6);
  torch::nn::HuberLoss huber(torch::nn::HuberLossOptions(torch::kSum).delta(0.3));
  EXPECT_NEAR(huber(a, b).item<double>(),
              kiln::nn::functional::huber_loss(a, b, "sum", 0.3).item<double>(), 1e-5);
}

TEST(TorchNnLoss, ClassificationLossesTakeTheirOptions) {
  kiln::manual_seed(7);
  const Tensor logits = kiln::randn({5, 4});
  const Tensor target = kiln::tensor({0, 3, 1, 1, 2});
  const Tensor weight = kiln::tensor({1.0, 2.0, 0.5, 1.0});
  torch::nn::CrossEntropyLoss ce(torch::nn::CrossEntropyLossOptions()
                                     .reduction(torch::kSum)
                                     .ignore_index(1)
                                     .label_smoothing(0.1)
                                     .weight(weight));
  EXPECT_NEAR(ce(logits, target).item<double>(),
              kiln::cross_entropy(logits, target, weight, "sum", 1, 0.1).item<double>(), 1e-5);
  EXPECT_EQ(ce->ignore_index, 1);
  const Tensor log_probs = kiln::log_softmax(logits, 1);
  torch::nn::NLLLoss nll(torch::nn::NLLLossOptions().reduction(torch::kSum));
  EXPECT_NEAR(nll(log_probs, target).item<double>(),
              kiln::nll_loss(log_probs, target, {}, "sum").item<double>(), 1e-5);
  EXPECT_NEAR(torch::nn::NLLLoss()(log_probs, target).item<double>(),
              kiln::nll_loss(log_probs, target).item<double>(), 1e-6);
  const Tensor p = kiln::sigmoid(kiln::randn({6})),
               y = kiln::tensor({1.0, 0.0, 1.0, 1.0, 0.0, 0.0});
  torch::nn::BCELoss bce(torch::nn::BCELossOptions().weight(kiln::full({6}, 2.0)));
  EXPECT_NEAR(bce(p, y).item<double>(),
              2.0 * kiln::nn::functional::binary_cross_entropy(p, y).item<double>(), 1e-5);
  const Tensor z = kiln::randn({6}), pos = kiln::full({6}, 3.0);
  torch::nn::BCEWithLogitsLoss bcel(torch::nn::BCEWithLogitsLossOptions().pos_weight(pos));
  EXPECT_NEAR(bcel(z, y).item<double>(),
              kiln::binary_cross_entropy_with_logits(z, y, {}, pos).item<double>(), 1e-5);
  const Tensor q = kiln::softmax(kiln::randn({3, 4}), 1);
  torch::nn::KLDivLoss kl(torch::nn::KLDivLossOptions(torch::kBatchMean));
  EXPECT_NEAR(
      kl(log_probs.narrow(0, 0, 3), q).item<double>(),
      kiln::nn::functional::kl_div(log_probs.narrow(0, 0, 3), q, "batchmean").item<double>(), 1e-6);
  expect_contains(expect_error<kiln::Error>([&] {
                    ce(logits, kiln::tensor({0, 1}));
                  }),
                  "CrossEntropyLoss");
}

TEST(TorchNnLoss, FunctionalLossesEqualKilns) {
  const Tensor a = kiln::randn({4, 3}), b = kiln::randn({4, 3});
  EXPECT_NEAR(F::mse_loss(a, b, torch::kSum).item<double>(),
              kiln::mse_loss(a, b, "sum").item<double>(), 1e-5);
  EXPECT_NEAR(F::l1_loss(a, b).item<double>(), kiln::nn::functional::l1_loss(a, b).item<double>(),
              1e-6);
  EXPECT_NEAR(F::smooth_l1_loss(a, b, F::SmoothL1LossFuncOptions(), 0.5).item<double>(),
              kiln::nn::functional::smooth_l1_loss(a, b, "mean", 0.5).item<double>(), 1e-6);
  EXPECT_NEAR(F::smooth_l1_loss(a, b, F::SmoothL1LossFuncOptions().beta(0.5)).item<double>(),
              kiln::nn::functional::smooth_l1_loss(a, b, "mean", 0.5).item<double>(), 1e-6);
  EXPECT_NEAR(F::huber_loss(a, b, F::HuberLossFuncOptions().delta(2.0)).item<double>(),
              kiln::nn::functional::huber_loss(a, b, "mean", 2.0).item<double>(), 1e-6);
  const Tensor logits = kiln::randn({4, 3}), target = kiln::tensor({2, 0, 1, 1});
  EXPECT_NEAR(F::cross_entropy(logits, target, F::CrossEntropyFuncOptions().label_smoothing(0.2))
                  .item<double>(),
              kiln::cross_entropy(logits, target, {}, "mean", -100, 0.2).item<double>(), 1e-6);
  const Tensor lp = kiln::log_softmax(logits, 1);
  EXPECT_NEAR(
      F::nll_loss(lp, target, F::NLLLossFuncOptions().reduction(torch::kSum)).item<double>(),
      kiln::nll_loss(lp, target, {}, "sum").item<double>(), 1e-5);
  const Tensor p = kiln::sigmoid(a), y = kiln::rand({4, 3});
  EXPECT_NEAR(F::binary_cross_entropy(p, y).item<double>(),
              kiln::nn::functional::binary_cross_entropy(p, y).item<double>(), 1e-6);
  EXPECT_NEAR(F::binary_cross_entropy_with_logits(
                  a, y, torch::nn::BCEWithLogitsLossOptions().reduction(torch::kSum))
                  .item<double>(),
              kiln::binary_cross_entropy_with_logits(a, y, {}, {}, "sum").item<double>(), 1e-5);
  EXPECT_NEAR(F::kl_div(lp, kiln::softmax(b, 1), F::KLDivFuncOptions().reduction(torch::kSum))
                  .item<double>(),
              kiln::nn::functional::kl_div(lp, kiln::softmax(b, 1), "sum").item<double>(), 1e-6);
}

TEST(TorchNnAten, LossesTakeATensReductionNumbers) {
  const Tensor logits = kiln::randn({5, 3}), target = kiln::tensor({0, 2, 1, 1, 0});
  const Tensor lp = kiln::log_softmax(logits, 1);
  EXPECT_NEAR(torch::nll_loss(lp, target, /*weight=*/{}, torch::Reduction::Sum).item<double>(),
              kiln::nll_loss(lp, target, {}, "sum").item<double>(), 1e-5);
  EXPECT_NEAR(torch::nll_loss(lp, target).item<double>(), kiln::nll_loss(lp, target).item<double>(),
              1e-6);
  EXPECT_NEAR(torch::cross_entropy_loss(logits, target).item<double>(),
              kiln::cross_entropy(logits, target).item<double>(), 1e-6);
  const Tensor a = kiln::randn({4}), b = kiln::randn({4});
  const Tensor p = kiln::sigmoid(a), y = kiln::tensor({1.0, 0.0, 0.0, 1.0});
  EXPECT_NEAR(torch::binary_cross_entropy(p, y).item<double>(),
              kiln::nn::functional::binary_cross_entropy(p, y).item<double>(), 1e-6);
  EXPECT_NEAR(torch::binary_cross_entropy_with_logits(a, y).item<double>(),
              kiln::binary_cross_entropy_with_logits(a, y).item<double>(), 1e-6);
  EXPECT_NEAR(torch::smooth_l1_loss(a, b).item<double>(),
              kiln::nn::functional::smooth_l1_loss(a, b).item<double>(), 1e-6);
  EXPECT_NEAR(torch::smooth_l1_loss(a, b, torch::Reduction::Sum, 0.5).item<double>(),
              kiln::nn::functional::smooth_l1_loss(a, b, "sum", 0.5).item<double>(), 1e-6);
  EXPECT_EQ(shape(torch::mse_loss(a, b, torch::Reduction::None)), (std::vector<int64_t>{4}));
  EXPECT_NEAR(torch::l1_loss(a, b).item<double>(), (a - b).abs().mean().item<double>(), 1e-6);
  EXPECT_NEAR(torch::huber_loss(a, b, torch::Reduction::Mean, 0.1).item<double>(),
              kiln::nn::functional::huber_loss(a, b, "mean", 0.1).item<double>(), 1e-6);
  EXPECT_NEAR(torch::kl_div(lp, kiln::softmax(logits, 1)).item<double>(),
              kiln::nn::functional::kl_div(lp, kiln::softmax(logits, 1)).item<double>(), 1e-6);
  expect_contains(expect_error<kiln::ValueError>([&] { torch::mse_loss(a, b, 7); }), "reduction");
}

TEST(TorchNnAten, NormalizationEmbeddingAndConvolutionInATensOrder) {
  const Tensor x = kiln::randn({2, 4, 3});
  EXPECT_LT(max_diff(torch::layer_norm(x, {3}), kiln::layer_norm(x, {3})), 1e-9);
  EXPECT_LT(max_diff(torch::group_norm(x, 2), kiln::group_norm(x, 2)), 1e-9);
  const Tensor table = kiln::randn({5, 2}).requires_grad_(true);
  const Tensor idx = kiln::tensor({0, 0, 4});
  torch::embedding(table, idx).sum().backward();  // padding_idx -1: every row gets a gradient
  EXPECT_EQ(table.grad().select(0, 0).to_vector<float>(), (std::vector<float>{2, 2}));
  const Tensor img = kiln::randn({1, 2, 5, 5}), w = kiln::randn({3, 2, 3, 3});
  EXPECT_LT(max_diff(torch::conv2d(img, w, {}, 2), kiln::conv2d(img, w, {}, 2)), 1e-9);
  EXPECT_LT(max_diff(torch::linear(x, kiln::ones({2, 3})), kiln::linear(x, kiln::ones({2, 3}))),
            1e-9);
}

// ---- Sequential ----

// A user module: forward is its own, non-virtual, taking the tensor by value.
struct ScaleImpl : torch::nn::Module {
  explicit ScaleImpl(double factor = 2.0) : factor(factor) {}
  torch::Tensor forward(torch::Tensor x) { return x * factor; }
  double factor;
};
TORCH_MODULE(Scale);

TEST(TorchNnSequential, HoldsLayersAndUserModulesAndRunsTheirForwards) {
  torch::nn::Linear fc(3, 2);
  torch::nn::Sequential seq(fc, torch::nn::ReLU(), Scale(3.0), std::make_shared<ScaleImpl>(0.5));
  EXPECT_EQ(seq->size(), 4u);
  const Tensor x = kiln::randn({4, 3});
  EXPECT_LT(max_diff(seq->forward(x), kiln::relu(fc(x)) * 1.5), 1e-6);
  EXPECT_LT(max_diff(seq(x), seq->forward<torch::Tensor>(x)), 1e-9);
  std::set<std::string> children;
  for (const auto& [name, child] : seq->named_children()) children.insert(name);
  EXPECT_EQ(children, (std::set<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(parameter_names(*seq), (std::vector<std::string>{"0.weight", "0.bias"}));
  EXPECT_EQ(seq->ptr(0).get(), fc.get());
  EXPECT_EQ((*seq)[0].get(), fc.get());
  EXPECT_EQ(seq[1].get(), seq->ptr(1).get());  // the holder indexes its Sequential
  EXPECT_EQ(seq->ptr<ScaleImpl>(2)->factor, 3.0);
  EXPECT_EQ(seq->at<torch::nn::LinearImpl>(0).out_features, 2);
  int64_t count = 0;
  for (const torch::nn::AnyModule& m : *seq) count += m.ptr() != nullptr;
  EXPECT_EQ(count, 4);
  seq->push_back(torch::nn::Linear(2, 1));
  EXPECT_EQ(shape(seq(x)), (std::vector<int64_t>{4, 1}));
  seq->push_back("head", Scale());
  EXPECT_EQ(seq->named_children().back().first, "head");
}

TEST(TorchNnSequential, TheDCGANDiscriminatorBuildsAndRuns) {
  torch::nn::Sequential d(
      torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 4).stride(2).padding(1).bias(false)),
      torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 16, 4).stride(2).padding(1).bias(false)),
      torch::nn::BatchNorm2d(16),
      torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 1, 7).bias(false)), torch::nn::Sigmoid());
  const Tensor out = d->forward(kiln::randn({2, 1, 28, 28}));
  EXPECT_EQ(shape(out), (std::vector<int64_t>{2, 1, 1, 1}));
  EXPECT_EQ(d->state_dict().tensors.count("3.running_mean"), 1u);
  out.sum().backward();
  EXPECT_TRUE(d->ptr<torch::nn::Conv2dImpl>(0)->weight.grad().defined());
}

TEST(TorchNnSequential, NamedValuesNestingAndErrors) {
  torch::nn::Sequential named({{"fc", torch::nn::Linear(2, 3)}, {"act", torch::nn::Tanh()}});
  EXPECT_EQ(parameter_names(*named), (std::vector<std::string>{"fc.weight", "fc.bias"}));
  // A layer value is rebuilt from its options with its parameters' values.
  torch::nn::LinearImpl value(2, 2);
  torch::nn::Sequential from_value;
  from_value->push_back(value);
  const auto rebuilt = from_value->ptr<torch::nn::LinearImpl>(0);
  EXPECT_NE(rebuilt.get(), &value);
  EXPECT_LT(max_diff(rebuilt->weight, value.weight), 1e-9);
  torch::nn::Sequential outer(named, torch::nn::Linear(3, 1));
  EXPECT_EQ(shape(outer(kiln::randn({5, 2}))), (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(parameter_names(*outer).front(), "0.fc.weight");
  torch::nn::Sequential empty;
  expect_contains(expect_error<kiln::ValueError>([&] { empty->forward(kiln::ones({1})); }),
                  "Sequential");
  expect_contains(expect_error<kiln::IndexError>([&] { named->ptr(5); }), "Sequential");
  expect_contains(expect_error<kiln::ValueError>([&] { named->ptr<torch::nn::Conv2dImpl>(0); }),
                  "Linear");
  EXPECT_THROW(named->push_back("fc", torch::nn::ReLU()), kiln::ValueError);
  EXPECT_EQ(named->size(), 2u);
}

TEST(TorchNnSequential, FunctionalWrapsAFunctionWithBoundArguments) {
  torch::nn::Sequential seq(torch::nn::Linear(3, 3), torch::nn::Functional(torch::relu),
                            torch::nn::Functional(torch::leaky_relu, 0.5));
  const Tensor x = kiln::randn({4, 3});
  const Tensor expected = kiln::relu(seq->ptr<torch::nn::LinearImpl>(0)->forward(x));
  EXPECT_LT(max_diff(seq(x), expected), 1e-6);
  torch::nn::Functional negate(torch::leaky_relu, -1.0);
  EXPECT_EQ(negate(kiln::tensor({-2.0})).to_vector<float>(), (std::vector<float>{2.0f}));
  EXPECT_TRUE(negate->parameters().empty());
}

// ---- ModuleList, ModuleDict, ParameterDict ----

TEST(TorchNnContainers, ModuleListRegistersAndInsertRenames) {
  torch::nn::ModuleList list(torch::nn::Linear(2, 2), torch::nn::ReLU());
  list->push_back(std::make_shared<ScaleImpl>());
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ(parameter_names(*list), (std::vector<std::string>{"0.weight", "0.bias"}));
  list->insert(0, torch::nn::Linear(2, 4));
  EXPECT_EQ(list->size(), 4u);
  EXPECT_EQ(list->ptr<torch::nn::LinearImpl>(0)->out_features, 4);
  EXPECT_EQ(list->at<torch::nn::LinearImpl>(1).out_features, 2);
  EXPECT_EQ(parameter_names(*list),
            (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias"}));
  size_t n = 0;
  for (const auto& m : *list) n += m != nullptr;
  EXPECT_EQ(n, 4u);
  EXPECT_THROW(list->ptr(9), kiln::IndexError);
  EXPECT_THROW(list->insert(9, torch::nn::ReLU()), kiln::IndexError);
}

TEST(TorchNnContainers, ModuleDictAndParameterDictKeepInsertionOrder) {
  torch::nn::ModuleDict dict(std::vector<std::pair<std::string, std::shared_ptr<kiln::nn::Module>>>{
      {"enc", torch::nn::Linear(3, 2).ptr()}, {"act", torch::nn::ReLU().ptr()}});
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"enc", "act"}));
  EXPECT_TRUE(dict->contains("enc"));
  EXPECT_EQ(dict->at<torch::nn::LinearImpl>("enc").in_features, 3);
  dict->insert("enc", torch::nn::Linear(5, 2));  // replaces
  EXPECT_EQ(dict->at<torch::nn::LinearImpl>("enc").in_features, 5);
  EXPECT_EQ(dict->size(), 2u);
  EXPECT_EQ(shape(dict->named_parameters().front().second), (std::vector<int64_t>{2, 5}));
  expect_contains(expect_error<kiln::ValueError>([&] { (*dict)["nope"]; }), "nope");

  torch::nn::ParameterDict params;
  params->insert("scale", kiln::ones({2}).requires_grad_(true));
  params->insert("frozen", kiln::zeros({1}));
  EXPECT_EQ(params->keys(), (std::vector<std::string>{"scale", "frozen"}));
  EXPECT_EQ(parameter_names(*params), (std::vector<std::string>{"scale", "frozen"}));
  EXPECT_TRUE((*params)["scale"].requires_grad());
  EXPECT_FALSE(params->get("frozen").requires_grad());
  EXPECT_THROW(params->get("nope"), kiln::ValueError);
}

// ---- attention, transformer ----

TEST(TorchNnTransformer, MultiheadAttentionAndEncoderLayerOptions) {
  torch::nn::MultiheadAttention mha(torch::nn::MultiheadAttentionOptions(8, 2).bias(false));
  EXPECT_FALSE(mha->in_proj_bias.defined());
  const Tensor q = kiln::randn({5, 3, 8});
  auto [out, weights] = mha->forward(q, q, q);
  EXPECT_EQ(shape(out), (std::vector<int64_t>{5, 3, 8}));
  EXPECT_EQ(shape(std::get<1>(mha->forward(q, q, q))), (std::vector<int64_t>{3, 5, 5}));
  expect_contains(
      expect_error<kiln::NotImplementedError>([] {
        torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(8, 2).kdim(4));
      }),
      "kdim");
  torch::nn::TransformerEncoderLayer layer(
      torch::nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0).activation(
          torch::kGELU));
  EXPECT_EQ(layer->linear1->out_features, 16);
  EXPECT_EQ(static_cast<kiln::nn::TransformerEncoderLayer&>(*layer).options.activation, "gelu");
  EXPECT_EQ(shape(layer(q)), (std::vector<int64_t>{5, 3, 8}));
  EXPECT_EQ(shape(layer->forward(q, {}, {})), (std::vector<int64_t>{5, 3, 8}));
  EXPECT_THROW(
      torch::nn::TransformerEncoderLayer(torch::nn::TransformerEncoderLayerOptions(8, 2).activation(
          [](const Tensor& t) { return t; })),
      kiln::NotImplementedError);
}

// ---- functional: linear, pad, normalize ----

TEST(TorchNnFunctional, PadNormalizeAndLinear) {
  const Tensor x = kiln::arange(6, kiln::kFloat32).reshape({1, 2, 3});
  EXPECT_EQ(shape(F::pad(x, F::PadFuncOptions({1, 2}))), (std::vector<int64_t>{1, 2, 6}));
  EXPECT_EQ(F::pad(x, F::PadFuncOptions({1, 0}).value(7.0)).select(2, 0).to_vector<float>(),
            (std::vector<float>{7, 7}));
  EXPECT_LT(max_diff(F::pad(x, F::PadFuncOptions({1, 1}).mode(torch::kReflect)),
                     kiln::pad(x, {1, 1}, "reflect")),
            1e-9);
  const Tensor m = kiln::randn({4, 3});
  const Tensor unit = F::normalize(m, F::NormalizeFuncOptions().dim(1));
  EXPECT_LT(max_diff(kiln::norm(unit, 2, {1}), kiln::ones({4})), 1e-5);
  const Tensor l1 = F::normalize(m, F::NormalizeFuncOptions().p(1).dim(0));
  EXPECT_LT(max_diff(l1.abs().sum({0}), kiln::ones({3})), 1e-5);
  EXPECT_THROW(F::normalize(m, F::NormalizeFuncOptions().out(m)), kiln::NotImplementedError);
  EXPECT_EQ(shape(F::flatten(kiln::randn({2, 3, 4}), 1)), (std::vector<int64_t>{2, 12}));
}

// ---- init, utils ----

TEST(TorchNnInit, InitializersTakeLibTorchsConstants) {
  kiln::manual_seed(0);
  const Tensor w = kiln::empty({400, 300});
  torch::nn::init::kaiming_normal_(w, 0, torch::kFanOut, torch::kReLU);
  EXPECT_NEAR(w.std().item<double>(), std::sqrt(2.0 / 400.0), 0.002);
  torch::nn::init::xavier_uniform_(w);
  EXPECT_LE(w.abs().max().item<double>(), std::sqrt(6.0 / 700.0) + 1e-6);
  EXPECT_NEAR(torch::nn::init::calculate_gain(torch::kLeakyReLU, 0.2),
              std::sqrt(2.0 / (1.0 + 0.04)), 1e-12);
  EXPECT_NEAR(torch::nn::init::calculate_gain(torch::kTanh), 5.0 / 3.0, 1e-12);
  EXPECT_EQ(torch::nn::init::constant_(kiln::empty({2}), 3).to_vector<float>(),
            (std::vector<float>{3, 3}));
  EXPECT_EQ(torch::nn::init::_calculate_fan_in_and_fan_out(kiln::empty({4, 3, 2, 2})),
            std::make_tuple(int64_t{12}, int64_t{16}));
  const Tensor p = kiln::ones({4}).requires_grad_(true);
  (p * 3.0).sum().backward();
  EXPECT_NEAR(torch::nn::utils::clip_grad_norm_(p, 1.0), 6.0, 1e-5);
  EXPECT_NEAR(p.grad().norm().item<double>(), 1.0, 1e-4);
  torch::nn::utils::clip_grad_value_({p}, 0.1);
  EXPECT_LE(p.grad().abs().max().item<double>(), 0.1 + 1e-7);
}

}  // namespace
