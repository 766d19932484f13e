// The torch:: front end's tensor-level names, optimizers, custom functions and files (See Note
// [The torch:: front end] in include/kiln/torch.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>

#include "kiln/compile.h"
#include "kiln/torch/autograd.h"
#include "kiln/torch/module_holder.h"
#include "kiln/torch/nn.h"
#include "kiln/torch/optim.h"
#include "kiln/torch/serialize.h"
#include "kiln/torch/tensor_ops.h"

namespace {

std::string printed(const auto& value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

TEST(TorchFrontEnd, FactoriesTakeLibTorchOptionsDevicesAndOneIntegerSize) {
  EXPECT_EQ(printed(torch::zeros(3).sizes()), "[3]");
  EXPECT_EQ(printed(torch::ones({2, 3}).sizes()), "[2, 3]");
  const torch::Device cpu(torch::kCPU);
  EXPECT_EQ(torch::empty(4, cpu).numel(), 4);
  EXPECT_EQ(torch::randn({2, 1, 1}, cpu).dim(), 3);
  EXPECT_EQ(torch::zeros({2, 3}, torch::kInt64).dtype(), torch::kLong);
  EXPECT_EQ(torch::full({2}, 2.0).dtype(), torch::kFloat);
  EXPECT_EQ(torch::full({2}, 2).dtype(), torch::kLong);  // as torch.full
  EXPECT_EQ(torch::arange(1, 5, torch::kFloat).to_vector<float>(),
            (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(torch::arange(6).dtype(), torch::kInt64);
  EXPECT_EQ(torch::tensor({1.0, 2.0}).dtype(), torch::kFloat);
  EXPECT_EQ(torch::tensor(int64_t{7}, torch::kInt64).dim(), 0);
  EXPECT_EQ(torch::randint(0, 10, {5}).dtype(), torch::kInt64);
  const torch::Tensor order = torch::randperm(50);
  std::vector<int64_t> sorted = order.to_vector<int64_t>();
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 50; ++i) EXPECT_EQ(sorted[static_cast<size_t>(i)], i);
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).requires_grad(true);
  for (const torch::Tensor& t :
       {torch::ones({2}, options), torch::zeros({2}, options), torch::randn({2, 3}, options)}) {
    EXPECT_TRUE(t.requires_grad());
    EXPECT_TRUE(t.is_leaf());
  }
}

TEST(TorchFrontEnd, CudaCanBeNamedButNotUsed) {
  EXPECT_FALSE(torch::cuda::is_available());
  const torch::Device cuda(torch::kCUDA);
  EXPECT_EQ(printed(cuda), "cuda");
  EXPECT_EQ(torch::Device("cuda:1").index(), 1);
  EXPECT_THROW(torch::Device("tpu"), kiln::ValueError);
  try {
    (void)torch::zeros({2}, cuda);
    ADD_FAILURE() << "a CUDA factory did not raise";
  } catch (const kiln::NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("torch::kCPU"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)torch::ones({2}).to(cuda), kiln::NotImplementedError);
}

TEST(TorchFrontEnd, SizesDtypesAndDevicesPrintAsLibTorchPrintsThem) {
  const torch::Tensor t = torch::zeros({2, 3});
  EXPECT_EQ(printed(t.sizes()), "[2, 3]");
  EXPECT_EQ(printed(t.dtype()), "float");
  EXPECT_EQ(printed(torch::zeros({1}, torch::kInt64).dtype()), "long int");
  EXPECT_EQ(printed(torch::zeros({1}, torch::kUInt8).dtype()), "unsigned char");
  EXPECT_EQ(printed(t.device()), "cpu");
  EXPECT_EQ(printed(torch::Device(torch::kCPU)), "cpu");
}

TEST(TorchFrontEnd, AccessorsAndElementAssignmentWriteInPlace) {
  torch::Tensor t = torch::arange(6, torch::kFloat32).view({2, 3});
  auto a = t.accessor<float, 2>();
  EXPECT_EQ(a.size(0), 2);
  EXPECT_EQ(a.size(1), 3);
  EXPECT_EQ(a[1][2], 5.0f);
  a[0][1] = 10;
  EXPECT_EQ(t[0][1].item<float>(), 10.0f);
  t[1][0] = 2.5;  // LibTorch's Tensor::operator=(Scalar) &&
  EXPECT_EQ(t[1][0].item<float>(), 2.5f);
  // A transposed tensor's accessor follows its strides.
  const torch::Tensor transposed = t.t();
  auto at = transposed.accessor<float, 2>();
  EXPECT_EQ(at[2][1], 5.0f);
  EXPECT_THROW(((void)t.accessor<float, 3>()), kiln::ShapeError);
  EXPECT_THROW(((void)t.accessor<double, 2>()), kiln::DTypeError);
}

TEST(TorchFrontEnd, UniformAndNormalFillInPlace) {
  torch::manual_seed(5);
  torch::Tensor u = torch::empty({20000}).uniform_(-2.0, 3.0);
  EXPECT_GE(u.min().item<float>(), -2.0f);
  EXPECT_LT(u.max().item<float>(), 3.0f);
  EXPECT_NEAR(u.mean().item<float>(), 0.5, 0.05);
  torch::Tensor n = torch::empty({20000}, torch::kFloat64).normal_(1.0, 2.0);
  EXPECT_NEAR(n.mean().item<double>(), 1.0, 0.06);
  EXPECT_NEAR(n.std().item<double>(), 2.0, 0.06);
  EXPECT_THROW(torch::zeros({2}, torch::kInt64).uniform_(), kiln::DTypeError);
  EXPECT_THROW(torch::zeros({2}).normal_(0, -1), kiln::ValueError);
}

TEST(TorchFrontEnd, AllcloseEqualAndTheGradModeGuard) {
  const torch::Tensor a = torch::tensor({1.0, 2.0}), b = torch::tensor({1.0, 2.000001});
  EXPECT_TRUE(torch::allclose(a, b));
  EXPECT_FALSE(torch::allclose(a, torch::tensor({1.0, 2.1})));
  EXPECT_TRUE(torch::equal(a, a.clone()));
  EXPECT_FALSE(torch::equal(a, b));
  EXPECT_FALSE(torch::equal(a, torch::ones({3})));
  const torch::Tensor w = torch::ones({2}, torch::requires_grad());
  {
    torch::AutoGradMode off(false);
    EXPECT_FALSE(torch::GradMode::is_enabled());
    EXPECT_FALSE((w * 2).requires_grad());
  }
  EXPECT_TRUE(torch::GradMode::is_enabled());
  EXPECT_TRUE((w * 2).requires_grad());
}

TEST(TorchFrontEnd, ChecksRaiseWithTheStreamedMessage) {
  try {
    TORCH_CHECK(1 + 1 == 3, "sizes ", torch::ones({2, 3}).sizes(), " are wrong");
    ADD_FAILURE() << "TORCH_CHECK did not raise";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("sizes [2, 3] are wrong"), std::string::npos) << e.what();
  }
  EXPECT_THROW(AT_ASSERT(false), kiln::Error);
  EXPECT_NO_THROW(TORCH_CHECK(true, "never"));
  EXPECT_EQ(std::string(torch::reduction_name(torch::Reduction::Sum)), "sum");
  EXPECT_THROW((void)torch::reduction_name(7), kiln::ValueError);
}

// ---- optimizers ----

TEST(TorchFrontEnd, OptimizerOptionsBuildKilnsOptimizers) {
  const torch::Tensor w = torch::ones({2}, torch::requires_grad());
  torch::optim::SGD sgd({w}, torch::optim::SGDOptions(0.1).momentum(0.5).nesterov(true));
  EXPECT_EQ(sgd.kiln_param_groups()[0].lr, 0.1);
  EXPECT_EQ(sgd.kiln_param_groups()[0].option("momentum"), 0.5);
  EXPECT_EQ(sgd.kiln_param_groups()[0].option("nesterov"), 1.0);
  torch::optim::SGD plain({w}, 0.25);  // SGDOptions converts from the rate, as in LibTorch
  EXPECT_EQ(plain.kiln_param_groups()[0].lr, 0.25);
  torch::optim::Adam adam({w}, torch::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.999)));
  EXPECT_EQ(adam.kiln_param_groups()[0].option("beta1"), 0.5);
  // One step as in LibTorch: w -= lr * grad with plain SGD.
  (w * 3).sum().backward();
  torch::optim::Optimizer& opt = plain;
  opt.step();
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{0.25f, 0.25f}));
  opt.zero_grad();
  EXPECT_FALSE(w.grad().defined());
}

