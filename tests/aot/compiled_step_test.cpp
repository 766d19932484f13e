// Note [Compiled optimizer step]: compiled SGD/Adam/AdamW steps equal the eager ones, and a
// scheduler changing the learning rate (and momentum) every step never recompiles.
#include <gtest/gtest.h>

#include "kiln/compile.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

// Two identical parameter sets with the same gradients each step.
struct Twins {
  std::vector<Tensor> eager, compiled;
  explicit Twins(uint64_t seed) {
    manual_seed(seed);
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{7, 5}, std::vector<int64_t>{5}, std::vector<int64_t>{3, 2, 4}}) {
      Tensor p = randn(shape);
      eager.push_back(p.clone().requires_grad_());
      compiled.push_back(p.clone().requires_grad_());
    }
  }
  void set_grads(int step) {
    manual_seed(100 + step);
    for (size_t i = 0; i < eager.size(); ++i) {
      Tensor g = randn(eager[i].sizes().vec());
      eager[i].mutable_grad() = g.clone();
      compiled[i].mutable_grad() = g.clone();
    }
  }
  void expect_close() const {
    for (size_t i = 0; i < eager.size(); ++i) {
      const auto a = compiled[i].detach().to_vector<double>(),
                 e = eager[i].detach().to_vector<double>();
      for (size_t k = 0; k < a.size(); ++k)
        EXPECT_NEAR(a[k], e[k], 1e-5 + 1e-5 * std::abs(e[k])) << i << "," << k;
    }
  }
};

template <typename Opt, typename Options>
void check_against_eager(Options options, int steps) {
  Twins t(1);
  Opt eager(t.eager, options), compiled(t.compiled, options);
  CompiledOptimizerStep step(compiled);
  for (int i = 0; i < steps; ++i) {
    t.set_grads(i);
    eager.step();
    step.step();
    t.expect_close();
  }
  // The first step creates the state eagerly; the second compiles the update, the rest reuse it.
  EXPECT_EQ(step.compiles(), 2);
}

TEST(CompiledOptimizerStep, SgdMatchesEager) {
  check_against_eager<optim::SGD>(optim::SGDOptions{.lr = 0.1, .momentum = 0.9}, 5);
  check_against_eager<optim::SGD>(
      optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-2, .nesterov = true}, 5);
  check_against_eager<optim::SGD>(
      optim::SGDOptions{.lr = 0.05, .momentum = 0.5, .dampening = 0.25, .maximize = true}, 4);
}

TEST(CompiledOptimizerStep, PlainSgdNeedsNoEagerStep) {
  Twins t(2);
  optim::SGD eager(t.eager, {.lr = 0.1}), compiled(t.compiled, {.lr = 0.1});
  CompiledOptimizerStep step(compiled);
  for (int i = 0; i < 3; ++i) {
    t.set_grads(i);
    eager.step();
    step.step();
    t.expect_close();
  }
  EXPECT_EQ(step.compiles(), 1);  // no state to create: the first step is already compiled
}

TEST(CompiledOptimizerStep, AdamAndAdamWMatchEager) {
  check_against_eager<optim::AdamW>(optim::AdamWOptions{.lr = 1e-2}, 5);
  check_against_eager<optim::Adam>(optim::AdamOptions{.lr = 1e-2, .weight_decay = 1e-3}, 5);
  check_against_eager<optim::Adam>(optim::AdamOptions{.lr = 1e-2, .amsgrad = true}, 5);
}

// The check: 100 steps of OneCycleLR (which moves the learning rate and SGD's momentum
// every step) compile once (after the eager first step that creates the momentum buffers).
TEST(CompiledOptimizerStep, OneCycleLrNeverRecompiles) {
  Twins t(3);
  optim::SGD eager(t.eager, {.lr = 0.1, .momentum = 0.9}),
      compiled(t.compiled, {.lr = 0.1, .momentum = 0.9});
  optim::OneCycleLR eager_sched(eager, {.max_lr = 0.5, .total_steps = 100});
  optim::OneCycleLR compiled_sched(compiled, {.max_lr = 0.5, .total_steps = 100});
  CompiledOptimizerStep step(compiled);
  for (int i = 0; i < 100; ++i) {
    t.set_grads(i);
    eager.step();
    step.step();
    eager_sched.step();
    compiled_sched.step();
  }
  t.expect_close();
  EXPECT_EQ(step.compiles(), 2);  // the eager first step, then one compiled update
}

TEST(CompiledOptimizerStep, AChangedHyperparameterRecompiles) {
  Twins t(4);
  optim::SGD compiled(t.compiled, {.lr = 0.1, .momentum = 0.9});
  CompiledOptimizerStep step(compiled);
  for (int i = 0; i < 3; ++i) {
    t.set_grads(i);
    step.step();
  }
  compiled.param_groups()[0].options["weight_decay"] = 0.1;
  t.set_grads(3);
  step.step();
  EXPECT_EQ(step.compiles(), 3);
}

TEST(CompiledOptimizerStep, OtherOptimizersAreNotImplemented) {
  Twins t(5);
  optim::RMSprop rmsprop(t.compiled);
  try {
    CompiledOptimizerStep step(rmsprop);
    FAIL();
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("RMSprop has no compiled step"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kiln
