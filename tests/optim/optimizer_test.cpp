// Optimizer behaviour beyond the update rules (those are checked against PyTorch in
// optimizer_reference_test.cpp): options and param groups, lazily created state, skipped
// parameters, in-place updates without autograd, tensor learning rates, zero_grad,
// state_dict round trips, and the errors for bad hyperparameters and mismatched state.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "kiln/kiln.h"

namespace kiln::optim {
namespace {

Tensor vec(std::initializer_list<double> v) { return tensor(v, kFloat64); }

Tensor param(std::initializer_list<double> v) { return vec(v).requires_grad_(); }

template <typename Fn>
void expect_error_mentioning(Fn&& fn, const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "expected an error mentioning '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

std::vector<std::string> state_names(const Optimizer& opt, const Tensor& p) {
  std::vector<std::string> names;
  if (const auto* state = opt.find_state(p))
    for (const auto& [name, t] : *state) names.push_back(name);
  return names;
}

using Names = std::vector<std::string>;

// ---- options and groups ----

TEST(OptimizerOptions, AreStoredUnderPyTorchNames) {
  Tensor w = param({1, 2});
  SGD sgd({w}, {.lr = 0.1, .momentum = 0.9, .nesterov = true});
  const ParamGroup& g = sgd.param_groups().at(0);
  EXPECT_EQ(g.lr, 0.1);
  EXPECT_EQ(g.option("momentum"), 0.9);
  EXPECT_EQ(g.option("dampening"), 0);
  EXPECT_EQ(g.option("weight_decay"), 0);
  EXPECT_EQ(g.option("nesterov"), 1);
  EXPECT_EQ(g.option("maximize"), 0);

  Adam adam({param({1})}, {.betas = {0.8, 0.95}, .amsgrad = true});
  const ParamGroup& a = adam.param_groups().at(0);
  EXPECT_EQ(a.lr, 1e-3);
  EXPECT_EQ(a.option("beta1"), 0.8);
  EXPECT_EQ(a.option("beta2"), 0.95);
  EXPECT_EQ(a.option("eps"), 1e-8);
  EXPECT_EQ(a.option("amsgrad"), 1);
  EXPECT_EQ(AdamW({param({1})}).param_groups()[0].option("weight_decay"), 1e-2);
  EXPECT_EQ(RMSprop({param({1})}).param_groups()[0].option("alpha"), 0.99);
  EXPECT_EQ(RMSprop({param({1})}).param_groups()[0].lr, 1e-2);
  EXPECT_EQ(Adagrad({param({1})}).param_groups()[0].option("eps"), 1e-10);
  EXPECT_THROW(g.option("betas"), ValueError);
}

TEST(OptimizerOptions, GroupOptionsReadBackTheMap) {
  Tensor w = param({1});
  Adam adam({w}, {.lr = 0.01});
  ParamGroup& g = adam.param_groups()[0];
  g.options["beta1"] = 0.5;  // what a momentum-cycling LR scheduler does
  AdamOptions o = Adam::group_options(g);
  EXPECT_EQ(o.betas.first, 0.5);
  EXPECT_EQ(o.betas.second, 0.999);
  EXPECT_EQ(o.lr, 0.01);
}

TEST(ParamGroups, TakeTheOptimizerDefaultsUnlessTheyOverrideThem) {
  Tensor w = param({1, 2}), b = param({3});
  SGD opt({ParamGroup{.params = {w}},
           ParamGroup{.params = {b}, .lr = 0.5, .options = {{"momentum", 0.1}}}},
          {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01});
  ASSERT_EQ(opt.param_groups().size(), 2u);
  EXPECT_EQ(opt.lr(0), 0.1);
  EXPECT_EQ(opt.param_groups()[0].option("momentum"), 0.9);
  EXPECT_EQ(opt.lr(1), 0.5);
  EXPECT_EQ(opt.param_groups()[1].option("momentum"), 0.1);
  EXPECT_EQ(opt.param_groups()[1].option("weight_decay"), 0.01);

  opt.add_param_group({.params = {param({4})}});
  EXPECT_EQ(opt.lr(2), 0.1);
  EXPECT_EQ(opt.param_groups()[2].option("momentum"), 0.9);
}

TEST(ParamGroups, EachGroupStepsWithItsOwnLearningRate) {
  Tensor w = param({1}), b = param({1});
  SGD opt({ParamGroup{.params = {w}}, ParamGroup{.params = {b}, .lr = 0.5}}, {.lr = 0.1});
  w.mutable_grad() = vec({1});
  b.mutable_grad() = vec({1});
  opt.step();
  EXPECT_DOUBLE_EQ(w.item<double>(), 0.9);
  EXPECT_DOUBLE_EQ(b.item<double>(), 0.5);
}

TEST(ParamGroups, RejectEmptyRepeatedNonLeafAndIntegerParameters) {
  Tensor w = param({1});
  expect_error_mentioning([] { SGD opt(std::vector<Tensor>{}); }, "empty");
  expect_error_mentioning([&] { SGD opt({w, w}); }, "more than once");
  expect_error_mentioning(
      [&] {
        SGD opt({ParamGroup{.params = {w}}, ParamGroup{.params = {w}}});
      },
      "more than once");
  expect_error_mentioning([&] { SGD opt({w * 2.0}); }, "non-leaf");
  EXPECT_THROW(SGD({tensor({1, 2})}), DTypeError);
}

// ---- hyperparameter checks ----

TEST(OptimizerOptions, InvalidHyperparametersNameTheOption) {
  auto w = [] { return std::vector<Tensor>{param({1})}; };
  expect_error_mentioning([&] { SGD(w(), {.lr = -0.1}); }, "learning rate -0.1");
  expect_error_mentioning([&] { SGD(w(), {.momentum = -0.5}); }, "momentum -0.5");
  expect_error_mentioning([&] { SGD(w(), {.weight_decay = -1}); }, "weight_decay -1");
  expect_error_mentioning([&] { SGD(w(), {.nesterov = true}); }, "nesterov");
  expect_error_mentioning([&] { SGD(w(), {.momentum = 0.9, .dampening = 0.1, .nesterov = true}); },
                          "dampening 0.1");
  expect_error_mentioning([&] { Adam(w(), {.lr = -1}); }, "learning rate");
  expect_error_mentioning([&] { Adam(w(), {.betas = {1.0, 0.999}}); }, "beta1 1 ");
  expect_error_mentioning([&] { Adam(w(), {.betas = {0.9, -0.1}}); }, "beta2 -0.1");
  expect_error_mentioning([&] { Adam(w(), {.eps = -1e-8}); }, "eps -1e-08");
  expect_error_mentioning([&] { Adam(w(), {.weight_decay = -0.1}); }, "weight_decay");
  expect_error_mentioning([&] { AdamW(w(), {.betas = {0.9, 1.5}}); }, "beta2 1.5");
  expect_error_mentioning([&] { AdamW(w(), {.weight_decay = -0.1}); }, "weight_decay");
  expect_error_mentioning([&] { AdamW(w(), {.eps = -1}); }, "eps");
  expect_error_mentioning([&] { RMSprop(w(), {.alpha = -0.5}); }, "alpha -0.5");
  expect_error_mentioning([&] { RMSprop(w(), {.momentum = -0.5}); }, "momentum");
  expect_error_mentioning([&] { RMSprop(w(), {.eps = -1}); }, "eps");
  expect_error_mentioning([&] { RMSprop(w(), {.weight_decay = -1}); }, "weight_decay");
  expect_error_mentioning([&] { Adagrad(w(), {.lr_decay = -0.1}); }, "lr_decay");
  expect_error_mentioning([&] { Adagrad(w(), {.initial_accumulator_value = -1}); },
                          "initial_accumulator_value");
  expect_error_mentioning([&] { Adagrad(w(), {.eps = -1}); }, "eps");
  expect_error_mentioning([&] { Adagrad(w(), {.weight_decay = -1}); }, "weight_decay");
  EXPECT_THROW(Adam(w(), {.betas = {-0.1, 0.9}}), ValueError);
}

TEST(OptimizerOptions, InvalidGroupOverridesNameTheGroup) {
  expect_error_mentioning(
      [] {
        Adam opt({ParamGroup{.params = {param({1})}},
                  ParamGroup{.params = {param({1})}, .options = {{"beta1", 1.5}}}});
      },
      "beta1 1.5 in parameter group 1");
  expect_error_mentioning(
      [] { SGD opt({ParamGroup{.params = {param({1})}, .lr = -2}}, {.lr = 0.1}); },
      "learning rate -2 in parameter group 0");
}

TEST(OptimizerOptions, AnInvalidAddedGroupIsNotAdded) {
  SGD opt({param({1})}, {.lr = 0.1});
  expect_error_mentioning(
      [&] {
        opt.add_param_group({.params = {param({1})}, .options = {{"momentum", -1}}});
      },
      "momentum -1 in parameter group 1");
  EXPECT_EQ(opt.param_groups().size(), 1u);
  expect_error_mentioning([&] { opt.add_param_group({.params = {}}); }, "empty");
  EXPECT_EQ(opt.param_groups().size(), 1u);
}

// ---- the step ----

TEST(OptimizerStep, SkipsParametersWithoutAGradient) {
  Tensor w = param({1, 2}), b = param({3});
  Adam opt({w, b}, {.lr = 0.1});
  w.mutable_grad() = vec({0.5, -0.5});
  opt.step();
  EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{3}));
  EXPECT_EQ(opt.find_state(b), nullptr);
  EXPECT_NE(opt.find_state(w), nullptr);
  EXPECT_NE(w.to_vector<double>(), (std::vector<double>{1, 2}));
}

TEST(OptimizerStep, CreatesStateLazilyUnderPyTorchNames) {
  Tensor a = param({1}), b = param({1}), c = param({1}), d = param({1}), e = param({1});
  SGD plain({a}, {.lr = 0.1});
  SGD momentum({b}, {.lr = 0.1, .momentum = 0.9});
  Adam adam({c}, {.amsgrad = true});
  RMSprop rmsprop({d}, {.momentum = 0.5, .centered = true});
  Adagrad adagrad({e});
  // Adagrad, as PyTorch's, creates its state up front.
  EXPECT_EQ(state_names(adagrad, e), (Names{"step", "sum"}));
  EXPECT_TRUE(state_names(adam, c).empty());
  for (const Tensor& p : {a, b, c, d, e}) p.mutable_grad() = vec({1});
  for (Optimizer* opt :
       std::initializer_list<Optimizer*>{&plain, &momentum, &adam, &rmsprop, &adagrad})
    opt->step();
  EXPECT_TRUE(state_names(plain, a).empty());
  EXPECT_EQ(state_names(momentum, b), (Names{"momentum_buffer"}));
  EXPECT_EQ(state_names(adam, c), (Names{"exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"}));
  EXPECT_EQ(state_names(rmsprop, d), (Names{"grad_avg", "momentum_buffer", "square_avg", "step"}));
  EXPECT_EQ(adam.find_state(c)->at("step").item<double>(), 1);
  EXPECT_EQ(adam.find_state(c)->at("step").dim(), 0);
}

TEST(OptimizerStep, UpdatesInPlaceWithoutRecordingAutograd) {
  Tensor w = param({1, 2, 3});
  const void* data = w.data_ptr();
  const uint32_t version = w.version();
  Adam opt({w}, {.lr = 0.1});
  w.mutable_grad() = vec({1, 1, 1});
  opt.step();
  EXPECT_EQ(w.data_ptr(), data);
  EXPECT_GT(w.version(), version);
  EXPECT_TRUE(w.is_leaf());
  EXPECT_TRUE(w.requires_grad());
  EXPECT_EQ(w.grad_fn(), nullptr);
  for (const auto& [name, t] : *opt.find_state(w)) EXPECT_FALSE(t.requires_grad()) << name;
  // The parameter still trains: a new graph through it reaches its grad.
  w.mutable_grad() = Tensor();
  (w * 2.0).sum().backward();
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{2, 2, 2}));
}

