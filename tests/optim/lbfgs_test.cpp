// LBFGS (kiln/optim/lbfgs.h) against torch.optim.LBFGS of PyTorch 1.13: the iterates on the
// Rosenbrock function from (-1.5, 2), with a fixed step, with the strong-Wolfe line search and
// with a history shorter than the iterations, and a least-squares fit; the state dict; bad
// options. (The torch:: front end's LBFGS is tested in tests/torch/lbfgs_test.cpp.) The literals
// were printed by tests/data/gen_lbfgs.py.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/compile.h"
#include "kiln/kiln.h"

namespace kiln::optim {
namespace {

struct Iterate {
  double loss;            // what step() returned: the loss at the step's start
  std::vector<double> p;  // the parameters after the step
  int64_t func_evals;     // the state's counters after the step
  int64_t n_iter;
};

// kFixedStep: LBFGS(lr=0.1, max_iter=5), 4 steps
const std::vector<Iterate> kFixedStep = {
    {12.5, {-1.422704506882964, 2.0240334188679774}, 5, 5},
    {5.8694974268257338, {-1.419900377141577, 2.0211706896011381}, 10, 10},
    {5.8584717312724299, {-1.4150083583808064, 2.0130458780729557}, 15, 15},
    {5.8439233751963808, {-1.4043758711403123, 1.9909841899017009}, 20, 20},
};
// kStrongWolfe: LBFGS(lr=1, max_iter=6, line_search_fn='strong_wolfe'), 4 steps (each stops at
// max_eval = 7)
const std::vector<Iterate> kStrongWolfe = {
    {12.5, {-1.4142309487677067, 1.9949020404366438}, 7, 5},
    {5.8311603749043002, {-0.96290989250804482, 0.91540875708390068}, 14, 11},
    {3.8669078852383407, {-0.49933158243679482, 0.19765759278617157}, 21, 15},
    {2.515019932155746, {-0.085118555898620885, -0.028757058413776328}, 28, 19},
};
// kShortHistory: LBFGS(lr=1, max_iter=8, history_size=2, line_search_fn='strong_wolfe'), 3 steps
const std::vector<Iterate> kShortHistory = {
    {12.5, {-1.1905411940354256, 1.3605743407764024}, 10, 8},
    {5.1212537132677669, {-0.32824105780440305, 0.082123800792011384}, 20, 14},
    {1.8298545045922132, {0.52316980606231334, 0.2633872827062515}, 30, 22},
};

Tensor rosenbrock(const Tensor& x, const Tensor& y) {
  const Tensor a = 1.0 - x, b = y - x * x;
  return (a * a + 100.0 * (b * b)).sum();
}

Tensor rosenbrock(const Tensor& p) { return rosenbrock(p.slice(0, 0, 1), p.slice(0, 1, 2)); }

int64_t counter(const Optimizer& opt, const Tensor& p, const std::string& name) {
  return opt.find_state(p)->at(name).item<int64_t>();
}

// The iterates agree to `tol`: PyTorch's dot products (BLAS) and Kiln's round differently in the
// last bit, which the ill-conditioned Rosenbrock valley amplifies over many iterations (PyTorch
// with its dots written as sums moves its own 3rd short-history iterate by 1e-10).
void expect_iterates(LBFGSOptions options, const std::vector<Iterate>& expected,
                     double tol = 1e-9) {
  Tensor p = tensor({-1.5, 2.0}, kFloat64).requires_grad_();
  LBFGS opt({p}, options);
  auto closure = [&] {
    opt.zero_grad();
    Tensor loss = rosenbrock(p);
    loss.backward();
    return loss;
  };
  for (size_t k = 0; k < expected.size(); ++k) {
    SCOPED_TRACE("step " + std::to_string(k + 1));
    const Tensor loss = opt.step(closure);
    EXPECT_NEAR(loss.item<double>(), expected[k].loss, tol * (1 + std::abs(expected[k].loss)));
    const std::vector<double> got = p.detach().to_vector<double>();
    for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(got[i], expected[k].p[i], tol) << i;
    EXPECT_EQ(counter(opt, p, "func_evals"), expected[k].func_evals);
    EXPECT_EQ(counter(opt, p, "n_iter"), expected[k].n_iter);
  }
}

// ---- against PyTorch ----

TEST(LBFGSReference, RosenbrockWithAFixedStep) {
  expect_iterates({.lr = 0.1, .max_iter = 5}, kFixedStep);
}

TEST(LBFGSReference, RosenbrockWithTheStrongWolfeLineSearch) {
  expect_iterates({.lr = 1, .max_iter = 6, .line_search_fn = "strong_wolfe"}, kStrongWolfe);
}

TEST(LBFGSReference, RosenbrockWithAHistoryShorterThanTheIterations) {
  expect_iterates({.lr = 1, .max_iter = 8, .history_size = 2, .line_search_fn = "strong_wolfe"},
                  kShortHistory, /*tol=*/1e-7);
}

TEST(LBFGSReference, ParametersSplitOverTensorsGiveTheSameIterates) {
  // x and y as two parameters (one 0-dim): LBFGS works on their concatenation.
  Tensor x = full({}, -1.5, kFloat64).requires_grad_();
  Tensor y = full({1}, 2.0, kFloat64).requires_grad_();
  LBFGS opt({x, y}, {.lr = 1, .max_iter = 6, .line_search_fn = "strong_wolfe"});
  auto closure = [&] {
    opt.zero_grad();
    Tensor loss = rosenbrock(x.reshape({1}), y);
    loss.backward();
    return loss;
  };
  for (const Iterate& expected : kStrongWolfe) {
    opt.step(closure);
    EXPECT_NEAR(x.item<double>(), expected.p[0], 1e-9);
    EXPECT_NEAR(y.item<double>(), expected.p[1], 1e-9);
  }
  // The global state lives with the first parameter, as PyTorch's.
  EXPECT_EQ(counter(opt, x, "n_iter"), kStrongWolfe.back().n_iter);
  EXPECT_EQ(opt.find_state(y), nullptr);
}

TEST(LBFGSReference, LeastSquaresConvergesToTheSolution) {
  // y = X w + b, X[i, j] = sin(0.7 (i + 1) (j + 1)), y[i] = cos(3 i); PyTorch's iterates (the
  // same with and without the line search) and the least-squares solution.
  std::vector<double> xs, ys;
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 3; ++j) xs.push_back(std::sin(0.7 * (i + 1) * (j + 1)));
    ys.push_back(std::cos(3.0 * i));
  }
  const Tensor X = from_vector(xs, std::vector<int64_t>{8, 3});
  const Tensor Y = from_vector(ys, std::vector<int64_t>{8, 1});
  const std::vector<double> solution = {0.056418154034897944, 0.13076103897527, 0.2744774351431884,
                                        0.033154826577843688};
  const std::vector<double> after = {0.056421720571775559, 0.130764420499139, 0.27448889289554979,
                                     0.033154608259494733};
  const double losses[] = {0.72777591711378053, 0.6645912398988385, 0.6645912398988385};
  for (const char* line_search : {"", "strong_wolfe"}) {
    SCOPED_TRACE(line_search);
    nn::Linear model(3, 1);
    model.to(kFloat64);
    {
      NoGradGuard no_grad;
      model.weight.copy_(tensor({0.1, -0.2, 0.3}, kFloat64).reshape({1, 3}));
      model.bias.fill_(0.05);
    }
    LBFGS opt(model.parameters(), {.lr = 1, .max_iter = 20, .line_search_fn = line_search});
    auto closure = [&] {
      opt.zero_grad();
      const Tensor r = model.forward(X) - Y;
      Tensor loss = (r * r).mean();
      loss.backward();
      return loss;
    };
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR(opt.step(closure).item<double>(), losses[k], 1e-12) << k;
      EXPECT_EQ(counter(opt, model.weight, "n_iter"), 5 + k);
    }
    std::vector<double> got = model.weight.detach().to_vector<double>();
    got.push_back(model.bias.item<double>());
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_NEAR(got[i], after[i], 1e-12) << i;
      EXPECT_NEAR(got[i], solution[i], 1e-4) << i;
    }
  }
}

