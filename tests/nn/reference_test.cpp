// Forward values and gradients of the modules and losses against PyTorch (tests/data/gen_nn.py):
// each test builds the module PyTorch built, loads PyTorch's weights with load_state_dict, runs
// the same input and compares the output (and, where Kiln prints the same, the repr), then the
// gradients of 0.5 * sum(output^2) (of the loss itself for losses) with respect to every
// parameter and input.
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "tests/nn/reference.h"

namespace kiln::nn {
namespace {

using testing::expect_close;
using testing::input;
using testing::load_case_state;
using testing::output;
using testing::reference_case;
using testing::state_from_json;

// Loads the case's weights into m, runs forward on input "x" and compares with output "y".
void check_forward(Module& m, const std::string& name, bool compare_repr = true) {
  SCOPED_TRACE(name);
  const auto& c = reference_case(name);
  load_case_state(m, c);
  if (compare_repr) {
    EXPECT_EQ(m.repr(), c.at("repr").get<std::string>());
  }
  const auto inputs = testing::case_inputs(c);
  const Tensor y = m.forward(inputs.at("x"));
  expect_close(y.detach(), output(c, "y"), name);
  testing::expect_gradients(c, &m, y, inputs);
}

TEST(Reference, Linear) {
  Linear a(4, 3);
  check_forward(a, "linear");
  Linear b(4, 3, /*bias=*/false);
  check_forward(b, "linear_no_bias_3d");
}

TEST(Reference, Conv1d) {
  Conv1d a(2, 4, 3, {.stride = 2, .padding = 1});
  check_forward(a, "conv1d_stride_pad");
  Conv1d b(2, 4, 3, {.padding = "same", .dilation = 2, .bias = false});
  check_forward(b, "conv1d_same_dilated");
  Conv1d c(4, 4, 2, {.padding = "same", .groups = 2, .padding_mode = "circular"});
  check_forward(c, "conv1d_same_circular_groups");
}

TEST(Reference, Conv2d) {
  Conv2d a(2, 4, {3, 2}, {.stride = {2, 1}, .padding = {1, 0}, .groups = 2});
  check_forward(a, "conv2d_groups");
  Conv2d b(2, 3, 3, {.padding = "same", .dilation = 2});
  check_forward(b, "conv2d_same_dilated");
  Conv2d c(2, 3, 3, {.padding = 1, .padding_mode = "reflect"});
  check_forward(c, "conv2d_reflect");
  Conv2d d(1, 2, 3, {.padding = {1, 2}, .padding_mode = "replicate"});
  check_forward(d, "conv2d_replicate");
  Conv2d e(2, 3, 2, {.stride = 2, .padding = "valid", .bias = false});
  check_forward(e, "conv2d_valid_unbatched");
}

// Two training steps (outputs and updated running statistics), then one step in eval mode.
void check_batch_norm(BatchNormBase& m, const std::string& name) {
  SCOPED_TRACE(name);
  const auto& c = reference_case(name);
  load_case_state(m, c);
  EXPECT_EQ(m.repr(), c.at("repr").get<std::string>());
  m.train();
  const auto inputs = testing::case_inputs(c);
  const Tensor y1 = m.forward(inputs.at("x1"));
  expect_close(y1.detach(), output(c, "y1"), "y1");
  testing::expect_gradients(c, &m, y1, inputs);
  expect_close(m.forward(input(c, "x2")), output(c, "y2"), "y2");
  const StateDict after = m.state_dict();
  const StateDict expected = state_from_json(c.at("state_after_train"));
  ASSERT_EQ(after.tensors.size(), expected.tensors.size());
  for (const auto& [key, value] : expected.tensors) {
    ASSERT_TRUE(after.tensors.contains(key)) << key;
    EXPECT_EQ(after.tensors.at(key).dtype(), value.dtype()) << key;
    expect_close(after.tensors.at(key), value, key);
  }
  m.eval();
  expect_close(m.forward(input(c, "x3")), output(c, "y3"), "y3");
}

TEST(Reference, BatchNormTrainingUpdatesRunningStatsAndEvalUsesThem) {
  BatchNorm1d a(3);
  check_batch_norm(a, "batchnorm1d");
  BatchNorm1d b(3, {.momentum = std::nullopt});
  check_batch_norm(b, "batchnorm1d_cumulative");
  BatchNorm2d c(2, {.eps = 1e-3, .momentum = 0.3});
  check_batch_norm(c, "batchnorm2d");
  BatchNorm2d d(2, {.affine = false, .track_running_stats = false});
  check_batch_norm(d, "batchnorm2d_no_stats");
}

TEST(Reference, LayerNormGroupNormEmbedding) {
  LayerNorm a({3, 4});
  check_forward(a, "layernorm");
  LayerNorm b({4}, 1e-3, /*elementwise_affine=*/false);
  check_forward(b, "layernorm_no_affine");
  GroupNorm c(2, 4);
  check_forward(c, "groupnorm");
  Embedding d(5, 3, /*padding_idx=*/1);
  check_forward(d, "embedding");
  Embedding e(4, 2, /*padding_idx=*/-1);
  check_forward(e, "embedding_negative_padding_idx");
}

TEST(Reference, Activations) {
  ReLU relu_m;
  check_forward(relu_m, "act_relu");
  GELU gelu_m;
  check_forward(gelu_m, "act_gelu");
  GELU gelu_tanh("tanh");
  check_forward(gelu_tanh, "act_gelu_tanh");
  SiLU silu_m;
  check_forward(silu_m, "act_silu");
  Sigmoid sigmoid_m;
  check_forward(sigmoid_m, "act_sigmoid");
  Tanh tanh_m;
  check_forward(tanh_m, "act_tanh");
  // PyTorch prints Softplus's integer arguments as integers; Kiln's are doubles.
  Softplus softplus_m(2.0, 1.0);
  check_forward(softplus_m, "act_softplus", /*compare_repr=*/false);
  LeakyReLU leaky(0.2);
  check_forward(leaky, "act_leaky_relu");
  ELU elu_m(1.5);
  check_forward(elu_m, "act_elu");
  Softmax softmax_m(1);
  check_forward(softmax_m, "act_softmax");
  LogSoftmax log_softmax_m(0);
  check_forward(log_softmax_m, "act_log_softmax");
}

TEST(Reference, PoolingAndFlatten) {
  // PyTorch prints pooling sizes as given (2 or (2, 2)); Kiln always prints tuples.
  MaxPool2d a(2);
  check_forward(a, "maxpool2d", false);
  MaxPool2d b(3, {.stride = 2, .padding = 1, .dilation = 1, .ceil_mode = true});
  check_forward(b, "maxpool2d_options", false);
  AvgPool2d c(3, {.stride = 2, .padding = 1, .ceil_mode = true, .count_include_pad = false});
  check_forward(c, "avgpool2d_options", false);
  AvgPool2d d(2, {.divisor_override = 3});
  check_forward(d, "avgpool2d_divisor", false);
  AdaptiveAvgPool2d e({2, 3});
  check_forward(e, "adaptive_avgpool2d", false);
  Flatten f;
  check_forward(f, "flatten");
}

// ---- attention ----

Tensor optional_input(const testing::Json& c, const std::string& name) {
  return c.at("inputs").contains(name) ? input(c, name) : Tensor();
}

void check_attention(MultiheadAttention& m, const std::string& name,
                     bool average_attn_weights = true) {
  SCOPED_TRACE(name);
  const auto& c = reference_case(name);
  load_case_state(m, c);
  const auto in = testing::case_inputs(c);
  auto [out, weights] =
      m.forward(in.at("q"), in.at("k"), in.at("v"), optional_input(c, "key_padding_mask"),
                /*need_weights=*/true, optional_input(c, "attn_mask"), average_attn_weights);
  expect_close(out.detach(), output(c, "out"), "attn_output");
  expect_close(weights.detach(), output(c, "weights"), "attn_weights");
  testing::expect_gradients(c, &m, out, in);
  // Without weights the output and its gradients are the same (computed by
  // scaled_dot_product_attention).
  auto [out_only, no_weights] =
      m.forward(in.at("q"), in.at("k"), in.at("v"), optional_input(c, "key_padding_mask"),
                /*need_weights=*/false, optional_input(c, "attn_mask"));
  expect_close(out_only.detach(), output(c, "out"), "attn_output without weights");
  EXPECT_FALSE(no_weights.defined());
  testing::expect_gradients(c, &m, out_only, in);
}

TEST(Reference, MultiheadAttention) {
  MultiheadAttention a(4, 2);
  check_attention(a, "mha_seq_first_masks");
  MultiheadAttention b(4, 2, {.batch_first = true});
  check_attention(b, "mha_batch_first_bool_mask_per_head", /*average_attn_weights=*/false);
  MultiheadAttention c(4, 4, {.bias = false});
  check_attention(c, "mha_unbatched_self_no_bias");
  MultiheadAttention d(4, 2);
  check_attention(d, "mha_3d_float_mask");
  check_attention(d, "mha_float_padding");
}

TEST(Reference, MultiheadAttentionSingleInputForwardIsSelfAttention) {
  MultiheadAttention m(4, 4, {.bias = false});
  const auto& c = reference_case("mha_unbatched_self_no_bias");
  load_case_state(m, c);
  expect_close(m.forward(input(c, "q")), output(c, "out"), "forward(x)");
}

TEST(Reference, TransformerEncoderLayer) {
  {
    TransformerEncoderLayer m(4, 2, {.dim_feedforward = 8, .dropout = 0.0});
    const auto& c = reference_case("encoder_post_norm_relu");
    load_case_state(m, c);
    const auto in = testing::case_inputs(c);
    const Tensor y = m.forward(in.at("x"), {}, in.at("src_key_padding_mask"));
    expect_close(y.detach(), output(c, "y"), "post-norm relu");
    testing::expect_gradients(c, &m, y, in);
  }
  {
    TransformerEncoderLayer m(4, 2,
                              {.dim_feedforward = 8,
                               .dropout = 0.0,
                               .activation = "gelu",
                               .layer_norm_eps = 1e-4,
                               .batch_first = true,
                               .norm_first = true});
    const auto& c = reference_case("encoder_pre_norm_gelu_batch_first");
    load_case_state(m, c);
    const auto in = testing::case_inputs(c);
    const Tensor y = m.forward(in.at("x"), in.at("src_mask"));
    expect_close(y.detach(), output(c, "y"), "pre-norm gelu batch-first causal");
    testing::expect_gradients(c, &m, y, in);
  }
}

// ---- losses ----

// Runs make(reduction) on the case's input and target for each reduction the case lists.
template <typename Make>
void check_loss(const std::string& name, Make make) {
  SCOPED_TRACE(name);
  const auto& c = reference_case(name);
  const StateDict state = state_from_json(c.at("state"));
  auto state_tensor = [&](const std::string& key) {
    auto it = state.tensors.find(key);
    return it == state.tensors.end() ? Tensor() : it->second;
  };
  for (const auto& [reduction, expected] : c.at("outputs").items()) {
    std::shared_ptr<Loss> loss = make(reduction, state_tensor);
    EXPECT_EQ(loss->repr(), c.at("repr").get<std::string>());
    EXPECT_EQ(loss->state_dict().tensors.size(), state.tensors.size());
    expect_close(loss->forward(input(c, "input"), input(c, "target")),
                 testing::tensor_from_json(expected), name + " " + reduction);
  }
  // The gradient of the averaged loss with respect to its input.
  if (!c.contains("grads")) return;
  const auto in = testing::case_inputs(c);
  std::shared_ptr<Loss> loss = make(c.at("grad_reduction").get<std::string>(), state_tensor);
  testing::expect_gradients(c, nullptr, loss->forward(in.at("input"), in.at("target")), in,
                            /*scalar=*/true);
}

using StateTensor = std::function<Tensor(const std::string&)>;

TEST(Reference, CrossEntropyAndNLL) {
  check_loss("cross_entropy", [](const std::string& r, const StateTensor&) {
    return std::make_shared<CrossEntropyLoss>(CrossEntropyLossOptions{.reduction = r});
  });
  check_loss(
      "cross_entropy_weight_ignore_smoothing", [](const std::string& r, const StateTensor& s) {
        return std::make_shared<CrossEntropyLoss>(CrossEntropyLossOptions{
            .weight = s("weight"), .ignore_index = 1, .reduction = r, .label_smoothing = 0.1});
      });
  check_loss("cross_entropy_probabilities", [](const std::string& r, const StateTensor&) {
    return std::make_shared<CrossEntropyLoss>(CrossEntropyLossOptions{.reduction = r});
  });
  check_loss("cross_entropy_spatial", [](const std::string& r, const StateTensor&) {
    return std::make_shared<CrossEntropyLoss>(CrossEntropyLossOptions{.reduction = r});
  });
  check_loss("nll", [](const std::string& r, const StateTensor& s) {
    return std::make_shared<NLLLoss>(
        NLLLossOptions{.weight = s("weight"), .ignore_index = 1, .reduction = r});
  });
}

TEST(Reference, RegressionLosses) {
  check_loss("mse",
             [](const std::string& r, const StateTensor&) { return std::make_shared<MSELoss>(r); });
  check_loss("l1",
             [](const std::string& r, const StateTensor&) { return std::make_shared<L1Loss>(r); });
  check_loss("smooth_l1", [](const std::string& r, const StateTensor&) {
    return std::make_shared<SmoothL1Loss>(r, 0.5);
  });
  check_loss("huber", [](const std::string& r, const StateTensor&) {
    return std::make_shared<HuberLoss>(r, 0.7);
  });
  check_loss("l1_broadcast_target",
             [](const std::string& r, const StateTensor&) { return std::make_shared<L1Loss>(r); });
}

TEST(Reference, BinaryAndKLLosses) {
  check_loss("bce_clamped_log", [](const std::string& r, const StateTensor& s) {
    return std::make_shared<BCELoss>(BCELossOptions{.weight = s("weight"), .reduction = r});
  });
  check_loss("bce_interior", [](const std::string& r, const StateTensor& s) {
    return std::make_shared<BCELoss>(BCELossOptions{.weight = s("weight"), .reduction = r});
  });
  check_loss("bce_with_logits_pos_weight", [](const std::string& r, const StateTensor& s) {
    return std::make_shared<BCEWithLogitsLoss>(BCEWithLogitsLossOptions{
        .weight = s("weight"), .pos_weight = s("pos_weight"), .reduction = r});
  });
  check_loss("kl_div", [](const std::string& r, const StateTensor&) {
    return std::make_shared<KLDivLoss>(r);
  });
  check_loss("kl_div_log_target", [](const std::string& r, const StateTensor&) {
    return std::make_shared<KLDivLoss>(r, /*log_target=*/true);
  });
}

// ---- a whole model ----

std::shared_ptr<Sequential> small_cnn() {
  return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
      std::make_shared<Conv2d>(1, 2, 3, ConvOptions<2>{.padding = 1}),
      std::make_shared<BatchNorm2d>(2), std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2),
      std::make_shared<Flatten>(), std::make_shared<Linear>(8, 3)});
}

TEST(Reference, SequentialHasPyTorchsStateDictKeysAndOutput) {
  auto net = small_cnn();
  const auto& c = reference_case("sequential_cnn");
  std::vector<std::string> keys;
  for (const auto& [key, t] : net->state_dict().tensors) keys.push_back(key);
  std::vector<std::string> expected_keys = c.at("state_keys").get<std::vector<std::string>>();
  std::sort(expected_keys.begin(), expected_keys.end());
  EXPECT_EQ(keys, expected_keys);  // StateDict is ordered by key
  std::vector<std::string> names;
  for (const auto& [name, p] : net->named_parameters()) names.push_back(name);
  EXPECT_EQ(names, c.at("parameter_names").get<std::vector<std::string>>());  // same order
  net->eval();
  check_forward(*net, "sequential_cnn", /*compare_repr=*/false);
}

}  // namespace
}  // namespace kiln::nn
