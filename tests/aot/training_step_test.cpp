// A whole training step inside kiln::compile: zero_grad(), forward, loss, backward() (a graph
// break, Note [Backward in a compiled function]) and optimizer.step() (a traced update, Note
// [Optimizer steps under a trace]). Every test runs the same step eagerly on a twin model and
// compares.
#include <gtest/gtest.h>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "tests/aot/aot_test_options.h"

namespace kiln {
namespace {

std::shared_ptr<nn::Sequential> make_mlp(uint64_t seed) {
  manual_seed(seed);
  return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(12, 16), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(16, 5)});
}

struct Batch {
  Tensor x, y;
};

Batch batch(int step) {
  manual_seed(1000 + step);
  return {randn({8, 12}), randint(0, 5, {8})};
}

void expect_close(nn::Module& compiled, nn::Module& eager, double tol = 1e-5) {
  const auto a = compiled.named_parameters(), e = eager.named_parameters();
  ASSERT_EQ(a.size(), e.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const auto x = a[i].second.detach().to_vector<double>();
    const auto y = e[i].second.detach().to_vector<double>();
    for (size_t k = 0; k < x.size(); ++k)
      ASSERT_NEAR(x[k], y[k], tol + tol * std::abs(y[k])) << a[i].first << "[" << k << "]";
  }
}

using testing::error_message;

CompileOptions options() { return testing::aot_options(); }

// The usual training step: zero_grad, loss, backward, step; compiled, and eager.
auto compiled_step(optim::Optimizer& opt) {
  return compile(
      [&opt](nn::Module& m, const Tensor& x, const Tensor& y) {
        opt.zero_grad();
        Tensor loss = cross_entropy(m(x), y);
        loss.backward();
        opt.step();
        return loss;
      },
      options());
}

Tensor eager_step(nn::Module& m, optim::Optimizer& opt, const Batch& b) {
  opt.zero_grad();
  Tensor loss = cross_entropy(m.forward(b.x), b.y);
  loss.backward();
  opt.step();
  return loss;
}