TEST(OptimizerStep, StateKeepsTheParameterDtype) {
  Tensor w = tensor({1.0, -2.0}, kFloat32).requires_grad_();
  Tensor w64 = vec({1.0, -2.0}).requires_grad_();
  Adam opt({w}, {.lr = 0.1, .amsgrad = true});
  Adam opt64({w64}, {.lr = 0.1, .amsgrad = true});
  for (int i = 0; i < 3; ++i) {
    w.mutable_grad() = tensor({0.3, -0.7}, kFloat32);
    w64.mutable_grad() = vec({0.3, -0.7});
    opt.step();
    opt64.step();
  }
  EXPECT_EQ(w.dtype(), kFloat32);
  EXPECT_EQ(opt.find_state(w)->at("exp_avg").dtype(), kFloat32);
  EXPECT_EQ(opt.find_state(w)->at("max_exp_avg_sq").dtype(), kFloat32);
  std::vector<double> got = w.to_vector<double>(), expected = w64.to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-6);
}

// ---- Note [Tensor learning rate] ----

TEST(TensorLearningRate, TheStepReadsTheRateFromTheTensor) {
  Tensor w = param({1});
  SGD opt({w}, {.lr = 0.1});
  opt.use_tensor_lr();
  const Tensor rate = opt.param_groups()[0].lr_tensor;
  ASSERT_TRUE(rate.defined());
  EXPECT_EQ(rate.dim(), 0);
  EXPECT_EQ(rate.dtype(), kFloat64);
  EXPECT_EQ(rate.item<double>(), 0.1);
  // Written as data (what a compiled step sees), not through set_lr: the next step uses it.
  rate.fill_(0.5);
  w.mutable_grad() = vec({1});
  opt.step();
  EXPECT_DOUBLE_EQ(w.item<double>(), 0.5);
}

