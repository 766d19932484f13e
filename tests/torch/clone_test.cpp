// clone() in LibTorch's idioms: torch::nn's layers clone to their own Impl type with their
// options, containers clone what they hold, and a user module derives from Cloneable<NetImpl>.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "kiln/torch.h"

namespace {

bool same_values(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && torch::equal(a, b);
}

// Every parameter and buffer equal in value and not shared.
void expect_deep_copy(torch::nn::Module& original, torch::nn::Module& copy) {
  auto a = original.named_parameters(), b = copy.named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_TRUE(same_values(a[i].second, b[i].second)) << a[i].first;
    EXPECT_NE(a[i].second.data_ptr(), b[i].second.data_ptr()) << a[i].first;
  }
  auto c = original.named_buffers(), d = copy.named_buffers();
  ASSERT_EQ(c.size(), d.size());
  for (size_t i = 0; i < c.size(); ++i) EXPECT_TRUE(same_values(c[i].second, d[i].second));
}

struct NetImpl : torch::nn::Cloneable<NetImpl> {
  explicit NetImpl(int64_t width) : width(width) { reset(); }
  void reset() override {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, width, 3)));
    bn = register_module("bn", torch::nn::BatchNorm2d(width));
    fc = register_module("fc", torch::nn::Linear(width, 2));
    scale = register_parameter("scale", torch::ones({1}));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(bn(conv(x)));
    return fc(x.mean({2, 3})) * scale;
  }
  int64_t width;
  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};
  torch::nn::Linear fc{nullptr};
  torch::Tensor scale;
};
TORCH_MODULE(Net);

TEST(TorchClone, ACloneableUserModuleIsRebuiltByResetAndCopied) {
  torch::manual_seed(1);
  Net net(3);
  auto x = torch::randn({2, 1, 6, 6});
  net->forward(x);  // moves the BatchNorm's running stats away from their initial values
  net->eval();
  auto copy = std::dynamic_pointer_cast<NetImpl>(net->clone());
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->width, 3);
  EXPECT_FALSE(copy->is_training());
  // reset() rebound the copy's members to its own submodules and parameters.
  EXPECT_NE(copy->fc.get(), net->fc.get());
  EXPECT_NE(copy->scale.data_ptr(), net->scale.data_ptr());
  EXPECT_EQ(copy->named_parameters()[0].first, "scale");
  expect_deep_copy(*net, *copy);
  EXPECT_TRUE(same_values(copy->forward(x), net->forward(x)));
  {
    torch::NoGradGuard no_grad;
    copy->fc->weight.add_(1.0);
    copy->scale.fill_(3.0);
  }
  EXPECT_TRUE(same_values(net->scale, torch::ones({1})));
  EXPECT_FALSE(same_values(copy->forward(x), net->forward(x)));
}

TEST(TorchClone, LayersCloneToTheirImplTypeWithTheirOptions) {
  torch::nn::Linear linear(torch::nn::LinearOptions(4, 3).bias(false));
  auto linear_copy = std::dynamic_pointer_cast<torch::nn::LinearImpl>(linear->clone());
  ASSERT_NE(linear_copy, nullptr);
  EXPECT_EQ(linear_copy->options.out_features(), 3);
  EXPECT_FALSE(linear_copy->options.bias());
  expect_deep_copy(*linear, *linear_copy);

  torch::nn::LSTM lstm(torch::nn::LSTMOptions(3, 5).num_layers(2).batch_first(true));
  auto lstm_copy = std::dynamic_pointer_cast<torch::nn::LSTMImpl>(lstm->clone());
  ASSERT_NE(lstm_copy, nullptr);
  EXPECT_EQ(lstm_copy->options.num_layers(), 2);
  expect_deep_copy(*lstm, *lstm_copy);
  auto x = torch::randn({2, 4, 3});
  EXPECT_TRUE(same_values(std::get<0>(lstm_copy->forward(x)), std::get<0>(lstm->forward(x))));

  torch::nn::TransformerEncoder encoder(torch::nn::TransformerEncoderOptions(
      torch::nn::TransformerEncoderLayerOptions(4, 2).dim_feedforward(8), 2));
  auto encoder_copy =
      std::dynamic_pointer_cast<torch::nn::TransformerEncoderImpl>(encoder->clone());
  ASSERT_NE(encoder_copy, nullptr);
  EXPECT_NE(encoder_copy->layers->at<torch::nn::TransformerEncoderLayerImpl>(0), nullptr);
  expect_deep_copy(*encoder, *encoder_copy);
}

TEST(TorchClone, ContainersCloneWhatTheyHoldAndKeepTheirForwards) {
  torch::manual_seed(2);
  torch::nn::Sequential seq({{"net", Net(2)},
                             {"act", torch::nn::Functional(torch::leaky_relu, 0.2)},
                             {"head", torch::nn::Linear(2, 1)}});
  auto copy = std::dynamic_pointer_cast<torch::nn::SequentialImpl>(seq->clone());
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->named_children()[1].first, "act");
  EXPECT_NE(copy->ptr<NetImpl>(0).get(), seq->ptr<NetImpl>(0).get());
  expect_deep_copy(*seq, *copy);
  auto x = torch::randn({2, 1, 5, 5});
  // The copy runs NetImpl's own (non-virtual) forward, as the original does.
  EXPECT_TRUE(same_values(copy->forward(x), seq->forward(x)));

  torch::nn::ModuleDict dict(
      std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>>{
          {"a", torch::nn::Linear(2, 2).ptr()}, {"b", torch::nn::ReLU().ptr()}});
  auto dict_copy = std::dynamic_pointer_cast<torch::nn::ModuleDictImpl>(dict->clone());
  ASSERT_NE(dict_copy, nullptr);
  EXPECT_EQ(dict_copy->keys(), dict->keys());
  expect_deep_copy(*dict, *dict_copy);

  torch::nn::ParameterDict params;
  params->insert("w", torch::randn({3}, torch::requires_grad()));
  params->insert("frozen", torch::zeros({2}));
  auto params_copy = std::dynamic_pointer_cast<torch::nn::ParameterDictImpl>(params->clone());
  ASSERT_NE(params_copy, nullptr);
  EXPECT_TRUE(params_copy->get("w").requires_grad());
  EXPECT_FALSE(params_copy->get("frozen").requires_grad());
  expect_deep_copy(*params, *params_copy);
}

TEST(TorchClone, AUserModuleThatIsNotCloneableSaysHow) {
  struct PlainImpl : torch::nn::Module {
    PlainImpl() { register_module("fc", torch::nn::Linear(2, 2)); }
  };
  PlainImpl plain;
  try {
    plain.clone();
    FAIL() << "no error";
  } catch (const kiln::NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("torch::nn::Cloneable<NetImpl>"), std::string::npos)
        << e.what();
  }
}

}  // namespace