// The check: 100 steps with OneCycleLR (lr and momentum change every step) compile the
// training step twice (the eager first optimizer step, which creates the momentum buffers, then
// the compiled update) and never again, and track eager training.
TEST(CompiledTrainingStep, SgdWithOneCycleLrMatchesEagerAndCompilesTwice) {
  auto eager_model = make_mlp(1), model = make_mlp(1);
  optim::SGD eager_opt(eager_model->parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::SGD opt(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::OneCycleLR eager_sched(eager_opt, {.max_lr = 0.5, .total_steps = 100});
  optim::OneCycleLR sched(opt, {.max_lr = 0.5, .total_steps = 100});
  auto train_step = compiled_step(opt);
  for (int i = 0; i < 100; ++i) {
    const Batch b = batch(i);
    Tensor eager_loss = eager_step(*eager_model, eager_opt, b);
    eager_sched.step();
    Tensor loss = train_step(*model, b.x, b.y);
    sched.step();
    ASSERT_NEAR(loss.item<double>(), eager_loss.item<double>(), 1e-4) << "step " << i;
    if (i < 3) expect_close(*model, *eager_model);
    if (i == 0) {
      // The forward and the backward are compiled: the loss's grad_fn runs a compiled backward.
      ASSERT_TRUE(loss.grad_fn() != nullptr);
      EXPECT_EQ(loss.grad_fn()->name(), "CompiledFunctionBackward");
    }
  }
  expect_close(*model, *eager_model, 1e-4);
  const capture::CompileStats stats = train_step.stats();
  EXPECT_EQ(stats.compiles, 2) << train_step.describe();
  EXPECT_EQ(stats.cache_entries, 1);
  // The second trace recorded the update as in-place ops on the parameters, not an eager step.
  const std::string text = train_step.describe();
  EXPECT_NE(text.find("sub_("), std::string::npos) << text;
  EXPECT_NE(text.find("graph break at"), std::string::npos) << text;
  // Its inputs are named after what they are: gradients, optimizer state, hyperparameters.
  for (const char* input : {"\"model.0.weight.grad\"", "\"model.0.weight.SGD.momentum_buffer\"",
                            "\"SGD.param_groups[0].lr\"", "\"SGD.param_groups[0].momentum\""})
    EXPECT_NE(text.find(input), std::string::npos) << input << "\n" << text;
}

TEST(CompiledTrainingStep, AdamWAndAdamMatchEager) {
  for (const bool decoupled : {true, false}) {
    SCOPED_TRACE(decoupled ? "AdamW" : "Adam");
    auto eager_model = make_mlp(2), model = make_mlp(2);
    std::unique_ptr<optim::Optimizer> eager_opt, opt;
    if (decoupled) {
      eager_opt = std::make_unique<optim::AdamW>(eager_model->parameters(),
                                                 optim::AdamWOptions{.lr = 1e-2});
      opt = std::make_unique<optim::AdamW>(model->parameters(), optim::AdamWOptions{.lr = 1e-2});
    } else {
      const optim::AdamOptions o{.lr = 1e-2, .weight_decay = 1e-3, .amsgrad = true};
      eager_opt = std::make_unique<optim::Adam>(eager_model->parameters(), o);
      opt = std::make_unique<optim::Adam>(model->parameters(), o);
    }
    optim::OneCycleLR eager_sched(*eager_opt, {.max_lr = 0.05, .total_steps = 10});
    optim::OneCycleLR sched(*opt, {.max_lr = 0.05, .total_steps = 10});
    auto train_step = compile(
        [&](nn::Module& m, const Tensor& x, const Tensor& y) {
          m.zero_grad();
          Tensor loss = cross_entropy(m(x), y);
          loss.backward();
          opt->step();
          return loss;
        },
        options());
    for (int i = 0; i < 10; ++i) {
      const Batch b = batch(i);
      eager_step(*eager_model, *eager_opt, b);
      eager_sched.step();
      train_step(*model, b.x, b.y);
      sched.step();
      expect_close(*model, *eager_model, 1e-4);
    }
    // OneCycleLR cycles Adam's beta1 too: a tensor, so no recompiles.
    EXPECT_EQ(train_step.stats().compiles, 2);
  }
}

// Without zero_grad the gradients accumulate across calls, as in eager: each cache hit runs the
// backward again.
TEST(CompiledTrainingStep, BackwardRunsOnEveryCallAndAccumulates) {
  auto eager_model = make_mlp(3), model = make_mlp(3);
  auto accumulate = compile(
      [](nn::Module& m, const Tensor& x, const Tensor& y) {
        Tensor loss = cross_entropy(m(x), y);
        loss.backward();
        return loss;
      },
      options());
  for (int i = 0; i < 3; ++i) {
    const Batch b = batch(i);
    cross_entropy(eager_model->forward(b.x), b.y).backward();
    accumulate(*model, b.x, b.y);
  }
  const auto a = model->parameters(), e = eager_model->parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(a[i].grad().defined());
    const auto x = a[i].grad().to_vector<double>(), y = e[i].grad().to_vector<double>();
    for (size_t k = 0; k < x.size(); ++k) ASSERT_NEAR(x[k], y[k], 1e-5) << i << "," << k;
  }
  EXPECT_EQ(accumulate.stats().compiles, 1);
  EXPECT_EQ(accumulate.stats().cache_hits, 2);
}

// zero_grad(set_to_none=false) keeps the gradient tensors and zeroes them; the step reads them.
TEST(CompiledTrainingStep, ZeroGradInPlaceAndAnExplicitGradient) {
  auto eager_model = make_mlp(4), model = make_mlp(4);
  optim::SGD eager_opt(eager_model->parameters(), {.lr = 0.05});
  optim::SGD opt(model->parameters(), {.lr = 0.05});
  auto train_step = compile(
      [&](nn::Module& m, const Tensor& x, const Tensor& y) {
        opt.zero_grad(/*set_to_none=*/false);
        Tensor loss = cross_entropy(m(x), y, Tensor(), "none");
        loss.backward(full({8}, 0.5));
        opt.step();
        return loss.sum();
      },
      options());
  for (int i = 0; i < 4; ++i) {
    const Batch b = batch(i);
    eager_opt.zero_grad(false);
    cross_entropy(eager_model->forward(b.x), b.y, Tensor(), "none").backward(full({8}, 0.5));
    eager_opt.step();
    train_step(*model, b.x, b.y);
    expect_close(*model, *eager_model);
  }
  EXPECT_EQ(train_step.stats().compiles, 1);  // plain SGD has no state to create
}

// An optimizer with no traced form steps eagerly (an effect), a scheduler stepped inside the
// function steps on every call, and both still match eager.
TEST(CompiledTrainingStep, RmspropAndASchedulerInsideTheFunctionRunAsEffects) {
  auto eager_model = make_mlp(5), model = make_mlp(5);
  optim::RMSprop eager_opt(eager_model->parameters(), {.lr = 1e-2});
  optim::RMSprop opt(model->parameters(), {.lr = 1e-2});
  optim::StepLR eager_sched(eager_opt, /*step_size=*/2, /*gamma=*/0.5);
  optim::StepLR sched(opt, /*step_size=*/2, /*gamma=*/0.5);
  auto train_step = compile(
      [&](nn::Module& m, const Tensor& x, const Tensor& y) {
        opt.zero_grad();
        Tensor loss = cross_entropy(m(x), y);
        loss.backward();
        opt.step();
        sched.step();
        return loss;
      },
      options());
  for (int i = 0; i < 6; ++i) {
    const Batch b = batch(i);
    eager_step(*eager_model, eager_opt, b);
    eager_sched.step();
    train_step(*model, b.x, b.y);
    expect_close(*model, *eager_model);
    EXPECT_DOUBLE_EQ(opt.lr(0), eager_opt.lr(0));
  }
  EXPECT_EQ(train_step.stats().compiles, 1);
}

// Gradient clipping between backward() and step() reads and scales the gradients inside the
// graph (no item(): clipping compiles once, as in PyTorch, rather than breaking on the norm).
TEST(CompiledTrainingStep, GradientClippingInsideTheStepMatchesEager) {
  auto eager_model = make_mlp(8), model = make_mlp(8);
  optim::SGD eager_opt(eager_model->parameters(), {.lr = 0.5});
  optim::SGD opt(model->parameters(), {.lr = 0.5});
  auto train_step = compile(
      [&](nn::Module& m, const Tensor& x, const Tensor& y) {
        opt.zero_grad();
        Tensor loss = cross_entropy(m(x), y);
        loss.backward();
        Tensor norm = nn::clip_grad_norm_(m.parameters(), 0.05);
        opt.step();
        return norm;
      },
      options());
  for (int i = 0; i < 4; ++i) {
    const Batch b = batch(i);
    eager_opt.zero_grad();
    cross_entropy(eager_model->forward(b.x), b.y).backward();
    Tensor eager_norm = nn::clip_grad_norm_(eager_model->parameters(), 0.05);
    eager_opt.step();
    Tensor norm = train_step(*model, b.x, b.y);
    EXPECT_NEAR(norm.item<double>(), eager_norm.item<double>(), 1e-5);
    expect_close(*model, *eager_model);
  }
  EXPECT_EQ(train_step.stats().compiles, 1);
  EXPECT_EQ(train_step.stats().graph_breaks, 1);  // backward() only
}

// BatchNorm's running statistics are updated in place in the forward graph. At the backward()
// break the updated buffers are not extra outputs of that graph (they are written back into
// the real buffers), so the forward still compiles through AOT autograd.
TEST(CompiledTrainingStep, BatchNormBuffersUpdateAndTheBackwardStaysCompiled) {
  auto make = [] {
    manual_seed(9);
    return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Linear>(12, 16), std::make_shared<nn::BatchNorm1d>(16),
        std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(16, 5)});
  };
  auto eager_model = make(), model = make();
  optim::SGD eager_opt(eager_model->parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::SGD opt(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  auto train_step = compiled_step(opt);
  for (int i = 0; i < 4; ++i) {
    const Batch b = batch(i);
    eager_step(*eager_model, eager_opt, b);
    Tensor loss = train_step(*model, b.x, b.y);
    ASSERT_TRUE(loss.grad_fn() != nullptr);
    EXPECT_EQ(loss.grad_fn()->name(), "CompiledFunctionBackward");
    expect_close(*model, *eager_model);
  }
  const auto& bn = static_cast<const nn::BatchNorm1d&>(*model->children()[1]);
  const auto& eager_bn = static_cast<const nn::BatchNorm1d&>(*eager_model->children()[1]);
  const auto a = bn.running_mean.to_vector<double>(), e = eager_bn.running_mean.to_vector<double>();
  for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], e[k], 1e-5) << k;
  EXPECT_EQ(train_step.stats().compiles, 2);
}

