// Module::clone (Note [Cloning a module]): every layer and container copies itself deeply, as
// LibTorch's clone does, and a copy is a new module to kiln::compile.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <typeinfo>
#include <vector>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "kiln/nn/rnn.h"
#include "kiln/nn/transformer_stack.h"
#include "kiln/nn/upsampling.h"
#include "tests/capture/compare.h"

namespace kiln::nn {
namespace {

using kiln::testing::error_of_kind;
using kiln::testing::expect_equal;

// A module and an input its one-tensor forward takes.
struct Case {
  std::string label;
  std::shared_ptr<Module> module;
  Tensor input;
};

std::vector<Case> every_layer() {
  manual_seed(7);
  auto seq = [](std::initializer_list<std::shared_ptr<Module>> m) {
    return std::make_shared<Sequential>(m);
  };
  std::vector<Case> cases = {
      {"Linear", std::make_shared<Linear>(4, 3), randn({2, 4})},
      {"Linear no bias", std::make_shared<Linear>(4, 3, false), randn({2, 4})},
      {"Identity", std::make_shared<Identity>(), randn({2})},
      {"ReLU", std::make_shared<ReLU>(), randn({5})},
      {"GELU", std::make_shared<GELU>("tanh"), randn({5})},
      {"SiLU", std::make_shared<SiLU>(), randn({5})},
      {"Sigmoid", std::make_shared<Sigmoid>(), randn({5})},
      {"Tanh", std::make_shared<Tanh>(), randn({5})},
      {"Softplus", std::make_shared<Softplus>(2.0, 3.0), randn({5})},
      {"LeakyReLU", std::make_shared<LeakyReLU>(0.3), randn({5})},
      {"ELU", std::make_shared<ELU>(0.7), randn({5})},
      {"Softmax", std::make_shared<Softmax>(1), randn({2, 3})},
      {"LogSoftmax", std::make_shared<LogSoftmax>(0), randn({2, 3})},
      {"Dropout", std::make_shared<Dropout>(0.3), randn({4})},
      {"Dropout2d", std::make_shared<Dropout2d>(0.3), randn({2, 3, 4, 4})},
      {"Embedding", std::make_shared<Embedding>(10, 3, 1), arange(6, kInt64)},
      {"Flatten", std::make_shared<Flatten>(0, 1), randn({2, 3, 4})},
      {"Unflatten", std::make_shared<Unflatten>(1, std::vector<int64_t>{2, 2}), randn({3, 4})},
      {"Conv1d", std::make_shared<Conv1d>(2, 3, 3), randn({1, 2, 6})},
      {"Conv2d", std::make_shared<Conv2d>(2, 4, 3, ConvOptions<2>{.stride = 2, .groups = 2}),
       randn({1, 2, 7, 7})},
      {"Conv3d", std::make_shared<Conv3d>(1, 2, 2), randn({1, 1, 3, 3, 3})},
      {"ConvTranspose2d", std::make_shared<ConvTranspose2d>(2, 3, 3), randn({1, 2, 3, 3})},
      {"BatchNorm1d", std::make_shared<BatchNorm1d>(3), randn({4, 3})},
      {"BatchNorm2d", std::make_shared<BatchNorm2d>(2, BatchNormOptions{.affine = false}),
       randn({2, 2, 3, 3})},
      {"LayerNorm", std::make_shared<LayerNorm>(std::vector<int64_t>{4}), randn({2, 4})},
      {"GroupNorm", std::make_shared<GroupNorm>(2, 4), randn({2, 4, 3})},
      {"InstanceNorm2d",
       std::make_shared<InstanceNorm2d>(
           2, InstanceNormOptions{.affine = true, .track_running_stats = true}),
       randn({2, 2, 3, 3})},
      {"MaxPool2d", std::make_shared<MaxPool2d>(2), randn({1, 1, 4, 4})},
      {"AvgPool1d", std::make_shared<AvgPool1d>(2), randn({1, 2, 6})},
      {"AdaptiveAvgPool2d", std::make_shared<AdaptiveAvgPool2d>(2), randn({1, 2, 5, 5})},
      {"AdaptiveMaxPool1d", std::make_shared<AdaptiveMaxPool1d>(3), randn({1, 2, 7})},
      {"Upsample",
       std::make_shared<Upsample>(
           UpsampleOptions{.scale_factor = std::vector<double>{2.0}, .mode = "nearest"}),
       randn({1, 1, 3})},
      {"PixelShuffle", std::make_shared<PixelShuffle>(2), randn({1, 4, 2, 2})},
      {"PixelUnshuffle", std::make_shared<PixelUnshuffle>(2), randn({1, 1, 4, 4})},
      {"MultiheadAttention", std::make_shared<MultiheadAttention>(4, 2), randn({3, 1, 4})},
      {"RNN", std::make_shared<RNN>(3, 4, RNNOptions{.nonlinearity = "relu"}), randn({5, 2, 3})},
      {"LSTM", std::make_shared<LSTM>(3, 4, RNNOptions{.num_layers = 2, .bidirectional = true}),
       randn({5, 2, 3})},
      {"LSTM proj", std::make_shared<LSTM>(3, 4, RNNOptions{.proj_size = 2}), randn({5, 2, 3})},
      {"GRU", std::make_shared<GRU>(3, 4, RNNOptions{.batch_first = true}), randn({2, 5, 3})},
      {"RNNCell relu", std::make_shared<RNNCell>(3, 4, true, "relu"), randn({2, 3})},
      {"GRUCell", std::make_shared<GRUCell>(3, 4, false), randn({2, 3})},
      {"TransformerEncoderLayer",
       std::make_shared<TransformerEncoderLayer>(
           4, 2, TransformerEncoderLayerOptions{.dim_feedforward = 8}),
       randn({3, 1, 4})},
      {"TransformerEncoder",
       std::make_shared<TransformerEncoder>(TransformerEncoderLayer(4, 2, {.dim_feedforward = 8}),
                                            2,
                                            std::make_shared<LayerNorm>(std::vector<int64_t>{4})),
       randn({3, 1, 4})},
      {"Sequential",
       seq({std::make_shared<Linear>(4, 8), std::make_shared<ReLU>(),
            seq({std::make_shared<Linear>(8, 2), std::make_shared<Tanh>()})}),
       randn({3, 4})},
  };
  return cases;
}

// Same names, values, dtypes and requires_grad; no storage shared.
void expect_deep_copy(const Module& original, const Module& copy, const std::string& label) {
  SCOPED_TRACE(label);
  const auto a = original.named_tensor_slots(), b = copy.named_tensor_slots();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(a[i].first);
    ASSERT_EQ(a[i].first, b[i].first);
    const Tensor &x = *a[i].second, &y = *b[i].second;
    ASSERT_EQ(x.defined(), y.defined());
    if (!x.defined()) continue;
    expect_equal(y, x);
    EXPECT_EQ(x.requires_grad(), y.requires_grad());
    EXPECT_TRUE(y.is_leaf());
    if (x.numel() > 0) {
      EXPECT_NE(x.data_ptr(), y.data_ptr());
    }
  }
}

TEST(ModuleClone, EveryLayerCopiesItsStateAndComputesTheSame) {
  for (Case& c : every_layer()) {
    SCOPED_TRACE(c.label);
    Module& original = *c.module;
    // State that differs from a fresh module's: trained-looking weights, eval mode.
    {
      NoGradGuard no_grad;
      for (Tensor& p : original.parameters()) p.mul_(1.5).add_(0.25);
    }
    original.eval();
    std::shared_ptr<Module> copy = original.clone();
    ASSERT_NE(copy, nullptr);
    EXPECT_EQ(typeid(*copy), typeid(original));
    EXPECT_NE(copy->id(), original.id());
    EXPECT_FALSE(copy->is_training());
    EXPECT_EQ(copy->repr(), original.repr());
    expect_deep_copy(original, *copy, c.label);
    expect_equal((*copy)(c.input), original(c.input));
    // Changing the copy leaves the original alone.
    std::map<std::string, Tensor> before;  // copies: a state dict shares the module's storage
    for (const auto& [name, tensor] : original.state_dict().tensors) before[name] = tensor.clone();
    {
      NoGradGuard no_grad;
      for (Tensor& p : copy->parameters()) p.zero_();
    }
    const StateDict after = original.state_dict();
    for (const auto& [name, tensor] : before) expect_equal(after.tensors.at(name), tensor);
  }
}

TEST(ModuleClone, KeepsDtypesTrainingModeBuffersAndTiedWeights) {
  struct Tied : Module {
    Tied() : Module("Tied") {
      a = register_module("a", std::make_shared<Linear>(3, 3));
      b = register_module("b", std::make_shared<Linear>(3, 3));
      b->weight = a->weight;  // tied, as an embedding and its decoder
      register_buffer("scratch", ones({2}), /*persistent=*/false);
      register_attribute("scale", 2.5);
    }
    std::shared_ptr<Module> clone() const override {
      return finish_clone(std::make_shared<Tied>());
    }
    std::shared_ptr<Linear> a, b;
  };
  auto model = std::make_shared<Tied>();
  model->to(kFloat64);
  model->a->bias.requires_grad_(false);
  model->b->train(false);
  model->set_attribute("scale", 4.0);
  model->a->weight.sum().backward();
  ASSERT_TRUE(model->a->weight.grad().defined());

  auto copy = std::dynamic_pointer_cast<Tied>(model->clone());
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->a->weight.dtype(), kFloat64);
  EXPECT_FALSE(copy->a->bias.requires_grad());
  EXPECT_TRUE(copy->is_training());
  EXPECT_FALSE(copy->b->is_training());
  EXPECT_EQ(copy->attribute_as<double>("scale"), 4.0);
  EXPECT_FALSE(copy->a->weight.grad().defined()) << "gradients are not copied";
  // The tie is kept in the copy, and not to the original.
  EXPECT_EQ(copy->a->weight.impl(), copy->b->weight.impl());
  EXPECT_NE(copy->a->weight.impl(), model->a->weight.impl());
  expect_deep_copy(*model, *copy, "Tied");
}