// LibTorch's LR-decay idiom writes through to the running optimizer, and Kiln's schedulers'
// changes show in LibTorch's groups (Note [LibTorch's param groups over Kiln's]).
TEST(TorchFrontEnd, ParamGroupOptionsChangeTheRunningOptimizer) {
  const torch::Tensor w = torch::ones({1}, torch::requires_grad());
  torch::optim::SGD opt({w}, torch::optim::SGDOptions(0.1).momentum(0.0));
  auto& options = static_cast<torch::optim::SGDOptions&>(opt.param_groups()[0].options());
  EXPECT_EQ(options.lr(), 0.1);
  options.lr(0.5);
  (w * 2).sum().backward();
  opt.step();
  EXPECT_FLOAT_EQ(w.item<float>(), 1.0f - 0.5f * 2.0f);
  // Adam's betas and a weight decay, changed the same way.
  torch::optim::Adam adam({w}, torch::optim::AdamOptions(1e-3));
  static_cast<torch::optim::AdamOptions&>(adam.param_groups()[0].options())
      .betas(std::make_tuple(0.5, 0.9))
      .weight_decay(0.25);
  EXPECT_EQ(adam.kiln_param_groups()[0].option("beta1"), 0.5);
  EXPECT_EQ(adam.kiln_param_groups()[0].option("weight_decay"), 0.25);
  // A scheduler writes Kiln's group; the options object, read again, says so, and still lives
  // where it was.
  torch::optim::StepLR scheduler(opt, /*step_size=*/1, /*gamma=*/0.5);
  scheduler.step();
  auto& again = static_cast<torch::optim::SGDOptions&>(opt.param_groups()[0].options());
  EXPECT_EQ(&again, &options);
  EXPECT_DOUBLE_EQ(again.lr(), 0.25);
  // set_lr on the base class too.
  opt.set_lr(0, 0.125);
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].options().get_lr(), 0.125);
  torch::optim::OptimizerParamGroup bare(std::vector<torch::Tensor>{w});
  EXPECT_THROW(bare.options(), kiln::ValueError);
}