TEST(CompiledTrainingStep, AChangedHyperparameterRecompilesWithTheReason) {
  auto model = make_mlp(6);
  optim::SGD opt(model->parameters(), {.lr = 0.1});
  auto train_step = compile(
      [&](nn::Module& m, const Tensor& x, const Tensor& y) {
        opt.zero_grad();
        cross_entropy(m(x), y).backward();
        opt.step();
      },
      options());
  train_step(*model, batch(0).x, batch(0).y);
  train_step(*model, batch(1).x, batch(1).y);
  EXPECT_EQ(train_step.stats().compiles, 1);
  opt.param_groups()[0].options["weight_decay"] = 0.01;
  train_step(*model, batch(2).x, batch(2).y);
  const capture::CompileStats stats = train_step.stats();
  EXPECT_EQ(stats.compiles, 2);
  ASSERT_FALSE(stats.recompile_reasons.empty());
  EXPECT_NE(stats.recompile_reasons.back().find("weight_decay == 0"), std::string::npos)
      << stats.recompile_reasons.back();
}

TEST(CompiledTrainingStep, BadUsesRaiseActionableErrors) {
  auto model = make_mlp(7);
  const Batch b = batch(0);
  // fullgraph: backward() is a graph break, named with the user's line.
  CompileOptions full = options();
  full.fullgraph = true;
  auto fullgraph = compile(
      [](nn::Module& m, const Tensor& x, const Tensor& y) { cross_entropy(m(x), y).backward(); },
      full);
  const std::string fullgraph_error = error_message([&] { fullgraph(*model, b.x, b.y); });
  EXPECT_NE(fullgraph_error.find("backward()"), std::string::npos) << fullgraph_error;
  EXPECT_NE(fullgraph_error.find("training_step_test.cpp"), std::string::npos) << fullgraph_error;
  // create_graph (double backward through a break) is not supported.
  auto create_graph = compile(
      [](nn::Module& m, const Tensor& x, const Tensor& y) {
        cross_entropy(m(x), y).backward(Tensor(), std::nullopt, /*create_graph=*/true);
      },
      options());
  const std::string create_graph_error = error_message([&] { create_graph(*model, b.x, b.y); });
  EXPECT_NE(create_graph_error.find("create_graph"), std::string::npos) << create_graph_error;
  // backward(inputs=...) is not supported inside a compiled function either.
  auto with_inputs = compile(
      [](nn::Module& m, const Tensor& x, const Tensor& y) {
        cross_entropy(m(x), y).backward(Tensor(), std::nullopt, false, m.parameters());
      },
      options());
  const std::string inputs_error = error_message([&] { with_inputs(*model, b.x, b.y); });
  EXPECT_NE(inputs_error.find("`inputs`"), std::string::npos) << inputs_error;
  EXPECT_NE(inputs_error.find("outside the compiled function"), std::string::npos) << inputs_error;
  // Setting a rate by hand inside the function would bake it into the graph.
  optim::SGD opt(model->parameters(), {.lr = 0.1});
  auto set_lr = compile(
      [&](nn::Module& m, const Tensor& x) {
        opt.set_lr(0, 0.5);
        return m(x);
      },
      options());
  const std::string set_lr_error = error_message([&] { set_lr(*model, b.x); });
  EXPECT_NE(set_lr_error.find("set_lr"), std::string::npos) << set_lr_error;
  EXPECT_NE(set_lr_error.find("outside the compiled function"), std::string::npos) << set_lr_error;
}

}  // namespace
}  // namespace kiln