TEST(TensorLearningRate, SetLrWritesTheSameTensorInPlace) {
  Tensor w = param({1});
  Adam opt({w}, {.lr = 0.1});
  opt.use_tensor_lr();
  const Tensor rate = opt.param_groups()[0].lr_tensor;
  const void* data = rate.data_ptr();
  opt.set_lr(0, 0.25);
  EXPECT_EQ(opt.lr(0), 0.25);
  EXPECT_TRUE(opt.param_groups()[0].lr_tensor.is_same(rate));
  EXPECT_EQ(rate.data_ptr(), data);
  EXPECT_EQ(rate.item<double>(), 0.25);
  // Adam's first step moves every coordinate by lr (m / sqrt(v) = sign(g) after bias correction).
  w.mutable_grad() = vec({3});
  opt.step();
  EXPECT_NEAR(w.item<double>(), 0.75, 1e-7);  // eps shifts it by ~lr * eps / |g|
  opt.set_lr(0, 0.5);
  opt.step();
  EXPECT_NEAR(w.item<double>(), 0.25, 1e-7);
}

TEST(TensorLearningRate, GroupsAddedLaterGetTheirOwnTensor) {
  SGD opt({param({1})}, {.lr = 0.1});
  opt.use_tensor_lr();
  opt.add_param_group({.params = {param({1})}, .lr = 0.3});
  const Tensor& rate = opt.param_groups()[1].lr_tensor;
  ASSERT_TRUE(rate.defined());
  EXPECT_EQ(rate.item<double>(), 0.3);
  EXPECT_FALSE(rate.is_same(opt.param_groups()[0].lr_tensor));
}

