// TransformerDecoderLayer, TransformerEncoder, TransformerDecoder and Transformer
// (kiln/nn/transformer.h, kiln/nn/transformer_stack.h): values and gradients against PyTorch 1.13
// (tests/data/gen_transformer.py wrote transformer_reference.json: PyTorch's state dicts, loaded
// here strictly, so the key names are PyTorch's), the copies a stack makes of its layer, masks,
// batch_first, errors, and kiln::compile of a training step.
#include <gtest/gtest.h>

#include <fstream>
#include <limits>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "tests/capture/compare.h"
#include "tests/nn/reference.h"

namespace kiln::nn {
namespace {

using testing::Json;

const Json& reference_case(const std::string& name) {
  static const Json file = [] {
    const std::string path = std::string(KILN_TEST_DATA_DIR) + "/transformer_reference.json";
    std::ifstream in(path);
    if (!in)
      throw std::runtime_error("cannot open " + path + "; run tests/data/gen_transformer.py");
    return Json::parse(in);
  }();
  return file.at("cases").at(name);
}

// The case's input `name`, undefined when the case has none.
Tensor optional(const std::map<std::string, Tensor>& inputs, const std::string& name) {
  auto it = inputs.find(name);
  return it == inputs.end() ? Tensor() : it->second;
}

// Loads the case into m, runs `forward(inputs)` and compares the output and the gradients of
// 0.5 * sum(y^2) with PyTorch's.
template <typename Forward>
void check_case(Module& m, const std::string& name, Forward forward) {
  SCOPED_TRACE(name);
  const Json& c = reference_case(name);
  testing::load_case_state(m, c);
  const auto inputs = testing::case_inputs(c);
  const Tensor y = forward(inputs);
  testing::expect_close(y.detach(), testing::output(c, "y"), name);
  testing::expect_gradients(c, &m, y, inputs);
}

void check_decoder_layer(TransformerDecoderLayer& m, const std::string& name) {
  check_case(m, name, [&](const auto& in) {
    return m.forward(in.at("tgt"), in.at("memory"), optional(in, "tgt_mask"),
                     optional(in, "memory_mask"), optional(in, "tgt_key_padding_mask"),
                     optional(in, "memory_key_padding_mask"));
  });
}

const TransformerEncoderLayerOptions kSmall{.dim_feedforward = 8, .dropout = 0.0};

// ---- against PyTorch ----

TEST(TransformerReference, DecoderLayerPostNormRelu) {
  TransformerDecoderLayer m(4, 2, kSmall);
  check_decoder_layer(m, "decoder_layer_post_norm_relu");
}

TEST(TransformerReference, DecoderLayerPreNormGeluBatchFirstWithBoolAndFloatMasks) {
  TransformerDecoderLayer m(4, 2,
                            {.dim_feedforward = 8,
                             .dropout = 0.0,
                             .activation = "gelu",
                             .layer_norm_eps = 1e-4,
                             .batch_first = true,
                             .norm_first = true});
  check_decoder_layer(m, "decoder_layer_pre_norm_gelu_batch_first");
}

TEST(TransformerReference, DecoderLayerUnbatched) {
  TransformerDecoderLayer m(4, 2, kSmall);
  check_decoder_layer(m, "decoder_layer_unbatched");
}

TEST(TransformerReference, EncoderStackWithNormAndMasks) {
  TransformerEncoder m(TransformerEncoderLayer(4, 2, kSmall), 2,
                       std::make_shared<LayerNorm>(std::vector<int64_t>{4}));
  check_case(m, "encoder_stack", [&](const auto& in) {
    return m.forward(in.at("src"), in.at("mask"), in.at("src_key_padding_mask"));
  });
}

TEST(TransformerReference, DecoderStackBatchFirst) {
  TransformerEncoderLayerOptions o = kSmall;
  o.batch_first = true;
  TransformerDecoder m(TransformerDecoderLayer(4, 2, o), 2,
                       std::make_shared<LayerNorm>(std::vector<int64_t>{4}));
  check_case(m, "decoder_stack_batch_first", [&](const auto& in) {
    return m.forward(in.at("tgt"), in.at("memory"), in.at("tgt_mask"), {},
                     in.at("tgt_key_padding_mask"));
  });
}

Tensor run_transformer(Transformer& m, const std::map<std::string, Tensor>& in) {
  return m.forward(in.at("src"), in.at("tgt"), optional(in, "src_mask"), optional(in, "tgt_mask"),
                   optional(in, "memory_mask"), optional(in, "src_key_padding_mask"),
                   optional(in, "tgt_key_padding_mask"), optional(in, "memory_key_padding_mask"));
}

TEST(TransformerReference, TransformerSeqFirst) {
  Transformer m({.d_model = 4,
                 .nhead = 2,
                 .num_encoder_layers = 2,
                 .num_decoder_layers = 2,
                 .dim_feedforward = 8,
                 .dropout = 0.0});
  check_case(m, "transformer", [&](const auto& in) { return run_transformer(m, in); });
}

TEST(TransformerReference, TransformerBatchFirstNormFirstGelu) {
  Transformer m({.d_model = 4,
                 .nhead = 2,
                 .num_encoder_layers = 1,
                 .num_decoder_layers = 2,
                 .dim_feedforward = 8,
                 .dropout = 0.0,
                 .activation = "gelu",
                 .batch_first = true,
                 .norm_first = true});
  check_case(m, "transformer_batch_first_norm_first",
             [&](const auto& in) { return run_transformer(m, in); });
}

// ---- the copies of a layer (Note [Copies of a layer]) ----

bool equal(const Tensor& a, const Tensor& b) {
  return a.sizes().vec() == b.sizes().vec() && a.eq(b).all().item<bool>();
}

void expect_same_values(const StateDict& a, const StateDict& b) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto& [key, t] : a.tensors) {
    ASSERT_TRUE(b.tensors.contains(key)) << key;
    EXPECT_EQ(t.dtype(), b.tensors.at(key).dtype()) << key;
    EXPECT_TRUE(equal(t, b.tensors.at(key))) << key;
  }
}

