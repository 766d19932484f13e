// Gradients of the unary, binary and ternary pointwise ops at their special points (0 for abs
// and relu, bounds of clamp, ties of maximum, 0^0 for pow, NaN/inf for nan_to_num), against
// PyTorch's values; in-place forms and integer operands through the public API.
#include <cmath>

#include "tests/autograd/grad_reference.h"

namespace kiln::testing {
namespace {

TEST(UnaryGrad, SpecialPoints) {
  check_reference("abs_at_zero", [](auto& x) { return x[0].abs(); }, {f64({-1, 0, 2})});
  check_reference("relu_at_zero", [](auto& x) { return x[0].relu(); }, {f64({-1, 0, 2})});
  check_reference("sign", [](auto& x) { return x[0].sign(); }, {f64({-1, 0, 2})});
  check_reference("nan_to_num", [](auto& x) { return nan_to_num(x[0]); },
                  {f64({NAN, INFINITY, -INFINITY, 1.5})});
}
TEST(UnaryGrad, SoftplusAboveAndBelowTheThreshold) {
  check_reference(
      "softplus_threshold", [](auto& x) { return softplus(x[0], 2.0, 1.0); },
      {f64({-1, 0.4, 0.6, 2})}, true);
}
TEST(UnaryGrad, Gelu) {
  const Tensor x = f64({-2, -0.5, 0, 1, 3});
  check_reference(
      "gelu_tanh", [](auto& x) { return gelu(x[0], "tanh"); }, {x}, true);
  check_reference(
      "gelu_none", [](auto& x) { return gelu(x[0]); }, {x}, true);
}

// y = f_(x * 1) in place: the gradient is f's, computed from std:: functions.
TEST(UnaryGrad, InPlaceFormsMatchTheirDerivatives) {
  const std::vector<double> v = {0.25, 1.5, 3.0};
  struct Case {
    const char* name;
    std::function<void(const Tensor&)> op;
    std::function<double(double)> slope;
  };
  const Case cases[] = {
      {"exp_", [](const Tensor& t) { t.exp_(); }, [](double x) { return std::exp(x); }},
      {"neg_", [](const Tensor& t) { t.neg_(); }, [](double) { return -1.0; }},
      {"relu_", [](const Tensor& t) { t.relu_(); }, [](double x) { return x > 0 ? 1.0 : 0.0; }},
      {"sigmoid_", [](const Tensor& t) { t.sigmoid_(); },
       [](double x) {
         const double s = 1 / (1 + std::exp(-x));
         return s * (1 - s);
       }},
      {"sqrt_", [](const Tensor& t) { t.sqrt_(); }, [](double x) { return 0.5 / std::sqrt(x); }},
      {"tanh_", [](const Tensor& t) { t.tanh_(); },
       [](double x) { return 1 - std::tanh(x) * std::tanh(x); }},
  };
  for (const Case& c : cases) {
    Tensor x = f64(v).requires_grad_();
    Tensor y = x * 1.0;
    c.op(y);
    y.sum().backward();
    std::vector<double> expected;
    for (double e : v) expected.push_back(c.slope(e));
    expect_matches(x.grad(), expected, c.name, 1e-12);
  }
}

TEST(BinaryGrad, MaximumAndMinimumSplitTies) {
  check_reference("maximum_ties", [](auto& x) { return x[0].maximum(x[1]); },
                  {f64({1, 2, 3}), f64({3, 2, 1})});
  check_reference("minimum_ties_broadcast", [](auto& x) { return x[0].minimum(x[1]); },
                  {f64({1, 2}, {2, 1}), f64({2, 1, 2})});
}
TEST(BinaryGrad, PowAtZeroAndNegativeBases) {
  check_reference("pow_zero_base", [](auto& x) { return x[0].pow(x[1]); },
                  {f64({0, 0, 0, 2, -2}), f64({0, 2, -1, 0, 2})});
  check_reference("pow_scalar_zero", [](auto& x) { return x[0].pow(0); }, {f64({0, 2, -1})});
  check_reference(
      "pow_scalar_half", [](auto& x) { return x[0].pow(2.5); }, {f64({0, 2, 1})}, true);
}
TEST(BinaryGrad, RoundingDivisionHasZeroGradient) {
  check_reference("div_floor", [](auto& x) { return x[0].div(x[1], "floor"); },
                  {f64({1, -3.5}), f64({2, 1.5})});
}
TEST(BinaryGrad, RemainderFmodAtan2Hypot) {
  const std::vector<Tensor> ab = {f64({5.5, -3.5, 4}), f64({2, 1.5, -3})};
  check_reference(
      "remainder", [](auto& x) { return x[0].remainder(x[1]); }, ab);
  check_reference(
      "fmod", [](auto& x) { return x[0].fmod(x[1]); }, ab);
  check_reference(
      "atan2", [](auto& x) { return atan2(x[0], x[1]); }, {f64({1, -2, 0.5}), f64({2, 1, -1})},
      true);
  check_reference(
      "hypot", [](auto& x) { return hypot(x[0], x[1]); }, {f64({3, -1}), f64({4, 2})}, true);
}
TEST(BinaryGrad, IntegerOperandsGetNoGradient) {
  Tensor x = f64({1, 2, 3}).requires_grad_();
  const Tensor i = tensor({4, 5, 6});
  (x * i + x.pow(i) + i / x).sum().backward();
  // d/dx (x i + x^i + i / x) = i + i x^(i-1) - i / x^2
  std::vector<double> expected;
  for (double e : {1.0, 2.0, 3.0}) {
    const double k = e + 3;
    expected.push_back(k + k * std::pow(e, k - 1) - k / (e * e));
  }
  expect_matches(x.grad(), expected, "x", 1e-12);
}
TEST(BinaryGrad, InPlaceArithmeticOnANonLeaf) {
  Tensor x = f64({1, 2}).requires_grad_();
  Tensor w = f64({3, -4}).requires_grad_();
  Tensor y = x * 1.0;
  y.add_(w, 2.0).mul_(w).div_(x);  // ((x + 2w) w) / x = w + 2 w^2 / x
  y.sum().backward();
  // d/dx = -2 w^2 / x^2; d/dw = 1 + 4 w / x
  expect_matches(x.grad(), {-18, -8}, "x", 1e-12);
  expect_matches(w.grad(), {13, -7}, "w", 1e-12);
}

TEST(TernaryGrad, ClampAtItsBounds) {
  check_reference("clamp_at_bounds", [](auto& x) { return x[0].clamp(1.0, 2.0); },
                  {f64({0, 1, 1.5, 2, 3})});
  check_reference("clamp_min_above_max", [](auto& x) { return x[0].clamp(2.0, 1.0); },
                  {f64({0, 1.5, 3})});
  check_reference("clamp_tensor_ties", [](auto& x) { return clamp(x[0], x[1], x[2]); },
                  {f64({0, 1, 1.5, 2, 3}), f64({1, 1, 1, 1, 1}), f64({2, 2, 2, 2, 2})});
  check_reference("clamp_tensor_min_above_max", [](auto& x) { return clamp(x[0], x[1], x[2]); },
                  {f64({0, 1.5, 3}), f64({2, 2, 2}), f64({1, 1, 1})});
}
TEST(TernaryGrad, WhereLerpAddcdiv) {
  check_reference("where_broadcast",
                  [](auto& x) {
                    return where(tensor({1, 0, 1}).to(kBool).view({1, 3}), x[0], x[1]);
                  },
                  {f64({1, 2, 3, 4, 5, 6}, {2, 3}), f64({7})});
  check_reference(
      "lerp_tensor", [](auto& x) { return lerp(x[0], x[1], x[2]); },
      {f64({1, 2}), f64({3, -1}), f64({0.25, 0.75})}, true);
  check_reference(
      "addcdiv", [](auto& x) { return addcdiv(x[0], x[1], x[2], 0.5); },
      {f64({1, 2}), f64({3, -1}), f64({2, 4})}, true);
}
TEST(TernaryGrad, MaskedFillAndWhereConditionsAreNotDifferentiable) {
  Tensor x = f64({1, 2, 3}).requires_grad_();
  const Tensor mask = tensor({1, 0, 1}).to(kBool);
  Tensor y = x * 1.0;
  y.masked_fill_(mask, 5.0);
  (y * f64({1, 2, 3})).sum().backward();
  expect_matches(x.grad(), {0, 2, 0}, "x", 0);
}

}  // namespace
}  // namespace kiln::testing