// ---- zero_grad ----

TEST(ZeroGrad, DropsGradientsOrFillsZeros) {
  Tensor w = param({1, 2}), b = param({3});
  SGD opt({w, b}, {.lr = 0.1});
  w.mutable_grad() = vec({4, 5});
  b.mutable_grad() = vec({6});
  opt.zero_grad(/*set_to_none=*/false);
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{0, 0}));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{0}));
  opt.zero_grad();
  EXPECT_FALSE(w.grad().defined());
  EXPECT_FALSE(b.grad().defined());
  opt.zero_grad();  // no gradients: nothing to do
}

// ---- state_dict ----

using MakeOptimizer =
    std::function<std::unique_ptr<Optimizer>(const std::vector<Tensor>& w, const Tensor& b)>;

struct RoundTripCase {
  std::string name;
  MakeOptimizer make;
};

// Two groups (the second with its own lr and an overridden option) over three parameters.
std::vector<RoundTripCase> round_trip_cases() {
  return {
      {"SGD",
       [](const std::vector<Tensor>& w, const Tensor& b) -> std::unique_ptr<Optimizer> {
         return std::make_unique<SGD>(
             std::vector<ParamGroup>{{.params = w},
                                     {.params = {b}, .lr = 0.05, .options = {{"momentum", 0.5}}}},
             SGDOptions{.lr = 0.1, .momentum = 0.9, .nesterov = true});
       }},
      {"Adam",
       [](const std::vector<Tensor>& w, const Tensor& b) -> std::unique_ptr<Optimizer> {
         return std::make_unique<Adam>(
             std::vector<ParamGroup>{{.params = w},
                                     {.params = {b}, .lr = 0.2, .options = {{"beta1", 0.5}}}},
             AdamOptions{.lr = 0.05, .weight_decay = 0.01, .amsgrad = true});
       }},
      {"AdamW",
       [](const std::vector<Tensor>& w, const Tensor& b) -> std::unique_ptr<Optimizer> {
         return std::make_unique<AdamW>(
             std::vector<ParamGroup>{{.params = w},
                                     {.params = {b}, .lr = 0.2, .options = {{"amsgrad", 1}}}},
             AdamWOptions{.lr = 0.05});
       }},
      {"RMSprop",
       [](const std::vector<Tensor>& w, const Tensor& b) -> std::unique_ptr<Optimizer> {
         return std::make_unique<RMSprop>(
             std::vector<ParamGroup>{{.params = w},
                                     {.params = {b}, .lr = 0.003, .options = {{"centered", 1}}}},
             RMSpropOptions{.lr = 0.03, .momentum = 0.5});
       }},
      {"Adagrad",
       [](const std::vector<Tensor>& w, const Tensor& b) -> std::unique_ptr<Optimizer> {
         return std::make_unique<Adagrad>(
             std::vector<ParamGroup>{{.params = w},
                                     {.params = {b}, .lr = 0.5, .options = {{"lr_decay", 0.2}}}},
             AdagradOptions{.lr = 0.1, .initial_accumulator_value = 0.1});
       }},
  };
}

class StateDictRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

std::vector<Tensor> make_params() {
  return {randn({3, 4}, kFloat64).requires_grad_(), randn({5}, kFloat64).requires_grad_(),
          randn({2}, kFloat64).requires_grad_()};
}

std::vector<Tensor> copies(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  for (const Tensor& p : params) out.push_back(p.detach().clone().requires_grad_());
  return out;
}

void train(Optimizer& opt, const std::vector<Tensor>& params, int step) {
  for (size_t i = 0; i < params.size(); ++i) {
    // A deterministic gradient per (step, parameter); one parameter sits out one step.
    if (step == 1 && i == 2) {
      params[i].mutable_grad() = Tensor();
      continue;
    }
    params[i].mutable_grad() = ones_like(params[i]) * (0.3 * (step + 1)) - params[i].detach() * 0.5;
  }
  opt.step();
}

TEST_P(StateDictRoundTrip, ResumedTrainingMatchesTheUninterruptedRun) {
  manual_seed(7);
  std::vector<Tensor> params = make_params();
  std::unique_ptr<Optimizer> opt = GetParam().make({params[0], params[1]}, params[2]);
  opt->use_tensor_lr();
  for (int step = 0; step < 3; ++step) train(*opt, params, step);
  opt->set_lr(1, opt->lr(1) * 0.5);  // as an LR scheduler would

  std::vector<Tensor> resumed = copies(params);
  std::unique_ptr<Optimizer> fresh = GetParam().make({resumed[0], resumed[1]}, resumed[2]);
  fresh->use_tensor_lr();
  fresh->load_state_dict(opt->state_dict());
  EXPECT_EQ(fresh->lr(1), opt->lr(1));
  EXPECT_EQ(fresh->param_groups()[1].lr_tensor.item<double>(), opt->lr(1));

  for (int step = 3; step < 6; ++step) {
    train(*opt, params, step);
    train(*fresh, resumed, step);
  }
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_EQ(resumed[i].to_vector<double>(), params[i].to_vector<double>()) << "parameter " << i;
}

TEST_P(StateDictRoundTrip, LoadingCopiesTheState) {
  manual_seed(3);
  std::vector<Tensor> params = make_params();
  std::unique_ptr<Optimizer> opt = GetParam().make({params[0], params[1]}, params[2]);
  train(*opt, params, 0);
  StateDict saved = opt->state_dict();
  std::vector<Tensor> other = copies(params);
  std::unique_ptr<Optimizer> fresh = GetParam().make({other[0], other[1]}, other[2]);
  fresh->load_state_dict(saved);
  for (const auto& [name, t] : *fresh->find_state(other[0]))
    EXPECT_FALSE(t.is_alias_of(saved.tensors.at("state.0." + name))) << name;
}