TEST(ModuleClone, ContainersCloneWhatTheyHold) {
  auto list = std::make_shared<ModuleList>(std::initializer_list<std::shared_ptr<Module>>{
      std::make_shared<Linear>(2, 2), std::make_shared<BatchNorm1d>(2)});
  auto copy = std::dynamic_pointer_cast<ModuleList>(list->clone());
  ASSERT_NE(copy, nullptr);
  ASSERT_EQ(copy->size(), 2u);
  EXPECT_NE((*copy)[0].get(), (*list)[0].get());
  EXPECT_NE(copy->at<BatchNorm1d>(1), nullptr);
  expect_deep_copy(*list, *copy, "ModuleList");
}

TEST(ModuleClone, AModuleWithoutCloneSaysWhatToDo) {
  struct Plain : Module {
    Plain() { fc = register_module("fc", std::make_shared<Linear>(2, 2)); }
    std::shared_ptr<Linear> fc;
  };
  Plain plain;
  const std::string message = error_of_kind<NotImplementedError>([&] { plain.clone(); });
  EXPECT_NE(message.find("Module.clone()"), std::string::npos) << message;
  EXPECT_NE(message.find("torch::nn::Cloneable"), std::string::npos) << message;
  EXPECT_NE(message.find("finish_clone"), std::string::npos) << message;
}