TEST(TransformerStack, EveryLayerStartsAsACopyOfTheGivenLayer) {
  manual_seed(1);
  TransformerEncoderLayer layer(8, 2, {.dim_feedforward = 16});
  layer.to(kFloat64);
  layer.eval();
  layer.linear1->bias.requires_grad_(false);
  TransformerEncoder encoder(layer, 3);
  ASSERT_EQ(encoder.layers->size(), 3u);
  EXPECT_EQ(encoder.norm, nullptr);
  for (int64_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    auto copy = encoder.layers->at<TransformerEncoderLayer>(i);
    expect_same_values(copy->state_dict(), layer.state_dict());
    EXPECT_FALSE(copy->is_training());
    EXPECT_FALSE(copy->linear1->bias.requires_grad());
    EXPECT_TRUE(copy->linear1->weight.requires_grad());
    // A copy, not the layer itself nor a sharer of its storage.
    EXPECT_NE(copy.get(), &layer);
    EXPECT_FALSE(copy->self_attn->in_proj_weight.is_same(layer.self_attn->in_proj_weight));
  }
  {
    NoGradGuard no_grad;
    encoder.layers->at<TransformerEncoderLayer>(0)->linear2->weight.fill_(3.0);
  }
  EXPECT_FALSE(equal(encoder.layers->at<TransformerEncoderLayer>(1)->linear2->weight,
                     encoder.layers->at<TransformerEncoderLayer>(0)->linear2->weight));
  EXPECT_FALSE(layer.linear2->weight.eq(3.0).all().item<bool>());
}

TEST(TransformerStack, DecoderCopiesAndStateDictKeysArePyTorchs) {
  TransformerDecoderLayer layer(4, 2, kSmall);
  TransformerDecoder decoder(layer, 2, std::make_shared<LayerNorm>(std::vector<int64_t>{4}));
  expect_same_values(decoder.layers->at<TransformerDecoderLayer>(1)->state_dict(),
                     layer.state_dict());
  const StateDict dict = decoder.state_dict();
  for (const char* key :
       {"layers.0.self_attn.in_proj_weight", "layers.0.self_attn.in_proj_bias",
        "layers.0.self_attn.out_proj.weight", "layers.1.multihead_attn.in_proj_weight",
        "layers.1.multihead_attn.out_proj.bias", "layers.1.linear1.weight", "layers.1.linear2.bias",
        "layers.1.norm3.weight", "norm.weight", "norm.bias"})
    EXPECT_TRUE(dict.tensors.contains(key)) << key;
  EXPECT_EQ(dict.tensors.size(), 2 * 18u + 2);
}

TEST(TransformerStack, TransformerReinitializesMatricesButCopiesBiasesAndNorms) {
  manual_seed(2);
  Transformer m({.d_model = 8, .nhead = 2, .dim_feedforward = 16});
  // torch.nn.Transformer's defaults: 6 + 6 layers, each with final norms.
  ASSERT_EQ(m.encoder->layers->size(), 6u);
  ASSERT_EQ(m.decoder->layers->size(), 6u);
  ASSERT_NE(m.encoder->norm, nullptr);
  ASSERT_NE(m.decoder->norm, nullptr);
  auto l0 = m.encoder->layers->at<TransformerEncoderLayer>(0);
  auto l1 = m.encoder->layers->at<TransformerEncoderLayer>(1);
  EXPECT_FALSE(equal(l0->linear1->weight, l1->linear1->weight));  // xavier_uniform_ per layer
  EXPECT_TRUE(equal(l0->linear1->bias, l1->linear1->bias));       // the copied layer's
  const StateDict dict = m.state_dict();
  for (const char* key :
       {"encoder.layers.0.self_attn.in_proj_weight", "encoder.layers.5.norm2.bias",
        "encoder.norm.weight", "decoder.layers.5.multihead_attn.in_proj_bias", "decoder.norm.bias"})
    EXPECT_TRUE(dict.tensors.contains(key)) << key;
  EXPECT_EQ(dict.tensors.size(), 6 * 12u + 2 + 6 * 18u + 2);
}

