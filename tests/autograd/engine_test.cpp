// The autograd engine: graph recording, accumulation, retain/create graph, kiln::grad, grad mode,
// hooks, anomaly mode, saved-tensor version checks.
#include <gtest/gtest.h>

#include "kiln/kiln.h"

namespace kiln {
namespace {

Tensor vec(std::initializer_list<double> v) { return tensor(v, kFloat64); }

void expect_values(const Tensor& t, std::vector<double> expected, double tol = 1e-12) {
  ASSERT_TRUE(t.defined());
  std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tol) << "at " << i;
}

TEST(Autograd, LeafFlagsAndRequiresGrad) {
  Tensor x = vec({1, 2, 3});
  EXPECT_FALSE(x.requires_grad());
  EXPECT_TRUE(x.is_leaf());
  x.requires_grad_();
  EXPECT_TRUE(x.requires_grad());
  Tensor y = x * x;
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "MulBackward");
  Tensor z = vec({1, 2, 3}) * 2.0;
  EXPECT_FALSE(z.requires_grad());
  EXPECT_EQ(z.grad_fn(), nullptr);
}

TEST(Autograd, IntegerTensorsCannotRequireGrad) {
  Tensor i = tensor({1, 2});
  EXPECT_THROW(i.requires_grad_(), DTypeError);
}

TEST(Autograd, BackwardAccumulatesIntoLeaves) {
  Tensor x = vec({1, 2, 3}).requires_grad_();
  Tensor y = (x * x).sum();  // dy/dx = 2x
  y.backward();
  expect_values(x.grad(), {2, 4, 6});
  // A second graph accumulates into the same grad.
  (x * 3.0).sum().backward();
  expect_values(x.grad(), {5, 7, 9});
}

TEST(Autograd, SharedInputsSumTheirGradients) {
  Tensor x = vec({1, 2}).requires_grad_();
  Tensor a = x * 2.0;
  Tensor y = (a * x + a).sum();  // y = 2x^2 + 2x -> 4x + 2
  y.backward();
  expect_values(x.grad(), {6, 10});
}

TEST(Autograd, BroadcastGradientsAreSummedToTheInputShape) {
  Tensor x = vec({1, 2, 3}).reshape({3, 1}).requires_grad_();
  Tensor w = vec({1, 10}).reshape({1, 2}).requires_grad_();
  (x * w).sum().backward();
  expect_values(x.grad(), {11, 11, 11});
  expect_values(w.grad(), {6, 6});
  EXPECT_EQ(x.grad().sizes(), IntArrayRef({3, 1}));
}

TEST(Autograd, MixedDtypesCastGradientsBack) {
  Tensor x = tensor({1.0, 2.0}, kFloat32).requires_grad_();
  Tensor w = vec({3, 4}).requires_grad_();
  Tensor y = (x * w).sum();  // float64
  EXPECT_EQ(y.dtype(), kFloat64);
  y.backward();
  EXPECT_EQ(x.grad().dtype(), kFloat32);
  expect_values(x.grad(), {3, 4});
}

TEST(Autograd, SecondBackwardWithoutRetainGraphIsAnError) {
  Tensor x = vec({1, 2}).requires_grad_();
  Tensor y = (x * x).sum();
  y.backward(Tensor(), /*retain_graph=*/true);
  y.backward();
  expect_values(x.grad(), {4, 8});
  try {
    y.backward();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("retain_graph=true"), std::string::npos) << e.what();
  }
}

TEST(Autograd, FunctionalGradDoesNotTouchDotGrad) {
  Tensor x = vec({1, 2, 3}).requires_grad_();
  Tensor y = (x * x * x).sum();
  std::vector<Tensor> g = grad({y}, {x});
  expect_values(g[0], {3, 12, 27});
  EXPECT_FALSE(x.grad().defined());
}

TEST(Autograd, CreateGraphGivesSecondDerivatives) {
  Tensor x = vec({1, 2, 3}).requires_grad_();
  Tensor y = (x * x * x).sum();
  Tensor dx = grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];  // 3x^2
  EXPECT_TRUE(dx.requires_grad());
  Tensor ddx = grad({dx.sum()}, {x})[0];  // 6x
  expect_values(ddx, {6, 12, 18});
}

TEST(Autograd, SavedOutputsSupportDoubleBackward) {
  Tensor x = vec({0.5, -1}).requires_grad_();
  Tensor y = x.exp().sum();
  Tensor dx = grad({y}, {x}, {}, std::nullopt, true)[0];  // exp(x)
  Tensor ddx = grad({dx.sum()}, {x})[0];                  // exp(x)
  expect_values(ddx, {std::exp(0.5), std::exp(-1.0)});
}