TEST(ModuleClone, AModuleChangedAfterConstructionIsRefusedNotHalfCopied) {
  auto linear = std::make_shared<Linear>(2, 2);
  linear->register_buffer("extra", zeros({1}));
  const std::string message = error_of_kind<ValueError>([&] { linear->clone(); });
  EXPECT_NE(message.find("Linear.clone()"), std::string::npos) << message;
  EXPECT_NE(message.find("buffers"), std::string::npos) << message;
}

// A clone is another module to kiln::compile: the compiled function reads each module's own
// weights, and changing one never changes what the other computes.
TEST(ModuleClone, ACompiledFunctionTellsACloneFromItsOriginal) {
  for (const std::string backend : {"eager", "inductor"}) {
    SCOPED_TRACE(backend);
    manual_seed(3);
    auto net = std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
        std::make_shared<Linear>(4, 4), std::make_shared<ReLU>(), std::make_shared<Linear>(4, 2)});
    auto copy = net->clone();
    auto fn = compile([](Module& m, const Tensor& x) { return m(x).sum(1); },
                      {.backend = backend, .fullgraph = true});
    const Tensor x = randn({3, 4});
    expect_equal(fn(*copy, x), fn(*net, x));
    {
      NoGradGuard no_grad;
      copy->parameters()[0].mul_(-2.0);
    }
    expect_equal(fn(*copy, x), (*copy)(x).sum(1));
    expect_equal(fn(*net, x), (*net)(x).sum(1));
    EXPECT_GT(((*copy)(x) - (*net)(x)).abs().max().item<double>(), 1e-3);
  }
}

}  // namespace
}  // namespace kiln::nn