TEST(LBFGS, Float32ParametersFollowTheFloat64Iterates) {
  Tensor p = tensor({-1.5, 2.0}, kFloat32).requires_grad_();
  LBFGS opt({p}, {.lr = 1, .max_iter = 6, .line_search_fn = "strong_wolfe"});
  auto closure = [&] {
    opt.zero_grad();
    Tensor loss = rosenbrock(p);
    loss.backward();
    return loss;
  };
  opt.step(closure);
  EXPECT_EQ(p.dtype(), kFloat32);
  EXPECT_NEAR(p.detach().to_vector<double>()[0], kStrongWolfe[0].p[0], 1e-4);
  EXPECT_EQ(opt.find_state(p)->at("d").dtype(), kFloat32);
}

TEST(LBFGS, StopsAtOnceWhenTheGradientIsBelowTolerance) {
  Tensor p = tensor({1.0, 1.0}, kFloat64).requires_grad_();  // the minimum
  LBFGS opt({p});
  int calls = 0;
  const Tensor loss = opt.step([&] {
    ++calls;
    opt.zero_grad();
    Tensor l = rosenbrock(p);
    l.backward();
    return l;
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(loss.item<double>(), 0.0);
  EXPECT_EQ(counter(opt, p, "func_evals"), 1);
  EXPECT_EQ(counter(opt, p, "n_iter"), 0);
  EXPECT_EQ(opt.find_state(p)->count("d"), 0u);
}

TEST(LBFGS, TheClosureRunsWithGradEnabled) {
  Tensor p = tensor({-1.5, 2.0}, kFloat64).requires_grad_();
  LBFGS opt({p}, {.max_iter = 2});
  NoGradGuard no_grad;  // the caller's mode does not reach the closure
  opt.step([&] {
    EXPECT_TRUE(GradMode::is_enabled());
    opt.zero_grad();
    Tensor l = rosenbrock(p);
    l.backward();
    return l;
  });
  EXPECT_NE(p.detach().to_vector<double>()[0], -1.5);
}

// ---- state dict ----

TEST(LBFGS, StateDictRoundTripContinuesTheSameIterates) {
  const LBFGSOptions options{.lr = 1, .max_iter = 6, .line_search_fn = "strong_wolfe"};
  Tensor p = tensor({-1.5, 2.0}, kFloat64).requires_grad_();
  LBFGS opt({p}, options);
  auto closure_for = [](Optimizer& o, const Tensor& q) {
    return [&o, q] {
      o.zero_grad();
      Tensor loss = rosenbrock(q);
      loss.backward();
      return loss;
    };
  };
  opt.step(closure_for(opt, p));
  opt.step(closure_for(opt, p));
  const StateDict saved = opt.state_dict();
  for (const char* key : {"state.0.func_evals", "state.0.n_iter", "state.0.d", "state.0.t",
                          "state.0.old_dirs.0", "state.0.old_stps.0", "state.0.ro.0",
                          "state.0.H_diag", "state.0.prev_flat_grad", "state.0.prev_loss"})
    EXPECT_TRUE(saved.tensors.contains(key)) << key;
  EXPECT_EQ(saved.values.at("param_groups.0.max_eval"), "7");
  EXPECT_EQ(saved.values.at("param_groups.0.line_search_fn"), "1");

  Tensor q = p.detach().clone().requires_grad_();
  LBFGS resumed({q}, {.lr = 1});  // options come from the dict
  resumed.load_state_dict(saved);
  for (size_t k = 2; k < kStrongWolfe.size(); ++k) {
    opt.step(closure_for(opt, p));
    resumed.step(closure_for(resumed, q));
    EXPECT_EQ(q.detach().to_vector<double>(), p.detach().to_vector<double>()) << k;
    EXPECT_NEAR(q.detach().to_vector<double>()[0], kStrongWolfe[k].p[0], 1e-9);
  }
  EXPECT_EQ(counter(resumed, q, "func_evals"), kStrongWolfe.back().func_evals);

  // A state for other parameters is refused, and leaves the optimizer as it was.
  Tensor r = tensor({0.0, 0.0, 0.0}, kFloat64).requires_grad_();
  LBFGS other({r});
  EXPECT_THROW(other.load_state_dict(saved), ShapeError);
  EXPECT_EQ(other.find_state(r), nullptr);
}

// ---- bad options and uses ----

template <typename E, typename F>
void expect_error_naming_lbfgs(F&& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "expected an error mentioning '" << fragment << "'";
  } catch (const E& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("LBFGS"), std::string::npos) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
  }
}