INSTANTIATE_TEST_SUITE_P(Optimizers, StateDictRoundTrip, ::testing::ValuesIn(round_trip_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(StateDict, UsesPyTorchStyleKeys) {
  Tensor w = param({1, 2}), b = param({3});
  SGD opt({ParamGroup{.params = {w}}, ParamGroup{.params = {b}, .lr = 0.5}},
          {.lr = 0.1, .momentum = 0.9});
  w.mutable_grad() = vec({1, 1});
  opt.step();
  StateDict dict = opt.state_dict();
  EXPECT_EQ(dict.tensors.size(), 1u);
  EXPECT_TRUE(dict.tensors.count("state.0.momentum_buffer"));
  EXPECT_EQ(dict.values.at("param_groups.0.params"), "0");
  EXPECT_EQ(dict.values.at("param_groups.1.params"), "1");
  EXPECT_EQ(dict.values.at("param_groups.0.lr"), "0.1");
  EXPECT_EQ(dict.values.at("param_groups.1.lr"), "0.5");
  EXPECT_EQ(dict.values.at("param_groups.0.momentum"), "0.9");
  EXPECT_EQ(dict.values.at("param_groups.1.nesterov"), "0");
}

class StateDictErrors : public ::testing::Test {
 protected:
  // A trained two-group Adam over shapes {2, 2}, {3}.
  StateDict saved() {
    Tensor w = randn({2, 2}, kFloat64).requires_grad_(), b = randn({3}, kFloat64).requires_grad_();
    Adam opt({ParamGroup{.params = {w}}, ParamGroup{.params = {b}}}, {.lr = 0.1});
    w.mutable_grad() = ones_like(w);
    b.mutable_grad() = ones_like(b);
    opt.step();
    return opt.state_dict();
  }
};

TEST_F(StateDictErrors, GroupCountMismatchIsAValueError) {
  Adam one_group({randn({2, 2}, kFloat64).requires_grad_(), randn({3}, kFloat64).requires_grad_()});
  expect_error_mentioning([&] { one_group.load_state_dict(saved()); },
                          "the state has 2 parameter groups but this optimizer has 1");
  Adam three_groups({ParamGroup{.params = {randn({2, 2}, kFloat64).requires_grad_()}},
                     ParamGroup{.params = {randn({3}, kFloat64).requires_grad_()}},
                     ParamGroup{.params = {randn({1}, kFloat64).requires_grad_()}}});
  EXPECT_THROW(three_groups.load_state_dict(saved()), ValueError);
}

TEST_F(StateDictErrors, ParameterCountMismatchIsAValueError) {
  Adam opt({ParamGroup{.params = {randn({2, 2}, kFloat64).requires_grad_()}},
            ParamGroup{.params = {randn({3}, kFloat64).requires_grad_(),
                                  randn({1}, kFloat64).requires_grad_()}}});
  expect_error_mentioning([&] { opt.load_state_dict(saved()); },
                          "parameter group 1 has 1 parameters in the state but 2 here");
}

TEST_F(StateDictErrors, ShapeMismatchIsAShapeErrorNamingBothShapes) {
  Adam opt({ParamGroup{.params = {randn({2, 2}, kFloat64).requires_grad_()}},
            ParamGroup{.params = {randn({4}, kFloat64).requires_grad_()}}});
  try {
    opt.load_state_dict(saved());
    ADD_FAILURE() << "expected a ShapeError";
  } catch (const ShapeError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("[3]"), std::string::npos) << message;
    EXPECT_NE(message.find("[4]"), std::string::npos) << message;
    EXPECT_NE(message.find("state.1."), std::string::npos) << message;
  }
  EXPECT_EQ(opt.find_state(opt.param_groups()[0].params[0]), nullptr);
}

TEST_F(StateDictErrors, InvalidHyperparametersAreRejectedAndLeaveTheOptimizerUnchanged) {
  Tensor w = randn({2, 2}, kFloat64).requires_grad_(), b = randn({3}, kFloat64).requires_grad_();
  Adam opt({ParamGroup{.params = {w}}, ParamGroup{.params = {b}}}, {.lr = 0.3});
  StateDict dict = saved();
  dict.values["param_groups.1.beta2"] = "1.5";
  expect_error_mentioning([&] { opt.load_state_dict(dict); }, "beta2 1.5 in parameter group 1");
  dict = saved();
  dict.values["param_groups.0.lr"] = "fast";
  expect_error_mentioning([&] { opt.load_state_dict(dict); }, "'param_groups.0.lr'");
  dict = saved();
  dict.tensors["state.2.exp_avg"] = zeros({3}, kFloat64);
  expect_error_mentioning([&] { opt.load_state_dict(dict); }, "beyond the 2");
  EXPECT_EQ(opt.lr(0), 0.3);
  EXPECT_EQ(opt.param_groups()[1].option("beta2"), 0.999);
  EXPECT_EQ(opt.find_state(w), nullptr);
}

}  // namespace
}  // namespace kiln::optim
