// Bad arguments and bad states: a ValueError whose message names the scheduler and the argument
// (or state entry), and the optimizer and scheduler left as they were.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/optim/lr_scheduler_helpers.h"

namespace kiln::optim::lr_test {
namespace {

// An optimizer with neither "momentum" nor "beta1" (like PyTorch's Adagrad).
class NoMomentum : public Optimizer {
 public:
  explicit NoMomentum(std::vector<ParamGroup> groups) : Optimizer(std::move(groups), 0.1, {}) {}
  void step() override {}
  std::string name() const override { return "NoMomentum"; }
};

template <typename F>
void expect_value_error(F&& f, std::vector<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no ValueError; expected one mentioning " << parts.front();
  } catch (const ValueError& e) {
    for (const std::string& part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "message '" << e.what() << "' does not mention '" << part << "'";
  }
}

using Schedulers = std::vector<std::shared_ptr<LRScheduler>>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(LRSchedulerErrors, InvalidGamma) {
  auto o = make_sgd({0.1});
  expect_value_error([&] { StepLR(*o, 2, -0.5); }, {"StepLR", "gamma", "-0.5"});
  expect_value_error([&] { StepLR(*o, 2, kNaN); }, {"StepLR", "gamma"});
  expect_value_error([&] { MultiStepLR(*o, {1, 2}, 0.0); }, {"MultiStepLR", "gamma"});
  expect_value_error([&] { ExponentialLR(*o, -0.9); }, {"ExponentialLR", "gamma"});
  expect_value_error([&] { CyclicLR(*o, {.base_lr = 0.01, .max_lr = 0.1, .gamma = 0}); },
                     {"CyclicLR", "gamma"});
}

TEST(LRSchedulerErrors, InvalidFactors) {
  auto o = make_sgd({0.1});
  expect_value_error([&] { ConstantLR(*o, 0.0); }, {"ConstantLR", "factor"});
  expect_value_error([&] { ConstantLR(*o, 1.5); }, {"ConstantLR", "factor", "1.5"});
  expect_value_error([&] { LinearLR(*o, 0.0); }, {"LinearLR", "start_factor"});
  expect_value_error([&] { LinearLR(*o, 1.5); }, {"LinearLR", "start_factor"});
  expect_value_error([&] { LinearLR(*o, 0.5, -0.1); }, {"LinearLR", "end_factor"});
  expect_value_error([&] { ReduceLROnPlateau(*o, {.factor = 1.0}); },
                     {"ReduceLROnPlateau", "factor"});
  expect_value_error([&] { OneCycleLR(*o, {.max_lr = 0.1, .total_steps = 10, .div_factor = 0}); },
                     {"OneCycleLR", "div_factor"});
  expect_value_error(
      [&] { OneCycleLR(*o, {.max_lr = 0.1, .total_steps = 10, .final_div_factor = -1}); },
      {"OneCycleLR", "final_div_factor"});
  expect_value_error([&] { PolynomialLR(*o, 5, -1.0); }, {"PolynomialLR", "power"});
}

TEST(LRSchedulerErrors, InvalidLengthsAndPeriods) {
  auto o = make_sgd({0.1});
  expect_value_error([&] { StepLR(*o, 0); }, {"StepLR", "step_size"});
  expect_value_error([&] { ConstantLR(*o, 0.5, 0); }, {"ConstantLR", "total_iters"});
  expect_value_error([&] { LinearLR(*o, 0.5, 1.0, -3); }, {"LinearLR", "total_iters", "-3"});
  expect_value_error([&] { PolynomialLR(*o, 0); }, {"PolynomialLR", "total_iters"});
  expect_value_error([&] { CosineAnnealingLR(*o, 0); }, {"CosineAnnealingLR", "T_max"});
  expect_value_error([&] { CosineAnnealingWarmRestarts(*o, 0); },
                     {"CosineAnnealingWarmRestarts", "T_0"});
  expect_value_error([&] { CosineAnnealingWarmRestarts(*o, 2, 0); },
                     {"CosineAnnealingWarmRestarts", "T_mult"});
  CosineAnnealingWarmRestarts restarts(*o, 2);
  expect_value_error([&] { restarts.step(-1.0); }, {"CosineAnnealingWarmRestarts", "epoch"});
  expect_value_error([&] { CyclicLR(*o, {.base_lr = 0.01, .max_lr = 0.1, .step_size_up = 0}); },
                     {"CyclicLR", "step_size_up"});
  expect_value_error([&] { CyclicLR(*o, {.base_lr = 0.01, .max_lr = 0.1, .step_size_down = 0}); },
                     {"CyclicLR", "step_size_down"});
  expect_value_error([&] { OneCycleLR(*o, {.max_lr = 0.1, .total_steps = 0}); },
                     {"OneCycleLR", "total_steps"});
  expect_value_error([&] { OneCycleLR(*o, {.max_lr = 0.1}); },
                     {"OneCycleLR", "total_steps", "epochs"});
  expect_value_error([&] { OneCycleLR(*o, {.max_lr = 0.1, .epochs = 2, .steps_per_epoch = 0}); },
                     {"OneCycleLR", "steps_per_epoch"});
  expect_value_error([&] { OneCycleLR(*o, {.max_lr = 0.1, .total_steps = 10, .pct_start = 1.5}); },
                     {"OneCycleLR", "pct_start"});
  // pct_start * total_steps - 1 == 0: the first phase is empty (PyTorch divides by zero).
  expect_value_error([&] { OneCycleLR(*o, {.max_lr = 0.1, .total_steps = 10, .pct_start = 0.1}); },
                     {"OneCycleLR", "pct_start", "total_steps"});
  expect_value_error([&] { ReduceLROnPlateau(*o, {.patience = -1}); },
                     {"ReduceLROnPlateau", "patience"});
  expect_value_error([&] { ReduceLROnPlateau(*o, {.cooldown = -2}); },
                     {"ReduceLROnPlateau", "cooldown"});
}

TEST(LRSchedulerErrors, UnknownModeStrings) {
  auto o = make_sgd({0.1});
  expect_value_error([&] { CyclicLR(*o, {.base_lr = 0.01, .max_lr = 0.1, .mode = "triangle"}); },
                     {"CyclicLR", "mode", "triangle"});
  expect_value_error(
      [&] {
        CyclicLR(*o, {.base_lr = 0.01,
                      .max_lr = 0.1,
                      .scale_fn = [](double) { return 1.0; },
                      .scale_mode = "epochs"});
      },
      {"CyclicLR", "scale_mode", "epochs"});
  expect_value_error(
      [&] { OneCycleLR(*o, {.max_lr = 0.1, .total_steps = 10, .anneal_strategy = "cosine"}); },
      {"OneCycleLR", "anneal_strategy", "cosine"});
  expect_value_error([&] { ReduceLROnPlateau(*o, {.mode = "minimum"}); },
                     {"ReduceLROnPlateau", "mode", "minimum"});
  expect_value_error([&] { ReduceLROnPlateau(*o, {.threshold_mode = "relative"}); },
                     {"ReduceLROnPlateau", "threshold_mode", "relative"});
}

TEST(LRSchedulerErrors, WrongNumberOfPerGroupValues) {
  auto o = make_sgd({0.1, 0.2});
  expect_value_error(
      [&] {
        CyclicLR(*o, {.base_lr = {0.01, 0.02, 0.03}, .max_lr = 0.1});
      },
      {"CyclicLR", "base_lr", "3 values", "2 parameter groups"});
  expect_value_error([&] { CyclicLR(*o, {.base_lr = 0.01, .max_lr = {0.1}}); },
                     {"CyclicLR", "max_lr", "1 values"});
  expect_value_error(
      [&] {
        CyclicLR(*o, {.base_lr = 0.01, .max_lr = 0.1, .max_momentum = {0.9, 0.9, 0.9}});
      },
      {"CyclicLR", "max_momentum"});
  expect_value_error([&] { CyclicLR(*o, {.max_lr = 0.1}); }, {"CyclicLR", "base_lr", "required"});
  expect_value_error(
      [&] {
        OneCycleLR(*o, {.max_lr = {0.1, 0.2, 0.3}, .total_steps = 5});
      },
      {"OneCycleLR", "max_lr"});
  expect_value_error(
      [&] { OneCycleLR(*o, {.max_lr = 0.1, .total_steps = 5, .base_momentum = {0.8}}); },
      {"OneCycleLR", "base_momentum"});
  expect_value_error(
      [&] {
        ReduceLROnPlateau(*o, {.min_lr = {0.01, 0.01, 0.01}});
      },
      {"ReduceLROnPlateau", "min_lr"});
  expect_value_error([&] { LambdaLR(*o, std::vector<LrLambda>{[](int64_t) { return 1.0; }}); },
                     {"LambdaLR", "lr_lambdas", "expected 2"});
  expect_value_error(
      [&] {
        MultiplicativeLR(*o, std::vector<LrLambda>{nullptr, nullptr});
      },
      {"MultiplicativeLR", "lr_lambda 0"});
}

TEST(LRSchedulerErrors, BadArgumentsLeaveTheOptimizerUnchanged) {
  auto o = make_sgd({0.1, 0.2});
  const auto before = o->state_dict().values;
  expect_value_error([&] { CyclicLR(*o, {.base_lr = 0.01, .max_lr = 0.1, .max_momentum = {0.9}}); },
                     {"max_momentum"});
  expect_value_error([&] { OneCycleLR(*o, {.max_lr = 0.1, .total_steps = 10, .pct_start = 0.1}); },
                     {"OneCycleLR"});
  expect_value_error([&] { OneCycleLR(*o, {.max_lr = 0.1, .anneal_strategy = "x"}); },
                     {"OneCycleLR"});
  EXPECT_EQ(o->state_dict().values, before);
}

TEST(LRSchedulerErrors, MomentumCyclingNeedsMomentumOrBeta1) {
  std::vector<ParamGroup> groups(1);
  groups[0].params = {zeros({2}).requires_grad_()};
  NoMomentum o(std::move(groups));
  expect_value_error([&] { CyclicLR(o, {.base_lr = 0.01, .max_lr = 0.1}); },
                     {"CyclicLR", "cycle_momentum", "momentum", "beta1", "NoMomentum"});
  expect_value_error([&] { OneCycleLR(o, {.max_lr = 0.1, .total_steps = 10}); },
                     {"OneCycleLR", "cycle_momentum"});
  // Without momentum cycling they work.
  CyclicLR cyclic(o, {.base_lr = 0.01, .max_lr = 0.1, .cycle_momentum = false});
  EXPECT_EQ(cyclic.get_last_lr(), std::vector<double>{0.01});
}

TEST(LRSchedulerErrors, SteppingOneCycleLRPastTotalStepsKeepsItsState) {
  auto o = make_sgd({0.1});
  OneCycleLR scheduler(*o, {.max_lr = 0.5, .total_steps = 4});
  for (int i = 0; i < 4; ++i) scheduler.step();
  const std::vector<double> last = scheduler.get_last_lr();
  expect_value_error([&] { scheduler.step(); }, {"OneCycleLR", "5 times", "total_steps is 4"});
  EXPECT_EQ(scheduler.last_epoch(), 4);
  EXPECT_EQ(scheduler.get_last_lr(), last);
}

TEST(LRSchedulerErrors, CompositesCheckTheirSchedulers) {
  auto o = make_sgd({0.1});
  auto other = make_sgd({0.1});
  auto a = std::make_shared<ConstantLR>(*o, 0.5, 2);
  auto b = std::make_shared<ExponentialLR>(*o, 0.9);
  auto foreign = std::make_shared<ExponentialLR>(*other, 0.9);
  expect_value_error(
      [&] {
        SequentialLR(*o, Schedulers{a, b}, {});
      },
      {"SequentialLR", "2 schedulers", "0 milestones"});
  expect_value_error(
      [&] {
        SequentialLR(*o, Schedulers{a, b, b}, {5, 3});
      },
      {"SequentialLR", "milestones", "increasing"});
  expect_value_error([&] { SequentialLR(*o, Schedulers{}, {}); },
                     {"SequentialLR", "no schedulers"});
  expect_value_error(
      [&] {
        SequentialLR(*o, Schedulers{a, foreign}, {2});
      },
      {"SequentialLR", "scheduler 1", "ExponentialLR", "different optimizer"});
  expect_value_error(
      [&] {
        SequentialLR(*o, Schedulers{a, nullptr}, {2});
      },
      {"SequentialLR", "null"});
  expect_value_error([&] { ChainedScheduler(Schedulers{}); }, {"ChainedScheduler"});
  expect_value_error(
      [&] {
        ChainedScheduler(Schedulers{a, foreign});
      },
      {"ChainedScheduler", "scheduler 1", "different optimizer"});
}

TEST(LRSchedulerErrors, LoadingAnotherSchedulersStateNamesBoth) {
  auto o = make_sgd({0.1});
  StepLR step(*o, 2, 0.5);
  ExponentialLR exponential(*o, 0.9);
  ReduceLROnPlateau plateau(*o);
  expect_value_error([&] { step.load_state_dict(exponential.state_dict()); },
                     {"StepLR.load_state_dict", "ExponentialLR", "type"});
  expect_value_error([&] { plateau.load_state_dict(step.state_dict()); },
                     {"ReduceLROnPlateau.load_state_dict", "StepLR"});
  expect_value_error([&] { exponential.load_state_dict(plateau.state_dict()); },
                     {"ExponentialLR.load_state_dict", "ReduceLROnPlateau"});
  expect_value_error([&] { step.load_state_dict(StateDict{}); },
                     {"StepLR.load_state_dict", "type"});

  auto sequential_of = [&](std::shared_ptr<LRScheduler> first) {
    return std::make_shared<SequentialLR>(
        *o, Schedulers{first, std::make_shared<ExponentialLR>(*o, 0.9)}, std::vector<int64_t>{3});
  };
  auto constant_first = sequential_of(std::make_shared<ConstantLR>(*o, 0.5, 3));
  auto linear_first = sequential_of(std::make_shared<LinearLR>(*o, 0.5, 1.0, 3));
  expect_value_error([&] { constant_first->load_state_dict(linear_first->state_dict()); },
                     {"ConstantLR.load_state_dict", "schedulers.0.type", "LinearLR"});
}

TEST(LRSchedulerErrors, MalformedStateIsRejectedAndLeavesTheSchedulerUnchanged) {
  auto o = make_sgd({0.1});
  StepLR scheduler(*o, 2, 0.5);
  scheduler.step();
  const StateDict good = scheduler.state_dict();

  StateDict missing = good;
  missing.values.erase("gamma");
  expect_value_error([&] { scheduler.load_state_dict(missing); },
                     {"StepLR.load_state_dict", "'gamma'"});
  StateDict not_a_number = good;
  not_a_number.values["gamma"] = "half";
  expect_value_error([&] { scheduler.load_state_dict(not_a_number); },
                     {"StepLR.load_state_dict", "gamma", "half"});
  StateDict not_a_list = good;
  not_a_list.values["base_lrs"] = "0.1";
  expect_value_error([&] { scheduler.load_state_dict(not_a_list); },
                     {"StepLR.load_state_dict", "base_lrs"});
  StateDict bad_epoch = good;
  bad_epoch.values["last_epoch"] = "1.5";
  expect_value_error([&] { scheduler.load_state_dict(bad_epoch); },
                     {"StepLR.load_state_dict", "last_epoch", "integer"});
  EXPECT_EQ(scheduler.state_dict().values, good.values);

  // A state saved with two parameter groups does not fit one.
  auto two = make_sgd({0.1, 0.2});
  StepLR two_groups(*two, 2, 0.5);
  expect_value_error([&] { scheduler.load_state_dict(two_groups.state_dict()); },
                     {"StepLR.load_state_dict", "base_lrs", "2 values", "1 parameter groups"});
}

TEST(LRSchedulerErrors, CompositeLoadsAllOrNothing) {
  auto o = make_sgd({0.1});
  auto step = std::make_shared<StepLR>(*o, 2, 0.5);
  auto exponential = std::make_shared<ExponentialLR>(*o, 0.9);
  ChainedScheduler chained(Schedulers{step, exponential});
  chained.step();
  StateDict good = chained.state_dict();
  chained.step();
  chained.step();
  const StateDict now = chained.state_dict();
  StateDict bad = good;
  bad.values["schedulers.1.gamma"] = "?";  // the second scheduler fails after the first loaded
  expect_value_error([&] { chained.load_state_dict(bad); },
                     {"ExponentialLR.load_state_dict", "schedulers.1.gamma"});
  EXPECT_EQ(chained.state_dict().values, now.values);
  EXPECT_EQ(step->last_epoch(), 3);
}

TEST(LRSchedulerErrors, PlateauMinLrPerGroupNeedsTheSameGroups) {
  auto o = make_sgd({0.1});
  ReduceLROnPlateau plateau(*o, {.patience = 0, .min_lr = {0.01}});
  ParamGroup extra;
  extra.params = {zeros({2}).requires_grad_()};
  extra.lr = 0.2;
  o->add_param_group(extra);
  expect_value_error([&] { plateau.step(1.0); }, {"ReduceLROnPlateau", "min_lr", "2 parameter"});
  // A single min_lr extends to new groups, as PyTorch's default_min_lr.
  auto p = make_sgd({0.1});
  ReduceLROnPlateau shared(*p, {.patience = 0, .min_lr = 0.05});
  p->add_param_group(extra);
  shared.step(1.0);
  shared.step(2.0);
  EXPECT_EQ(shared.min_lrs(), (std::vector<double>{0.05, 0.05}));
  EXPECT_EQ(p->lr(0), 0.05);
}

}  // namespace
}  // namespace kiln::optim::lr_test