TEST(TorchFrontEnd, ParamGroupsTakeTheirOwnOptions) {
  const torch::Tensor a = torch::ones({1}, torch::requires_grad()),
                      b = torch::ones({1}, torch::requires_grad());
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<torch::Tensor>{a});
  groups.emplace_back(
      std::vector<torch::Tensor>{b},
      std::make_unique<torch::optim::SGDOptions>(torch::optim::SGDOptions(0.5).weight_decay(0.1)));
  torch::optim::SGD opt(groups, torch::optim::SGDOptions(0.01));
  ASSERT_EQ(opt.param_groups().size(), 2u);
  EXPECT_EQ(opt.param_groups()[0].options().get_lr(), 0.01);
  EXPECT_EQ(opt.param_groups()[1].options().get_lr(), 0.5);
  EXPECT_EQ(static_cast<torch::optim::SGDOptions&>(opt.param_groups()[1].options()).weight_decay(),
            0.1);
  EXPECT_EQ(opt.param_groups()[1].params().size(), 1u);
  (a + b).sum().backward();
  opt.step();
  EXPECT_FLOAT_EQ(a.item<float>(), 1.0f - 0.01f);
  EXPECT_FLOAT_EQ(b.item<float>(), 1.0f - 0.5f * (1.0f + 0.1f));
}

// ---- custom autograd functions ----

struct MulConstant : torch::autograd::Function<MulConstant> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x, double c) {
    ctx->saved_data["c"] = c;
    ctx->save_for_backward({x});
    return x * c;
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const torch::Tensor x = ctx->get_saved_variables()[0];
    EXPECT_TRUE(x.defined());
    return {grads[0] * ctx->saved_data["c"].toDouble(), torch::Tensor()};
  }
};

struct LinearFunction : torch::autograd::Function<LinearFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor input,
                               torch::Tensor weight, torch::Tensor bias = torch::Tensor()) {
    ctx->save_for_backward({input, weight, bias});
    torch::Tensor out = input.mm(weight.t());
    if (bias.defined()) out = out + bias.unsqueeze(0).expand_as(out);
    return out;
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& input = saved[0];
    const torch::Tensor& weight = saved[1];
    const torch::Tensor& bias = saved[2];
    const torch::Tensor g = grads[0];
    return {g.mm(weight), g.t().mm(input), bias.defined() ? g.sum(0) : torch::Tensor()};
  }
};

struct WrongGradientCount : torch::autograd::Function<WrongGradientCount> {
  static torch::Tensor forward(torch::autograd::AutogradContext*, torch::Tensor x) { return x * 2; }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext*,
                                               torch::autograd::tensor_list grads) {
    return {grads[0], grads[0]};
  }
};

struct Identity : torch::autograd::Function<Identity> {
  static torch::Tensor forward(torch::autograd::AutogradContext*, torch::Tensor x) { return x; }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext*,
                                               torch::autograd::tensor_list grads) {
    return {grads[0] * 3};
  }
};