TEST(Autograd, GradOfUnusedInputNeedsAllowUnused) {
  Tensor x = vec({1}).requires_grad_();
  Tensor z = vec({1}).requires_grad_();
  Tensor y = (x * 2.0).sum();
  EXPECT_THROW(grad({y}, {x, z}, {}, true), ValueError);
  std::vector<Tensor> g = grad({y}, {x, z}, {}, std::nullopt, false, /*allow_unused=*/true);
  expect_values(g[0], {2});
  EXPECT_FALSE(g[1].defined());
}

TEST(Autograd, NonScalarBackwardNeedsAGradient) {
  Tensor x = vec({1, 2}).requires_grad_();
  Tensor y = x * 2.0;
  EXPECT_THROW(y.backward(), ValueError);
  y.backward(vec({1, 10}));
  expect_values(x.grad(), {2, 20});
  EXPECT_THROW((x * 2.0).backward(vec({1, 2, 3})), ShapeError);
}

TEST(Autograd, BackwardOnATensorWithoutHistoryIsAnError) {
  Tensor x = vec({1, 2});
  EXPECT_THROW(x.sum().backward(), ValueError);
}

TEST(Autograd, NoGradGuardStopsRecording) {
  Tensor x = vec({1, 2}).requires_grad_();
  {
    NoGradGuard no_grad;
    Tensor y = x * 2.0;
    EXPECT_FALSE(y.requires_grad());
    {
      EnableGradGuard enable;
      EXPECT_TRUE((x * 2.0).requires_grad());
    }
    EXPECT_FALSE(GradMode::is_enabled());
  }
  EXPECT_TRUE(GradMode::is_enabled());
  {
    InferenceMode inference;
    EXPECT_TRUE(InferenceMode::is_enabled());
    EXPECT_FALSE((x * 2.0).requires_grad());
  }
  EXPECT_FALSE(InferenceMode::is_enabled());
}

TEST(Autograd, DetachSharesStorageButNotHistory) {
  Tensor x = vec({1, 2}).requires_grad_();
  Tensor y = x * 2.0;
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_alias_of(y));
  EXPECT_FALSE((d * 3.0).requires_grad());
  Tensor z = x * 2.0;
  z.detach_();
  EXPECT_FALSE(z.requires_grad());
  EXPECT_TRUE(z.is_leaf());
}

TEST(Autograd, RequiresGradFalseOnNonLeafIsAnError) {
  Tensor x = vec({1}).requires_grad_();
  EXPECT_THROW((x * 2.0).requires_grad_(false), ValueError);
}

TEST(Autograd, InPlaceModificationOfASavedTensorIsDetected) {
  Tensor x = vec({1, 2}).requires_grad_();
  Tensor a = x * 1.0;
  Tensor b = a * a;  // saves a
  a.mul_(2.0);       // bumps a's version
  try {
    b.sum().backward();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("MulBackward"), std::string::npos) << msg;
    EXPECT_NE(msg.find("modified by an in-place operation"), std::string::npos) << msg;
    EXPECT_NE(msg.find("version"), std::string::npos) << msg;
  }
}

TEST(Autograd, InPlaceOpsAreDifferentiated) {
  Tensor x = vec({1, 2}).requires_grad_();
  Tensor a = x * 1.0;
  a.mul_(x);  // a = x^2 in place
  EXPECT_EQ(a.grad_fn()->name(), "MulBackward");
  a.sum().backward();
  expect_values(x.grad(), {2, 4});
}

TEST(Autograd, InPlaceOnALeafThatRequiresGradIsAnError) {
  Tensor x = vec({1, 2}).requires_grad_();
  EXPECT_THROW(x.mul_(2.0), Error);
  {
    NoGradGuard no_grad;  // what optimizers do
    x.mul_(2.0);
  }
  expect_values(x.detach(), {2, 4});
}

TEST(Autograd, InPlaceOnAViewRebasesTheBaseHistory) {
  // Note [In-place on a view]: y = 2x; y[0:2] *= w; loss = sum(y * c)
  Tensor x = vec({1, 2, 3, 4}).requires_grad_();
  Tensor w = vec({5}).requires_grad_();
  Tensor y = x * 2.0;
  Tensor v = y.slice(0, 0, 2);
  v.mul_(w);
  EXPECT_EQ(y.grad_fn()->name(), "CopySlices");
  expect_values(y.detach(), {10, 20, 6, 8});
  (y * vec({1, 10, 100, 1000})).sum().backward();
  expect_values(x.grad(), {10, 100, 200, 2000});  // 2*w*c for the slice, 2*c elsewhere
  expect_values(w.grad(), {2 * 1 + 4 * 10});      // sum(2x * c) over the slice
}

TEST(Autograd, TheModifiedViewItselfIsDifferentiable) {
  Tensor x = vec({1, 2, 3}).requires_grad_();
  Tensor y = x * 1.0;
  Tensor v = y.slice(0, 1, 3);
  v.add_(1.0);
  (v * v).sum().backward();  // v = x[1:] + 1 -> d/dx = 2 (x + 1) on the slice
  expect_values(x.grad(), {0, 6, 8});
}