TEST(LBFGSErrors, BadOptionsNameLBFGSAndTheOption) {
  auto p = [] { return tensor({1.0, 2.0}, kFloat64).requires_grad_(); };
  expect_error_naming_lbfgs<ValueError>([&] { LBFGS({p()}, {.lr = 0}); }, "learning rate 0");
  expect_error_naming_lbfgs<ValueError>([&] { LBFGS({p()}, {.lr = -1}); }, "must be > 0");
  expect_error_naming_lbfgs<ValueError>([&] { LBFGS({p()}, {.history_size = 0}); }, "history_size");
  expect_error_naming_lbfgs<ValueError>([&] { LBFGS({p()}, {.max_iter = 0}); }, "max_iter");
  expect_error_naming_lbfgs<ValueError>([&] { LBFGS({p()}, {.max_eval = 0}); }, "max_eval");
  expect_error_naming_lbfgs<ValueError>([&] { LBFGS({p()}, {.tolerance_grad = -1}); },
                                        "tolerance_grad");
  expect_error_naming_lbfgs<ValueError>([&] { LBFGS({p()}, {.line_search_fn = "armijo"}); },
                                        "line_search_fn");
  expect_error_naming_lbfgs<DTypeError>(
      [&] {
        LBFGS({p(), tensor({1.0}, kFloat32).requires_grad_()});
      },
      "one dtype");
}