TEST(TorchFrontEnd, ACustomFunctionsBackwardGivesTheGradients) {
  const torch::Tensor x = torch::randn({3}, torch::requires_grad());
  torch::Tensor y = MulConstant::apply(x, 5.5);
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_NE(y.grad_fn()->name().find("MulConstant"), std::string::npos) << y.grad_fn()->name();
  y.sum().backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>(3, 5.5f)));
  MulConstant::apply(x, 5.5).sum().backward();  // accumulates
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>(3, 11.0f)));
}

// A custom function's backward is C++ that no compiled graph holds (Note [Custom functions under
// a trace]): one that needs a gradient refuses to be traced instead of losing its gradient, and
// one under no-grad compiles like any code.
TEST(TorchFrontEnd, ACompiledCustomFunctionRefusesToLoseItsGradient) {
  for (const char* backend : {"eager", "inductor"}) {
    SCOPED_TRACE(backend);
    std::function<torch::Tensor(torch::Tensor)> f = [](torch::Tensor x) {
      return (MulConstant::apply(x.sin(), 5.5) + x).sum();
    };
    auto compiled = kiln::compile(f, {.backend = backend});
    const torch::Tensor x = torch::randn({3}, torch::requires_grad());
    try {
      compiled(x);
      FAIL() << "no error";
    } catch (const kiln::NotImplementedError& e) {
      EXPECT_NE(std::string(e.what()).find("MulConstant::apply"), std::string::npos) << e.what();
    }
    torch::NoGradGuard no_grad;
    const torch::Tensor y = compiled(x);
    EXPECT_TRUE(torch::allclose(y, (x.sin() * 5.5 + x).sum()));
  }
}

TEST(TorchFrontEnd, ACustomLinearMatchesKilnsGradients) {
  torch::manual_seed(2);
  const auto f64 = torch::TensorOptions(torch::kFloat64).requires_grad(true);
  const torch::Tensor x = torch::randn({2, 3}, f64), w = torch::randn({4, 3}, f64),
                      b = torch::randn({4}, f64);
  LinearFunction::apply(x, w, b).pow(2).sum().backward();
  const torch::Tensor x2 = x.detach().clone().requires_grad_(true),
                      w2 = w.detach().clone().requires_grad_(true),
                      b2 = b.detach().clone().requires_grad_(true);
  kiln::linear(x2, w2, b2).pow(2).sum().backward();
  EXPECT_TRUE(torch::allclose(x.grad(), x2.grad()));
  EXPECT_TRUE(torch::allclose(w.grad(), w2.grad()));
  EXPECT_TRUE(torch::allclose(b.grad(), b2.grad()));
  // The default bias argument: no bias gradient, and an input that needs none gets none.
  const torch::Tensor z = torch::randn({2, 3}, torch::kFloat64);
  const torch::Tensor w3 = w.detach().clone().requires_grad_(true);
  LinearFunction::apply(z, w3).sum().backward();
  EXPECT_FALSE(z.grad().defined());
  EXPECT_TRUE(w3.grad().defined());
  // torch::autograd::grad returns the gradient without touching .grad().
  const torch::Tensor v = torch::randn({2, 3}, f64);
  const auto g = torch::autograd::grad({LinearFunction::apply(v, w.detach()).sum()}, {v});
  EXPECT_TRUE(g[0].defined());
  EXPECT_FALSE(v.grad().defined());
}

TEST(TorchFrontEnd, ACustomFunctionIsCheckedLikeKilnsOwnNodes) {
  const torch::Tensor x = torch::randn({3}, torch::requires_grad());
  EXPECT_THROW(WrongGradientCount::apply(x).sum().backward(), kiln::ValueError);
  // A saved input modified in place before backward raises instead of a wrong gradient.
  torch::Tensor base = torch::randn({3});
  const torch::Tensor leaf = torch::randn({3}, torch::requires_grad());
  torch::Tensor input = leaf * 1;
  torch::Tensor y = MulConstant::apply(input, 2.0);
  {
    torch::NoGradGuard no_grad;
    input.add_(1);
  }
  EXPECT_THROW(y.sum().backward(), kiln::Error);
  // An output that is its input is a new alias: the input keeps its own history.
  torch::Tensor same = Identity::apply(leaf);
  EXPECT_FALSE(same.is_same(leaf));
  EXPECT_TRUE(leaf.is_leaf());
  same.sum().backward();
  EXPECT_EQ(leaf.grad().to_vector<float>(), (std::vector<float>(3, 3.0f)));
  // No input requires grad: no node.
  EXPECT_EQ(MulConstant::apply(base, 2.0).grad_fn(), nullptr);
}

// ---- files ----

class TorchFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("kiln_torch_files_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

struct TinyImpl : torch::nn::Module {
  TinyImpl() {
    w = register_parameter("w", torch::randn({3}));
    register_buffer("steps", torch::zeros({1}, torch::kInt64));
  }
  torch::Tensor w;
};
TORCH_MODULE(Tiny);

TEST_F(TorchFiles, ModulesOptimizersAndTensorsRoundTrip) {
  Tiny saved;
  torch::optim::Adam adam(saved->parameters(), torch::optim::AdamOptions(0.1));
  (saved->w * saved->w).sum().backward();
  adam.step();
  torch::save(saved, path("m.pt"));
  torch::save(adam, path("o.pt"));
  Tiny loaded;
  torch::load(loaded, path("m.pt"));
  EXPECT_TRUE(torch::equal(loaded->w, saved->w));
  torch::optim::Adam adam2(loaded->parameters(), torch::optim::AdamOptions(0.1));
  torch::load(adam2, path("o.pt"));
  // The restored moments make the next step the same.
  adam.zero_grad();
  for (auto* p : {&saved, &loaded}) ((*p)->w * (*p)->w).sum().backward();
  adam.step();
  adam2.step();
  EXPECT_TRUE(torch::equal(loaded->w, saved->w));

  const torch::Tensor t = torch::arange(6).view({2, 3});
  torch::save(t, path("t.pt"));
  torch::Tensor back;
  torch::load(back, path("t.pt"));
  EXPECT_TRUE(torch::equal(back, t));
  // The wrong kind of file says what it holds.
  try {
    torch::load(back, path("m.pt"));
    ADD_FAILURE() << "loading a module file as a tensor did not raise";
  } catch (const kiln::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("module"), std::string::npos) << e.what();
  }
  EXPECT_THROW(torch::load(loaded, path("missing.pt")), kiln::Error);
}

}  // namespace

// ---- torch::compile over a LibTorch-style user module ----

struct TwoLayerImpl : torch::nn::Module {
  TwoLayerImpl() : fc1(4, 8), drop(0.5), fc2(8, 3) {
    register_module("fc1", fc1);
    register_module("drop", drop);
    register_module("fc2", fc2);
  }
  torch::Tensor forward(torch::Tensor x) { return fc2(drop(torch::relu(fc1(x)))); }
  torch::nn::Linear fc1;
  torch::nn::Dropout drop;
  torch::nn::Linear fc2;
};
TORCH_MODULE(TwoLayer);

TEST(TorchFrontEnd, ACompiledForwardFollowsTrainEvalWeightsAndTwoModules) {
  torch::manual_seed(7);
  TwoLayer a, b;
  using Forward = std::function<torch::Tensor(TwoLayerImpl&, torch::Tensor)>;
  Forward eager = [](TwoLayerImpl& m, torch::Tensor x) { return m.forward(x); };
  Forward compiled = torch::compile(eager, {.backend = "eager"});
  const torch::Tensor x = torch::randn({5, 4});
  for (TwoLayer* m : {&a, &b}) {
    (*m)->eval();
    EXPECT_TRUE(torch::allclose(compiled(**m, x), eager(**m, x)));
    // Training mode is guarded: the compiled forward applies dropout, unlike the eval graph.
    (*m)->train();
    const torch::Tensor trained = compiled(**m, x);
    (*m)->eval();
    EXPECT_FALSE(torch::allclose(trained, eager(**m, x)));
    // A weight changed in place between calls is read fresh.
    {
      torch::NoGradGuard no_grad;
      (*m)->fc2->weight.mul_(2);
    }
    EXPECT_TRUE(torch::allclose(compiled(**m, x), eager(**m, x)));
    // Sizes 0 and 1.
    EXPECT_EQ(compiled(**m, torch::randn({0, 4})).size(0), 0);
    EXPECT_TRUE(torch::allclose(compiled(**m, x.narrow(0, 0, 1)), eager(**m, x.narrow(0, 0, 1))));
  }
  EXPECT_FALSE(torch::allclose(compiled(*a, x), compiled(*b, x)));
}

namespace {
// `model->to(torch::kCPU)` with a bare device type, as LibTorch's tutorials write it.
TEST(TorchFrontEnd, AModuleMovesToABareDeviceType) {
  torch::nn::Linear linear(2, 2);
  linear->to(torch::kCPU);
  linear->to(torch::kCPU, torch::kFloat64);
  EXPECT_EQ(linear->weight.dtype(), torch::kFloat64);
  EXPECT_THROW(linear->to(torch::kCUDA), kiln::NotImplementedError);
}
}  // namespace