TEST(Autograd, InPlaceOnAViewOfALeafIsAnError) {
  Tensor x = vec({1, 2}).requires_grad_();
  Tensor v = x.slice(0, 0, 1);
  EXPECT_THROW(v.mul_(2.0), Error);
}

TEST(Autograd, TensorHooksSeeAndReplaceGradients) {
  Tensor x = vec({1, 2}).requires_grad_();
  std::vector<double> seen;
  x.register_hook([&](const Tensor& g) {
    seen = g.to_vector<double>();
    return g * 10.0;
  });
  Tensor y = x * 3.0;
  size_t id = y.register_hook([](const Tensor& g) { return g + 1.0; });
  y.sum().backward(Tensor(), true);
  EXPECT_EQ(seen, (std::vector<double>{6, 6}));  // (1 + 1) * 3
  expect_values(x.grad(), {60, 60});
  y.remove_hook(id);
  x.mutable_grad() = Tensor();
  y.sum().backward();
  expect_values(x.grad(), {30, 30});
}

TEST(Autograd, NodeHooksRunAroundTheNode) {
  Tensor x = vec({1, 2}).requires_grad_();
  Tensor y = x * 3.0;
  int pre_calls = 0, post_calls = 0;
  y.grad_fn()->register_prehook([&](const autograd::TensorList& grads) {
    ++pre_calls;
    return std::optional<autograd::TensorList>(autograd::TensorList{grads[0] * 2.0});
  });
  y.grad_fn()->register_hook(
      [&](const autograd::TensorList& grad_inputs,
          const autograd::TensorList& grad_outputs) -> std::optional<autograd::TensorList> {
        ++post_calls;
        EXPECT_EQ(grad_outputs[0].to_vector<double>(), (std::vector<double>{2, 2}));
        return std::nullopt;
      });
  y.sum().backward();
  EXPECT_EQ(pre_calls, 1);
  EXPECT_EQ(post_calls, 1);
  expect_values(x.grad(), {6, 6});
}

TEST(Autograd, RetainGradOnNonLeaf) {
  Tensor x = vec({1, 2}).requires_grad_();
  Tensor y = x * 2.0;
  y.retain_grad();
  EXPECT_TRUE(y.retains_grad());
  (y * y).sum().backward();
  expect_values(y.grad(), {4, 8});
  expect_values(x.grad(), {8, 16});
  Tensor z = x * 2.0;
  (z * z).sum().backward();
  EXPECT_FALSE(z.grad().defined());
}

TEST(Autograd, BackwardInputsLimitsAccumulation) {
  Tensor x = vec({1}).requires_grad_();
  Tensor w = vec({2}).requires_grad_();
  (x * w).sum().backward(Tensor(), std::nullopt, false, {w});
  expect_values(w.grad(), {1});
  EXPECT_FALSE(x.grad().defined());
}

TEST(Autograd, AnomalyModeNamesTheOpThatProducedNaN) {
  Tensor x = vec({0.0, 1.0}).requires_grad_();
  DetectAnomalyGuard anomaly;
  Tensor y = x.log() * 0.0;  // d/dx = 0 * (1/x) -> 0 * inf = NaN at x = 0
  try {
    y.sum().backward();
    FAIL() << "expected an anomaly error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("NaN"), std::string::npos) << msg;
    EXPECT_NE(msg.find("LogBackward"), std::string::npos) << msg;
    EXPECT_NE(msg.find("log(float64[2])"), std::string::npos) << msg;
  }
}

TEST(Autograd, WithoutAnomalyModeNaNPropagates) {
  Tensor x = vec({0.0, 1.0}).requires_grad_();
  (x.log() * 0.0).sum().backward();
  EXPECT_TRUE(std::isnan(x.grad().to_vector<double>()[0]));
}

TEST(Autograd, OpWithoutFormulaNamesItself) {
  Tensor x = vec({1, 2}).requires_grad_();
  // Ops with integer outputs need no formula; their outputs do not require grad.
  Tensor i = x.argmax();
  EXPECT_FALSE(i.requires_grad());
}

TEST(Autograd, MatmulChainMatchesHandComputedGradient) {
  // y = sum(A @ B): dA = 1 @ B^T, dB = A^T @ 1
  Tensor a = vec({1, 2, 3, 4}).reshape({2, 2}).requires_grad_();
  Tensor b = vec({5, 6, 7, 8}).reshape({2, 2}).requires_grad_();
  a.mm(b).sum().backward();
  expect_values(a.grad(), {11, 15, 11, 15});
  expect_values(b.grad(), {4, 4, 6, 6});
}

}  // namespace
}  // namespace kiln
