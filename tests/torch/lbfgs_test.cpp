// torch::optim::LBFGS (kiln/torch/optim.h): LibTorch's options builder and step(closure) reach
// Kiln's LBFGS (tested against PyTorch in tests/optim/lbfgs_test.cpp).
#include <gtest/gtest.h>

#include <vector>

#include "kiln/ops/binary.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/reduce.h"
#include "kiln/torch/optim.h"

namespace {

using kiln::Tensor;
using kiln::optim::LBFGSOptions;

Tensor rosenbrock(const Tensor& p) {
  const Tensor x = p.slice(0, 0, 1), y = p.slice(0, 1, 2);
  const Tensor a = 1.0 - x, b = y - x * x;
  return (a * a + 100.0 * (b * b)).sum();
}

LBFGSOptions options_of(const kiln::optim::Optimizer& opt) {
  return kiln::optim::LBFGS::group_options(opt.param_groups()[0]);
}

TEST(TorchOptimLBFGS, TakesLibTorchsOptionsAndAClosure) {
  torch::Tensor p = kiln::tensor({-1.5, 2.0}, kiln::kFloat64).requires_grad_();
  torch::optim::LBFGS opt(
      std::vector<torch::Tensor>{p},
      torch::optim::LBFGSOptions(1).max_iter(6).history_size(100).line_search_fn("strong_wolfe"));
  torch::optim::LossClosure closure = [&] {
    opt.zero_grad();
    torch::Tensor loss = rosenbrock(p);
    loss.backward();
    return loss;
  };
  const torch::Tensor loss = opt.step(closure);
  EXPECT_EQ(loss.item<double>(), 12.5);  // the loss at the start of the step
  // PyTorch 1.13's first iterate (tests/data/gen_lbfgs.py, kStrongWolfe).
  EXPECT_NEAR(p.detach().to_vector<double>()[0], -1.4142309487677067, 1e-9);
  EXPECT_NEAR(p.detach().to_vector<double>()[1], 1.9949020404366438, 1e-9);
  const LBFGSOptions o = options_of(opt);
  EXPECT_EQ(o.max_eval, 7);  // max_iter * 5 / 4
  EXPECT_EQ(o.tolerance_grad, 1e-7);
  EXPECT_EQ(o.tolerance_change, 1e-9);
  EXPECT_EQ(o.line_search_fn, "strong_wolfe");
}

TEST(TorchOptimLBFGS, DefaultsAreLibTorchsAndBadOptionsAreRefused) {
  torch::Tensor p = kiln::tensor({1.0, 2.0}, kiln::kFloat64).requires_grad_();
  const LBFGSOptions o = options_of(torch::optim::LBFGS(std::vector<torch::Tensor>{p}));
  EXPECT_EQ(o.lr, 1);
  EXPECT_EQ(o.max_iter, 20);
  EXPECT_EQ(o.max_eval, 25);
  EXPECT_EQ(o.history_size, 100);
  EXPECT_EQ(o.line_search_fn, "");
  EXPECT_THROW(torch::optim::LBFGS(std::vector<torch::Tensor>{p},
                                   torch::optim::LBFGSOptions(1).line_search_fn("wolfe")),
               kiln::ValueError);
  EXPECT_THROW(
      torch::optim::LBFGS(std::vector<torch::Tensor>{p}, torch::optim::LBFGSOptions(1).max_eval(0)),
      kiln::ValueError);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<torch::Tensor>{p});
  groups.emplace_back(
      std::vector<torch::Tensor>{kiln::tensor({3.0}, kiln::kFloat64).requires_grad_()});
  EXPECT_THROW(torch::optim::LBFGS(groups, torch::optim::LBFGSOptions(1)), kiln::ValueError);
}

}  // namespace
