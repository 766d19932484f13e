// torch::nn's TransformerDecoderLayer, TransformerEncoder, TransformerDecoder and Transformer
// (kiln/torch/nn_transformer.h): LibTorch's options builders and argument orders reach Kiln's
// modules, the stacks' copies keep torch::nn's layer type and the layer's weights, and what Kiln
// does not support is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/ops/creation.h"
#include "kiln/ops/random.h"
#include "kiln/ops/reduce.h"
#include "kiln/torch/nn.h"

namespace {

using kiln::Tensor;

std::vector<int64_t> shape(const Tensor& t) { return t.sizes().vec(); }

bool equal(const Tensor& a, const Tensor& b) {
  return shape(a) == shape(b) && a.eq(b).all().item<bool>();
}

TEST(TorchNnTransformerStacks, EncoderCopiesTheLayerAndRunsTheNorm) {
  kiln::manual_seed(1);
  torch::nn::TransformerEncoderLayer layer(
      torch::nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0));
  torch::nn::TransformerEncoder encoder(torch::nn::TransformerEncoderOptions(layer, 3).norm(
      torch::nn::AnyModule(torch::nn::LayerNorm(torch::nn::LayerNormOptions({8})))));
  ASSERT_EQ(encoder->layers->size(), 3u);
  auto copy = encoder->layers->at<torch::nn::TransformerEncoderLayerImpl>(2);
  EXPECT_EQ(copy->options.dim_feedforward(), 16);
  EXPECT_TRUE(equal(copy->linear1->weight, layer->linear1->weight));
  EXPECT_FALSE(copy->linear1->weight.is_same(layer->linear1->weight));
  ASSERT_NE(encoder->norm, nullptr);
  EXPECT_TRUE(encoder->named_parameters().front().first == "layers.0.self_attn.in_proj_weight");
  EXPECT_TRUE(encoder->state_dict().tensors.contains("norm.weight"));

  const Tensor src = kiln::randn({5, 2, 8});
  const Tensor mask = torch::nn::TransformerImpl::generate_square_subsequent_mask(5);
  Tensor expected = src;
  for (int i = 0; i < 3; ++i) expected = layer->forward(expected, mask);
  expected = encoder->norm->forward(expected);
  EXPECT_TRUE(equal(encoder->forward(src, mask), expected));
  // Built from the layer's options instead of a layer.
  torch::nn::TransformerEncoder from_options(
      torch::nn::TransformerEncoderOptions(torch::nn::TransformerEncoderLayerOptions(8, 2), 2));
  EXPECT_EQ(from_options->layers->size(), 2u);
  EXPECT_EQ(from_options->norm, nullptr);
  EXPECT_EQ(shape(from_options(src)), shape(src));
}

TEST(TorchNnTransformerStacks, DecoderLayerAndDecoder) {
  torch::nn::TransformerDecoderLayer layer(
      torch::nn::TransformerDecoderLayerOptions(8, 2).dim_feedforward(32).dropout(0.0).activation(
          torch::kGELU));
  EXPECT_EQ(static_cast<kiln::nn::TransformerDecoderLayer&>(*layer).options.activation, "gelu");
  EXPECT_EQ(layer->linear1->out_features, 32);
  const Tensor tgt = kiln::randn({3, 2, 8}), memory = kiln::randn({5, 2, 8});
  EXPECT_EQ(shape(layer->forward(tgt, memory)), shape(tgt));
  torch::nn::TransformerDecoder decoder(torch::nn::TransformerDecoderOptions(layer, 2));
  const Tensor kpm = kiln::zeros({2, 5}, kiln::kBool);
  EXPECT_EQ(shape(decoder->forward(tgt, memory, {}, {}, {}, kpm)), shape(tgt));
  EXPECT_TRUE(decoder->state_dict().tensors.contains("layers.1.multihead_attn.in_proj_weight"));
  EXPECT_NO_THROW(decoder->layers->at<torch::nn::TransformerDecoderLayerImpl>(1));
  EXPECT_THROW(
      torch::nn::TransformerDecoderLayer(torch::nn::TransformerDecoderLayerOptions(8, 2).activation(
          [](const Tensor& t) { return t; })),
      kiln::NotImplementedError);
}

TEST(TorchNnTransformerStacks, TransformerTakesLibTorchsOptionsAndArguments) {
  torch::nn::TransformerOptions defaults;
  EXPECT_EQ(defaults.d_model(), 512);
  EXPECT_EQ(defaults.nhead(), 8);
  EXPECT_EQ(defaults.num_encoder_layers(), 6);
  EXPECT_EQ(defaults.num_decoder_layers(), 6);
  EXPECT_EQ(defaults.dim_feedforward(), 2048);
  EXPECT_EQ(defaults.dropout(), 0.1);
  EXPECT_EQ(torch::nn::TransformerOptions(16, 4, 2, 3).num_decoder_layers(), 3);

  torch::nn::Transformer model(torch::nn::TransformerOptions()
                                   .d_model(8)
                                   .nhead(2)
                                   .num_encoder_layers(1)
                                   .num_decoder_layers(2)
                                   .dim_feedforward(16)
                                   .dropout(0.0));
  EXPECT_EQ(model->options.nhead(), 2);
  EXPECT_EQ(model->encoder->layers->size(), 1u);
  EXPECT_EQ(model->decoder->layers->size(), 2u);
  const Tensor src = kiln::randn({6, 2, 8}), tgt = kiln::randn({4, 2, 8});
  const Tensor mask = torch::nn::TransformerImpl::generate_square_subsequent_mask(4);
  // LibTorch's order: src, tgt, src_mask, tgt_mask, memory_mask, and the key padding masks.
  const Tensor out = model->forward(src, tgt, {}, mask);
  EXPECT_EQ(shape(out), shape(tgt));
  const Tensor memory = model->encoder->forward(src);
  EXPECT_TRUE(equal(out, model->decoder->forward(tgt, memory, mask)));

  EXPECT_THROW(torch::nn::Transformer(torch::nn::TransformerOptions(8, 2).custom_encoder(
                   torch::nn::AnyModule(torch::nn::Linear(8, 8)))),
               kiln::NotImplementedError);
  EXPECT_THROW(torch::nn::Transformer(torch::nn::TransformerOptions(8, 2).activation(
                   [](const Tensor& t) { return t; })),
               kiln::NotImplementedError);
}

}  // namespace
