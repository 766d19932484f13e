// nn::Module mechanics: registration, dotted names, walks, train/eval, to(dtype), zero_grad,
// state_dict/load_state_dict and printing.
#include <gtest/gtest.h>

#include <sstream>

#include "kiln/kiln.h"
#include "tests/nn/reference.h"

namespace kiln::nn {
namespace {

template <typename Pairs>
std::vector<std::string> names_of(const Pairs& pairs) {
  std::vector<std::string> names;
  for (const auto& [name, value] : pairs) names.push_back(name);
  return names;
}

std::vector<std::string> keys_of(const StateDict& dict) { return names_of(dict.tensors); }

template <typename F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A model with parameters, buffers and nested submodules, registered in a known order.
struct Net : Module {
  Net()
      : Module("Net"),
        scale(register_parameter("scale", ones({1}))),
        steps(register_buffer("steps", zeros({}, kInt64))) {
    fc = register_module("fc", std::make_shared<Linear>(4, 3));
    body = register_module(
        "body", std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
                    std::make_shared<BatchNorm1d>(3),
                    std::make_shared<ReLU>(),
                }));
  }
  Tensor forward(const Tensor& x) override { return body->forward(fc->forward(x)) * scale; }

  Tensor& scale;  // bound to the slots (Note [Parameter slots])
  Tensor& steps;
  std::shared_ptr<Linear> fc;
  std::shared_ptr<Sequential> body;
};

TEST(Module, NamedParametersBuffersAndModulesUseDottedNamesInRegistrationOrder) {
  Net net;
  EXPECT_EQ(
      names_of(net.named_parameters()),
      (std::vector<std::string>{"scale", "fc.weight", "fc.bias", "body.0.weight", "body.0.bias"}));
  EXPECT_EQ(names_of(net.named_parameters(/*recurse=*/false)), std::vector<std::string>{"scale"});
  EXPECT_EQ(names_of(net.named_buffers()),
            (std::vector<std::string>{"steps", "body.0.running_mean", "body.0.running_var",
                                      "body.0.num_batches_tracked"}));
  EXPECT_EQ(names_of(net.named_children()), (std::vector<std::string>{"fc", "body"}));
  EXPECT_EQ(names_of(net.named_modules()),
            (std::vector<std::string>{"", "fc", "body", "body.0", "body.1"}));
  EXPECT_EQ(net.modules().front(), &net);
  EXPECT_EQ(net.parameters().size(), 5u);
  EXPECT_EQ(net.buffers(false).size(), 1u);
  EXPECT_EQ(net.children().size(), 2u);
}

TEST(Module, StateDictKeysMatchPyTorchsForNestedContainers) {
  auto nested = std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
      std::make_shared<Linear>(4, 3), std::make_shared<ReLU>(),
      std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
          std::make_shared<Conv2d>(1, 2, 3, ConvOptions<2>{.bias = false}),
          std::make_shared<BatchNorm2d>(2)}),
      std::make_shared<Dropout>(0.25), std::make_shared<GELU>("tanh")});
  const auto& c = testing::reference_case("repr_nested");
  EXPECT_EQ(keys_of(nested->state_dict()), keys_of(testing::state_from_json(c.at("state"))));
  EXPECT_EQ(nested->repr(), c.at("repr").get<std::string>());
  std::ostringstream os;
  os << *nested;
  EXPECT_EQ(os.str(), nested->repr());

  ModuleList list{std::make_shared<LayerNorm>(std::vector<int64_t>{4}),
                  std::make_shared<Embedding>(10, 4),
                  std::make_shared<GroupNorm>(2, 4, 1e-5, /*affine=*/false)};
  EXPECT_EQ(list.repr(), testing::reference_case("repr_module_list").at("repr").get<std::string>());
}