TEST(TransformerStack, TransformerOptionsHaveTorchsDefaults) {
  const TransformerOptions o;
  EXPECT_EQ(o.d_model, 512);
  EXPECT_EQ(o.nhead, 8);
  EXPECT_EQ(o.num_encoder_layers, 6);
  EXPECT_EQ(o.num_decoder_layers, 6);
  EXPECT_EQ(o.dim_feedforward, 2048);
  EXPECT_EQ(o.dropout, 0.1);
  EXPECT_EQ(o.activation, "relu");
  EXPECT_FALSE(o.batch_first);
  EXPECT_FALSE(o.norm_first);
}

// ---- masks ----

TEST(TransformerMasks, SquareSubsequentMaskIsMinusInfinityAboveTheDiagonal) {
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor mask = generate_square_subsequent_mask(3);
  EXPECT_EQ(mask.dtype(), kFloat32);
  EXPECT_EQ(mask.sizes().vec(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(mask.to_vector<double>(), (std::vector<double>{0, -inf, -inf, 0, 0, -inf, 0, 0, 0}));
  EXPECT_EQ(Transformer::generate_square_subsequent_mask(1).to_vector<double>(),
            std::vector<double>{0});
  EXPECT_EQ(generate_square_subsequent_mask(0).sizes().vec(), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(generate_square_subsequent_mask(2, kFloat64).dtype(), kFloat64);
  EXPECT_THROW(generate_square_subsequent_mask(-1), ValueError);
  EXPECT_THROW(generate_square_subsequent_mask(2, kInt64), DTypeError);
}

TEST(TransformerMasks, TgtIsCausalWithoutAMaskAppliesTheCausalMask) {
  manual_seed(3);
  TransformerEncoderLayerOptions o = kSmall;
  for (bool batch_first : {false, true}) {
    SCOPED_TRACE(batch_first);
    o.batch_first = batch_first;
    TransformerDecoder decoder(TransformerDecoderLayer(4, 2, o), 2);
    const Tensor tgt = batch_first ? randn({2, 5, 4}) : randn({5, 2, 4});
    const Tensor mem = batch_first ? randn({2, 3, 4}) : randn({3, 2, 4});
    const Tensor causal = generate_square_subsequent_mask(5);
    const Tensor expected = decoder.forward(tgt, mem, causal);
    testing::expect_close(decoder.forward(tgt, mem, {}, {}, {}, {}, /*tgt_is_causal=*/true),
                          expected, "tgt_is_causal");
    // With a mask, the flag is only a hint: the mask given is used.
    const Tensor none = zeros({5, 5});
    testing::expect_close(decoder.forward(tgt, mem, none, {}, {}, {}, true),
                          decoder.forward(tgt, mem), "hint");
  }
}

TEST(TransformerMasks, BatchFirstIsTheTransposeOfSequenceFirst) {
  manual_seed(4);
  Transformer seq({.d_model = 4,
                   .nhead = 2,
                   .num_encoder_layers = 1,
                   .num_decoder_layers = 1,
                   .dim_feedforward = 8,
                   .dropout = 0.0});
  Transformer batch({.d_model = 4,
                     .nhead = 2,
                     .num_encoder_layers = 1,
                     .num_decoder_layers = 1,
                     .dim_feedforward = 8,
                     .dropout = 0.0,
                     .batch_first = true});
  batch.load_state_dict(seq.state_dict());
  const Tensor src = randn({6, 2, 4}), tgt = randn({3, 2, 4});
  const Tensor kpm = from_vector(std::vector<int64_t>{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0},
                                 std::vector<int64_t>{2, 6})
                         .to(kBool);
  const Tensor mask = generate_square_subsequent_mask(3);
  const Tensor a = seq.forward(src, tgt, {}, mask, {}, kpm, {}, kpm);
  const Tensor b =
      batch.forward(src.transpose(0, 1), tgt.transpose(0, 1), {}, mask, {}, kpm, {}, kpm);
  kiln::testing::expect_close(b.transpose(0, 1), a, 1e-6);
}

// ---- errors ----

TEST(TransformerErrors, NameTheModuleAndTheShapes) {
  Transformer m({.d_model = 4,
                 .nhead = 2,
                 .num_encoder_layers = 1,
                 .num_decoder_layers = 1,
                 .dim_feedforward = 8});
  const std::string batch = kiln::testing::error_of_kind<ShapeError>([&] {
    m.forward(zeros({5, 2, 4}), zeros({3, 3, 4}));
  });
  EXPECT_NE(batch.find("Transformer: the batch number of src and tgt must be equal"),
            std::string::npos)
      << batch;
  EXPECT_NE(batch.find("[5, 2, 4]"), std::string::npos) << batch;
  const std::string features = kiln::testing::error_of_kind<ShapeError>([&] {
    m.forward(zeros({5, 2, 4}), zeros({3, 2, 6}));
  });
  EXPECT_NE(features.find("d_model (4)"), std::string::npos) << features;
  EXPECT_THROW(m.forward(zeros({5, 2, 4})), NotImplementedError);
  EXPECT_THROW(m.forward(Tensor(), zeros({3, 2, 4})), ValueError);

  const std::string layers = kiln::testing::error_of_kind<ValueError>(
      [] { TransformerEncoder(TransformerEncoderLayer(4, 2, kSmall), 0); });
  EXPECT_NE(layers.find("TransformerEncoder: num_layers must be positive"), std::string::npos);
  EXPECT_THROW(TransformerDecoder(TransformerDecoderLayer(4, 2, kSmall), -1), ValueError);
  EXPECT_THROW(Transformer({.d_model = 4, .nhead = 2, .num_decoder_layers = 0}), ValueError);
  const std::string activation = kiln::testing::error_of_kind<ValueError>(
      [] { TransformerDecoderLayer(4, 2, {.activation = "tanh"}); });
  EXPECT_NE(activation.find("TransformerDecoderLayer: activation"), std::string::npos);
  EXPECT_THROW(TransformerDecoderLayer(4, 3), ValueError);  // 4 not divisible by 3 heads

  TransformerDecoderLayer layer(4, 2, kSmall);
  EXPECT_THROW(layer.forward(zeros({3, 2, 4})), NotImplementedError);
  EXPECT_THROW(layer.forward(zeros({3, 2, 4}), zeros({5, 3, 4})), ShapeError);  // batch 2 vs 3
  EXPECT_THROW(layer.forward(zeros({3, 2, 4}), zeros({5, 2, 4}), zeros({3, 4})), ShapeError);
}

// ---- under kiln::compile ----

class CompiledTransformer : public ::testing::TestWithParam<const char*> {};

TEST_P(CompiledTransformer, ATrainingStepEqualsEager) {
  manual_seed(5);
  Transformer model({.d_model = 8,
                     .nhead = 2,
                     .num_encoder_layers = 1,
                     .num_decoder_layers = 1,
                     .dim_feedforward = 16,
                     .dropout = 0.0});
  model.to(kFloat64);
  auto loss_of = [](Module& m, const Tensor& src, const Tensor& tgt, const Tensor& mask) {
    const Tensor y = static_cast<Transformer&>(m).forward(src, tgt, {}, mask);
    return (y * y).sum();
  };
  auto compiled = compile(loss_of, {.backend = GetParam(), .fullgraph = true});
  for (int64_t length : {3, 1}) {
    SCOPED_TRACE(length);
    const TensorOptions f64 = TensorOptions().dtype(kFloat64);
    const Tensor src = randn({4, 2, 8}, f64), tgt = randn({length, 2, 8}, f64);
    const Tensor mask = generate_square_subsequent_mask(length, kFloat64);
    model.zero_grad();
    const Tensor eager = loss_of(model, src, tgt, mask);
    eager.backward();
    std::vector<Tensor> eager_grads;
    for (const Tensor& p : model.parameters()) eager_grads.push_back(p.grad().clone());
    model.zero_grad();
    const Tensor got = compiled(model, src, tgt, mask);
    got.backward();
    kiln::testing::expect_close(got, eager, 1e-10);
    const std::vector<Tensor> params = model.parameters();
    for (size_t k = 0; k < params.size(); ++k) {
      ASSERT_TRUE(params[k].grad().defined()) << k;
      kiln::testing::expect_close(params[k].grad(), eager_grads[k], 1e-10);
    }
  }
  EXPECT_EQ(compiled.stats().graph_breaks, 0);
  EXPECT_FALSE(compiled.stats().fell_back_to_eager);
}

INSTANTIATE_TEST_SUITE_P(Backends, CompiledTransformer, ::testing::Values("eager", "inductor"));

}  // namespace
}  // namespace kiln::nn
