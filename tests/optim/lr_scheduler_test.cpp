// The LR scheduler API: what the constructor does to the optimizer, get_last_lr/last_epoch,
// tensor learning rates, composition, and state_dict contents. Whole sequences against PyTorch are
// in lr_scheduler_reference_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "tests/optim/lr_scheduler_helpers.h"

namespace kiln::optim::lr_test {
namespace {

using Schedulers = std::vector<std::shared_ptr<LRScheduler>>;

void expect_near_rel(double got, double want) { EXPECT_NEAR(got, want, 1e-12 * std::abs(want)); }

TEST(LRScheduler, ConstructorRecordsInitialLrAndTakesTheInitialStep) {
  auto o = make_sgd({0.1, 0.2});
  ConstantLR scheduler(*o, 0.5, 3);
  EXPECT_EQ(scheduler.last_epoch(), 0);
  EXPECT_EQ(o->param_groups()[0].option("initial_lr"), 0.1);
  EXPECT_EQ(o->param_groups()[1].option("initial_lr"), 0.2);
  EXPECT_EQ(scheduler.base_lrs(), (std::vector<double>{0.1, 0.2}));
  EXPECT_EQ(scheduler.get_last_lr(), (std::vector<double>{0.05, 0.1}));
  EXPECT_EQ(o->lr(1), 0.1);
  scheduler.step();
  EXPECT_EQ(scheduler.last_epoch(), 1);
}

TEST(LRScheduler, ALaterSchedulerStartsFromTheRecordedInitialLr) {
  auto o = make_sgd({0.1});
  ConstantLR warmup(*o, 0.25, 2);  // the rate is now 0.025
  ExponentialLR decay(*o, 0.5);
  EXPECT_EQ(decay.base_lrs(), std::vector<double>{0.1});
  EXPECT_EQ(decay.get_last_lr(), std::vector<double>{0.025});
}

TEST(LRScheduler, IssueExampleWarmupThenExponentialDecay) {
  // Issue 3: base 0.05, ConstantLR(0.1, 20) then ExponentialLR(0.9) at milestone 20 gives 0.005
  // for epochs 0-19, then 0.05, 0.045, 0.0405.
  auto o = make_sgd({0.05});
  auto warmup = std::make_shared<ConstantLR>(*o, 0.1, 20);
  auto decay = std::make_shared<ExponentialLR>(*o, 0.9);
  SequentialLR scheduler(*o, Schedulers{warmup, decay}, {20});
  for (int epoch = 0; epoch < 20; ++epoch) {
    expect_near_rel(o->lr(0), 0.005);
    scheduler.step();
  }
  for (double want : {0.05, 0.045, 0.0405}) {
    expect_near_rel(o->lr(0), want);
    expect_near_rel(scheduler.get_last_lr()[0], want);
    scheduler.step();
  }
  EXPECT_EQ(scheduler.last_epoch(), 23);
  EXPECT_EQ(decay->last_epoch(), 3);
}

TEST(LRScheduler, TensorLearningRateFollowsTheSchedule) {
  auto o = make_sgd({0.1, 0.2});
  o->use_tensor_lr();
  StepLR scheduler(*o, 1, 0.5);
  for (int i = 0; i < 3; ++i) {
    o->step();
    scheduler.step();
    for (size_t g = 0; g < 2; ++g)
      EXPECT_EQ(o->param_groups()[g].lr_tensor.item<double>(), o->param_groups()[g].lr);
  }
  EXPECT_EQ(o->lr(0), 0.1 * 0.5 * 0.5 * 0.5);
}

TEST(LRScheduler, TwoSchedulersOnOneOptimizerMultiply) {
  auto o = make_sgd({1.0});
  StepLR step(*o, 2, 0.5);
  ExponentialLR exponential(*o, 0.9);
  for (int epoch = 1; epoch <= 5; ++epoch) {
    step.step();
    exponential.step();
    expect_near_rel(o->lr(0), std::pow(0.5, epoch / 2) * std::pow(0.9, epoch));
  }
}

TEST(LRScheduler, AGroupAddedLaterFollowsTheChainableForm) {
  // As PyTorch's get_lr iterates over the optimizer's current groups, a recursive form scales a
  // group added after construction too; it has no initial_lr, so no closed form for it.
  auto o = make_sgd({0.1});
  StepLR scheduler(*o, 1, 0.5);
  ParamGroup extra;
  extra.params = {zeros({2}).requires_grad_()};
  extra.lr = 0.2;
  o->add_param_group(extra);
  scheduler.step();
  EXPECT_EQ(scheduler.get_last_lr(), (std::vector<double>{0.05, 0.1}));
  EXPECT_EQ(scheduler.base_lrs(), std::vector<double>{0.1});
}

TEST(LRScheduler, MultiplicativeLRLeavesTheRateAtConstruction) {
  auto o = make_sgd({0.1});
  MultiplicativeLR scheduler(*o, [](int64_t) { return 0.5; });
  EXPECT_EQ(o->lr(0), 0.1);
  scheduler.step();
  EXPECT_EQ(o->lr(0), 0.05);
}

TEST(LRScheduler, CosineAnnealingWarmRestartsFractionalEpoch) {
  auto o = make_sgd({0.1});
  CosineAnnealingWarmRestarts scheduler(*o, 3, 2);
  // Periods 3, 6, 12: epoch 9.5 is 0.5 into the third period.
  scheduler.step(9.5);
  EXPECT_EQ(scheduler.last_epoch(), 9);
  EXPECT_EQ(scheduler.t_i(), 12);
  EXPECT_DOUBLE_EQ(scheduler.t_cur(), 0.5);
  expect_near_rel(o->lr(0), 0.1 * (1 + std::cos(std::numbers::pi * 0.5 / 12)) / 2);
  scheduler.step();  // continues from epoch 9.5: t_cur 1.5
  EXPECT_EQ(scheduler.last_epoch(), 10);
  EXPECT_DOUBLE_EQ(scheduler.t_cur(), 1.5);
  scheduler.step(1.25);  // back into the first period
  EXPECT_EQ(scheduler.t_i(), 3);
  expect_near_rel(o->lr(0), 0.1 * (1 + std::cos(std::numbers::pi * 1.25 / 3)) / 2);
}

TEST(LRScheduler, CyclicLRSetsTheGroupsUp) {
  auto o = make_sgd({0.1, 0.2});
  CyclicLR scheduler(*o, {.base_lr = {0.01, 0.02}, .max_lr = 0.1, .base_momentum = 0.7});
  EXPECT_FALSE(scheduler.use_beta1());
  EXPECT_EQ(scheduler.get_last_lr(), (std::vector<double>{0.01, 0.02}));
  EXPECT_EQ(scheduler.base_lrs(), (std::vector<double>{0.01, 0.02}));
  EXPECT_EQ(o->param_groups()[1].option("initial_lr"), 0.02);
  EXPECT_EQ(o->param_groups()[1].option("momentum"), 0.9);
  EXPECT_EQ(o->param_groups()[1].option("max_momentum"), 0.9);
  EXPECT_EQ(o->param_groups()[1].option("base_momentum"), 0.7);
}

TEST(LRScheduler, MomentumCyclingUsesBeta1OfAdamLikeGroups) {
  auto o = make_adam({0.1});
  CyclicLR scheduler(*o, {.base_lr = 0.01, .max_lr = 0.1, .step_size_up = 2});
  EXPECT_TRUE(scheduler.use_beta1());
  EXPECT_FALSE(o->param_groups()[0].has("momentum"));
  scheduler.step();
  scheduler.step();  // the peak: base_momentum
  expect_near_rel(o->param_groups()[0].option("beta1"), 0.8);
  EXPECT_EQ(o->param_groups()[0].option("beta2"), 0.999);

  auto a = make_adam({0.1});
  OneCycleLR one_cycle(*a, {.max_lr = 1.0, .total_steps = 10});
  EXPECT_TRUE(one_cycle.use_beta1());
  EXPECT_EQ(a->param_groups()[0].option("beta1"), 0.95);
}

TEST(LRScheduler, OneCycleLRSetsInitialMaxAndMinLr) {
  auto o = make_sgd({0.1, 0.2});
  OneCycleLR scheduler(*o, {.max_lr = {1.0, 2.0},
                            .epochs = 2,
                            .steps_per_epoch = 5,
                            .div_factor = 4,
                            .final_div_factor = 10});
  EXPECT_EQ(scheduler.total_steps(), 10);
  const ParamGroup& g = o->param_groups()[1];
  EXPECT_EQ(g.option("initial_lr"), 0.5);
  EXPECT_EQ(g.option("max_lr"), 2.0);
  EXPECT_EQ(g.option("min_lr"), 0.05);
  EXPECT_EQ(g.lr, 0.5);
  for (int i = 0; i < 9; ++i) scheduler.step();
  expect_near_rel(o->lr(1), 0.05);  // the last of the 10 steps is at min_lr
}

TEST(LRScheduler, ReduceLROnPlateauCounters) {
  auto o = make_sgd({0.1});
  ReduceLROnPlateau scheduler(*o, {.factor = 0.5, .patience = 1, .cooldown = 1});
  EXPECT_EQ(scheduler.get_last_lr(), std::vector<double>{0.1});
  EXPECT_TRUE(std::isinf(scheduler.best()));
  scheduler.step(1.0);
  EXPECT_EQ(scheduler.best(), 1.0);
  scheduler.step(1.0);  // not better: one bad epoch, within patience
  EXPECT_EQ(scheduler.num_bad_epochs(), 1);
  EXPECT_EQ(o->lr(0), 0.1);
  scheduler.step(1.0);  // two: reduce, then cool down for one epoch
  EXPECT_EQ(o->lr(0), 0.05);
  EXPECT_TRUE(scheduler.in_cooldown());
  scheduler.step(1.0);  // in cooldown: not counted
  EXPECT_EQ(scheduler.num_bad_epochs(), 0);
  EXPECT_FALSE(scheduler.in_cooldown());
  EXPECT_EQ(scheduler.last_epoch(), 4);
  EXPECT_EQ(scheduler.get_last_lr(), std::vector<double>{0.05});
}

TEST(LRScheduler, StateDictIsReadableText) {
  auto o = make_sgd({0.1, 0.2});
  StepLR scheduler(*o, 3, 0.5);
  scheduler.step();
  StateDict state = scheduler.state_dict();
  EXPECT_TRUE(state.tensors.empty());
  EXPECT_EQ(state.values.at("type"), "StepLR");
  EXPECT_EQ(state.values.at("last_epoch"), "1");
  EXPECT_EQ(state.values.at("base_lrs"), "[0.1, 0.2]");
  EXPECT_EQ(state.values.at("last_lr"), "[0.1, 0.2]");
  EXPECT_EQ(state.values.at("step_size"), "3");
  EXPECT_EQ(state.values.at("gamma"), "0.5");

  auto a = make_sgd({0.1});
  SequentialLR sequential(
      *a, Schedulers{std::make_shared<ConstantLR>(*a, 0.5, 2), std::make_shared<StepLR>(*a, 2)},
      {2});
  StateDict nested = sequential.state_dict();
  EXPECT_EQ(nested.values.at("milestones"), "[2]");
  EXPECT_EQ(nested.values.at("schedulers.0.type"), "ConstantLR");
  EXPECT_EQ(nested.values.at("schedulers.1.type"), "StepLR");
}

TEST(LRScheduler, LoadingRestoresTheSavedHyperparameters) {
  // As in PyTorch, the saved gamma and step_size replace the constructor's.
  auto o = make_sgd({1.0});
  StepLR saved(*o, 1, 0.5);
  auto p = make_sgd({1.0});
  StepLR loaded(*p, 10, 0.1);
  loaded.load_state_dict(saved.state_dict());
  loaded.step();
  EXPECT_EQ(p->lr(0), 0.5);
}

TEST(LRScheduler, ReduceLROnPlateauStateRoundTripsInfinity) {
  auto o = make_sgd({0.1});
  ReduceLROnPlateau fresh(*o, {.mode = "max"});
  auto p = make_sgd({0.1});
  ReduceLROnPlateau loaded(*p);
  loaded.load_state_dict(fresh.state_dict());
  EXPECT_TRUE(std::isinf(loaded.best()) && loaded.best() < 0);
  loaded.step(0.5);
  EXPECT_EQ(loaded.best(), 0.5);
}

}  // namespace
}  // namespace kiln::optim::lr_test