TEST(Module, RegisterParameterKeepsTheLeafAndSetsRequiresGrad) {
  Module m("Custom");
  Tensor w = zeros({2, 2});
  Tensor& slot = m.register_parameter("w", w);
  EXPECT_TRUE(slot.is_same(w));
  EXPECT_TRUE(w.requires_grad());
  Tensor frozen = zeros({2});
  m.register_parameter("frozen", frozen, /*requires_grad=*/false);
  EXPECT_FALSE(frozen.requires_grad());
  EXPECT_EQ(m.parameters().size(), 2u);
}

TEST(Module, RegistrationRejectsBadNamesAndNonLeafParameters) {
  Module m("Custom");
  m.register_parameter("w", zeros({1}));
  EXPECT_THROW(m.register_parameter("w", zeros({1})), ValueError);
  EXPECT_THROW(m.register_buffer("w", zeros({1})), ValueError);
  EXPECT_THROW(m.register_module("w", std::make_shared<ReLU>()), ValueError);
  EXPECT_THROW(m.register_parameter("", zeros({1})), ValueError);
  EXPECT_THROW(m.register_parameter("a.b", zeros({1})), ValueError);
  EXPECT_THROW(m.register_module("null", std::shared_ptr<Module>()), ValueError);
  Tensor x = ones({2}).requires_grad_();
  Tensor y = x * 2.0;
  const std::string msg = error_message([&] { m.register_parameter("y", y); });
  EXPECT_NE(msg.find("leaf"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Custom"), std::string::npos) << msg;
  EXPECT_THROW(m.register_parameter("ints", zeros({2}, kInt64)), DTypeError);
}

TEST(Module, UndefinedParameterSlotsAreSkipped) {
  Linear fc(4, 3, /*bias=*/false);
  EXPECT_FALSE(fc.bias.defined());
  EXPECT_EQ(names_of(fc.named_parameters()), std::vector<std::string>{"weight"});
  EXPECT_EQ(keys_of(fc.state_dict()), std::vector<std::string>{"weight"});
  EXPECT_EQ(fc.repr(), "Linear(in_features=4, out_features=3, bias=False)");
}

TEST(Module, SharedParametersAndModulesAreListedOnce) {
  auto shared = std::make_shared<Linear>(2, 2);
  Sequential seq{shared, std::make_shared<ReLU>(), shared};
  EXPECT_EQ(seq.parameters().size(), 2u);
  EXPECT_EQ(names_of(seq.named_parameters()), (std::vector<std::string>{"0.weight", "0.bias"}));
  EXPECT_EQ(seq.modules().size(), 3u);  // seq, the Linear, the ReLU
  // state_dict keeps every name, as PyTorch's does.
  EXPECT_EQ(keys_of(seq.state_dict()),
            (std::vector<std::string>{"0.bias", "0.weight", "2.bias", "2.weight"}));
}

TEST(Module, NonPersistentBuffersStayOutOfTheStateDict) {
  Module m("Custom");
  m.register_buffer("cache", zeros({3}), /*persistent=*/false);
  m.register_buffer("count", zeros({}));
  EXPECT_EQ(names_of(m.named_buffers()), (std::vector<std::string>{"cache", "count"}));
  EXPECT_EQ(keys_of(m.state_dict()), std::vector<std::string>{"count"});
}

TEST(Module, TrainAndEvalReachEverySubmodule) {
  Net net;
  for (Module* m : net.modules()) EXPECT_TRUE(m->is_training()) << m->name();
  net.eval();
  for (Module* m : net.modules()) EXPECT_FALSE(m->is_training()) << m->name();
  net.train();
  EXPECT_TRUE(net.body->at<BatchNorm1d>(0)->is_training());
}

TEST(Module, ToFloat64ConvertsFloatingTensorsAndKeepsParametersTrainableLeaves) {
  Net net;
  const Tensor w32 = net.fc->weight.detach();
  net.fc->weight.mutable_grad() = ones({3, 4});
  net.to(kFloat64);
  for (const auto& [name, p] : net.named_parameters()) {
    EXPECT_EQ(p.dtype(), kFloat64) << name;
    EXPECT_TRUE(p.is_leaf()) << name;
    EXPECT_TRUE(p.requires_grad()) << name;
  }
  EXPECT_EQ(net.steps.dtype(), kInt64);
  EXPECT_EQ(net.scale.dtype(), kFloat64);
  auto bn = net.body->at<BatchNorm1d>(0);
  EXPECT_EQ(bn->running_mean.dtype(), kFloat64);
  EXPECT_EQ(bn->num_batches_tracked.dtype(), kInt64);
  // The member reference follows the slot (Note [Parameter slots]); values and grad carried over.
  EXPECT_EQ(net.fc->weight.dtype(), kFloat64);
  EXPECT_EQ(net.fc->weight.to_vector<double>(), w32.to(kFloat64).to_vector<double>());
  ASSERT_TRUE(net.fc->weight.grad().defined());
  EXPECT_EQ(net.fc->weight.grad().dtype(), kFloat64);
  EXPECT_EQ(net.fc->weight.grad().to_vector<double>(), std::vector<double>(12, 1.0));
  EXPECT_TRUE(net.named_parameters()[1].second.is_same(net.fc->weight));
  // Converting to the dtype it already has keeps every tensor.
  const Tensor w64 = net.fc->weight;
  net.to(kFloat64);
  EXPECT_TRUE(net.fc->weight.is_same(w64));
  EXPECT_THROW(net.to(kInt64), DTypeError);
}

TEST(Module, ZeroGradClearsOrZeroesGradients) {
  Linear fc(2, 2);
  fc.weight.mutable_grad() = ones({2, 2});
  fc.bias.mutable_grad() = ones({2});
  fc.zero_grad(/*set_to_none=*/false);
  EXPECT_EQ(fc.weight.grad().to_vector<double>(), std::vector<double>(4, 0.0));
  fc.zero_grad();
  EXPECT_FALSE(fc.weight.grad().defined());
  EXPECT_FALSE(fc.bias.grad().defined());
}

TEST(Module, StateDictSharesStorageAndIsDetached) {
  Linear fc(3, 2);
  const StateDict dict = fc.state_dict();
  const Tensor& w = dict.tensors.at("weight");
  EXPECT_TRUE(w.is_alias_of(fc.weight));
  EXPECT_FALSE(w.requires_grad());
}

TEST(Module, StateDictRoundTripRestoresParametersAndBuffersInPlace) {
  manual_seed(1);
  Net a;
  {
    NoGradGuard no_grad;
    a.train();
    a.forward(randn({5, 4}));  // moves BatchNorm's running statistics and counter
  }
  manual_seed(2);
  Net b;
  const Tensor b_weight = b.fc->weight;
  const uint32_t version = b_weight.version();
  const LoadStateDictResult result = b.load_state_dict(a.state_dict());
  EXPECT_TRUE(result.missing_keys.empty());
  EXPECT_TRUE(result.unexpected_keys.empty());
  for (const auto& [key, t] : a.state_dict().tensors)
    EXPECT_EQ(b.state_dict().tensors.at(key).to_vector<double>(), t.to_vector<double>()) << key;
  EXPECT_EQ(b.body->at<BatchNorm1d>(0)->num_batches_tracked.item<int64_t>(), 1);
  // Copied into the existing tensors: same tensor, new version.
  EXPECT_TRUE(b.fc->weight.is_same(b_weight));
  EXPECT_GT(b_weight.version(), version);
  EXPECT_TRUE(b.fc->weight.requires_grad());
  a.eval();
  b.eval();
  NoGradGuard no_grad;
  const Tensor x = randn({2, 4});
  EXPECT_EQ(a.forward(x).to_vector<double>(), b.forward(x).to_vector<double>());
}

TEST(Module, LoadStateDictConvertsDtypes) {
  Linear fc(2, 2);
  StateDict dict = fc.state_dict();
  dict.tensors["weight"] = full({2, 2}, 0.5, kFloat64);
  fc.load_state_dict(dict);
  EXPECT_EQ(fc.weight.dtype(), kFloat32);
  EXPECT_EQ(fc.weight.to_vector<double>(), std::vector<double>(4, 0.5));
}

TEST(Module, LoadStateDictStrictRejectsMissingAndUnexpectedKeys) {
  Linear fc(2, 2);
  StateDict dict = fc.state_dict();
  dict.tensors.erase("bias");
  dict.tensors["extra"] = zeros({1});
  std::string msg;
  try {
    fc.load_state_dict(dict);
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("Missing key(s) in state_dict: \"bias\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("Unexpected key(s) in state_dict: \"extra\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("Linear"), std::string::npos) << msg;
}

TEST(Module, LoadStateDictNonStrictLoadsWhatMatchesAndReportsTheRest) {
  Linear fc(2, 2);
  StateDict dict;
  dict.tensors["weight"] = full({2, 2}, 3.0);
  dict.tensors["extra"] = zeros({1});
  const Tensor bias_before = fc.bias.detach().clone();
  const LoadStateDictResult r = fc.load_state_dict(dict, /*strict=*/false);
  EXPECT_EQ(r.missing_keys, std::vector<std::string>{"bias"});
  EXPECT_EQ(r.unexpected_keys, std::vector<std::string>{"extra"});
  EXPECT_EQ(fc.weight.to_vector<double>(), std::vector<double>(4, 3.0));
  EXPECT_EQ(fc.bias.to_vector<double>(), bias_before.to_vector<double>());
}

TEST(Module, LoadStateDictShapeMismatchNamesKeyAndShapesAndCopiesNothing) {
  Net net;
  StateDict dict = net.state_dict();
  for (auto& [key, t] : dict.tensors) t = t.clone();  // not aliases of the module
  dict.tensors["scale"] = full({1}, 7.0);
  dict.tensors["fc.weight"] = zeros({3, 5});
  const std::vector<double> scale_before = net.scale.to_vector<double>();
  std::string msg;
  try {
    net.load_state_dict(dict, /*strict=*/false);
    ADD_FAILURE() << "no error";
  } catch (const ShapeError& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("fc.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 5]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 4]"), std::string::npos) << msg;
  EXPECT_EQ(net.scale.to_vector<double>(), scale_before);  // nothing was copied
}

TEST(Module, DefaultForwardNamesTheModule) {
  ModuleList list{std::make_shared<ReLU>()};
  const std::string msg = error_message([&] { list.forward(zeros({2})); });
  EXPECT_NE(msg.find("ModuleList"), std::string::npos) << msg;
  EXPECT_THROW(list.forward(zeros({2})), NotImplementedError);
  MSELoss loss;
  EXPECT_THROW(loss.forward(zeros({2})), NotImplementedError);
}

TEST(Sequential, RunsModulesInOrderAndIndexes) {
  manual_seed(3);
  auto fc1 = std::make_shared<Linear>(3, 4);
  auto fc2 = std::make_shared<Linear>(4, 2);
  Sequential seq{fc1, std::make_shared<ReLU>()};
  seq.push_back(fc2);
  EXPECT_EQ(seq.size(), 3u);
  EXPECT_EQ(names_of(seq.named_children()), (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(seq[-1], fc2);
  EXPECT_EQ(seq.at<Linear>(0), fc1);
  EXPECT_THROW(seq.at<Linear>(1), ValueError);
  EXPECT_THROW(seq[3], IndexError);
  EXPECT_THROW(seq[-4], IndexError);
  NoGradGuard no_grad;
  const Tensor x = randn({2, 3});
  const Tensor expected = fc2->forward(relu(fc1->forward(x)));
  EXPECT_EQ(seq.forward(x).to_vector<double>(), expected.to_vector<double>());
  EXPECT_EQ(seq(x).to_vector<double>(), expected.to_vector<double>());
  size_t count = 0;
  for (const auto& m : seq) count += m != nullptr;
  EXPECT_EQ(count, 3u);
}

}  // namespace
}  // namespace kiln::nn