TEST(LBFGSErrors, OneParameterGroupOnly) {
  std::vector<ParamGroup> groups(2);
  groups[0].params = {tensor({1.0}, kFloat64).requires_grad_()};
  groups[1].params = {tensor({2.0}, kFloat64).requires_grad_()};
  expect_error_naming_lbfgs<ValueError>([&] { LBFGS(groups, {}); }, "parameter groups");
  LBFGS opt({tensor({1.0}, kFloat64).requires_grad_()});
  expect_error_naming_lbfgs<ValueError>(
      [&] { opt.add_param_group({.params = {tensor({3.0}, kFloat64).requires_grad_()}}); },
      "parameter groups");
  EXPECT_EQ(opt.param_groups().size(), 1u);
}

TEST(LBFGSErrors, StepNeedsAClosureReturningTheLoss) {
  Tensor p = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  LBFGS opt({p});
  expect_error_naming_lbfgs<ValueError>([&] { opt.step(); }, "step(closure)");
  expect_error_naming_lbfgs<ValueError>([&] { opt.step(LBFGS::Closure()); }, "empty closure");
  expect_error_naming_lbfgs<ValueError>([&] { opt.step([&] { return p * 2.0; }); },
                                        "one-element tensor");
}

TEST(LBFGSErrors, StepInsideACompiledFunctionIsRefused) {
  Tensor p = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  LBFGS opt({p});
  auto stepping = compile(
      [&](const Tensor& x) {
        opt.step([&] {
          opt.zero_grad();
          Tensor l = rosenbrock(p);
          l.backward();
          return l;
        });
        return x * 2.0;
      },
      {.fullgraph = true});
  expect_error_naming_lbfgs<NotImplementedError>([&] { stepping(p.detach()); },
                                                 "compiled function");
}

}  // namespace
}  // namespace kiln::optim
