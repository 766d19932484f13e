// Gradients of the reductions, scans, sort and topk at the points the gradient check avoids
// (zeros in products, ties, zero norms, constant lines), against PyTorch's values.
#include "tests/autograd/grad_reference.h"

namespace kiln::testing {
namespace {

Tensor zeros_2x3() { return f64({2, 0, 3, 4, 5, -1}, {2, 3}); }
Tensor lines_3x3() { return f64({2, 0, 3, 0, 0, 5, 1.5, 2, 3}, {3, 3}); }
Tensor ties() { return f64({1, 3, 3, 2, 2, 2}, {2, 3}); }
// prod's and cumprod's backward with zeros shift lines with cat and reverse them with flip.
const std::vector<std::string> kShiftOps = {"cat", "flip"};

TEST(ReduceGrad, ProdWithOneZeroGivesTheProductOfTheOthers) {
  check_reference(
      "prod_all_one_zero", [](auto& x) { return x[0].prod(); }, {zeros_2x3()}, true, kShiftOps);
}
TEST(ReduceGrad, ProdWithTwoZerosHasZeroGradient) {
  check_reference("prod_all_two_zeros", [](auto& x) { return x[0].prod(); }, {lines_3x3()});
}
TEST(ReduceGrad, ProdAlongADimHandlesEachLinesZeros) {
  check_reference(
      "prod_dim1_zeros", [](auto& x) { return x[0].prod(1); }, {lines_3x3()}, true, kShiftOps);
  check_reference(
      "prod_dim0_keepdim_zeros", [](auto& x) { return x[0].prod(0, true); }, {lines_3x3()}, true,
      kShiftOps);
}
TEST(ReduceGrad, ProdWithoutZeros) {
  check_reference(
      "prod_no_zeros", [](auto& x) { return x[0].prod(1); }, {f64({2, -1.5, 3, 0.5, 4, 2}, {2, 3})},
      true);
}
TEST(ReduceGrad, CumprodWithZeros) {
  check_reference(
      "cumprod_zeros", [](auto& x) { return x[0].cumprod(1); },
      {f64({2, 0, 3, 0, 4, 1.5, 2, 0, 3, -1}, {2, 5})}, true, kShiftOps);
  check_reference("cumprod_zero_first", [](auto& x) { return x[0].cumprod(0); }, {f64({0, 2, 3})});
}
TEST(ReduceGrad, AmaxAndAminSplitTheGradientAmongTies) {
  check_reference(
      "amax_dim1_ties", [](auto& x) { return x[0].amax({1}).pow(2); }, {ties()}, true);
  check_reference("amin_all_ties", [](auto& x) { return x[0].amin(); },
                  {f64({1, 3, 1, 2, 1, 5}, {2, 3})});
}
TEST(ReduceGrad, MaxDimSendsTheGradientToTheReturnedIndex) {
  check_reference(
      "max_dim_ties", [](auto& x) { return x[0].max(1).first.pow(2); }, {ties()}, true);
  check_reference("min_dim_keepdim", [](auto& x) { return x[0].min(0, true).first; },
                  {f64({1, 3, 0.5, 2, -1, 5}, {2, 3})});
}
TEST(ReduceGrad, NormAtZeroAndAtTies) {
  check_reference("norm2_zero_line", [](auto& x) { return x[0].norm(2, {1}); },
                  {f64({0, 0, 0, 3, -4, 0}, {2, 3})});
  check_reference("norm1_zero_element", [](auto& x) { return x[0].norm(1); }, {f64({0, 1, -2})});
  check_reference(
      "norm_inf_ties", [](auto& x) { return x[0].norm(INFINITY).pow(2); }, {f64({1, -3, 3, 2})},
      true);
  check_reference("norm_neg_inf", [](auto& x) { return x[0].norm(-INFINITY); },
                  {f64({1, -3, -1, 2})});
  check_reference("norm_half_zero_element", [](auto& x) { return x[0].norm(0.5); },
                  {f64({0, 1, 4})});
  check_reference("norm3_zero_line", [](auto& x) { return x[0].norm(3, {1}); },
                  {f64({0, 0, 1, -2}, {2, 2})});
  check_reference("norm0", [](auto& x) { return x[0].norm(0); }, {f64({0, 1, -2})});
}
TEST(ReduceGrad, StdOfAConstantLineHasZeroGradient) {
  check_reference("std_constant_line", [](auto& x) { return x[0].std({1}); },
                  {f64({2, 2, 2, 1, 2, 4}, {2, 3})});
}
TEST(ReduceGrad, MeanOfA0DimTensor) {
  check_reference("mean_0dim", [](auto& x) { return x[0].mean(); }, {scalar_tensor(3.0, kFloat64)});
  // dims {0} on a 0-dim tensor reduces nothing (PyTorch allows dim 0 and -1 there).
  Tensor x = scalar_tensor(3.0, kFloat64).requires_grad_();
  x.mean({0}).backward();
  EXPECT_EQ(x.grad().item<double>(), 1.0);
}
TEST(ReduceGrad, Logsumexp) {
  check_reference(
      "logsumexp", [](auto& x) { return x[0].logsumexp({1}); },
      {f64({1, 2, 3, -1, 0, 0.5}, {2, 3})}, true);
}
TEST(ReduceGrad, SortAndTopkScatterTheGradientBack) {
  const Tensor x = f64({3, 1, 2, 0.5, 4, -1}, {2, 3});
  check_reference("sort_descending", [](auto& x) { return x[0].sort(1, true).first.pow(2); }, {x},
                  true, {"scatter.src"});
  check_reference("topk", [](auto& x) { return x[0].topk(2, 1).first.pow(2); }, {x}, true,
                  {"scatter.src"});
}

TEST(ReduceGrad, ReductionToAnotherDtypeGetsTheInputsDtypeBack) {
  Tensor x = ones({2, 3}, kFloat32).requires_grad_();
  x.sum({1}, false, kFloat64).sum().backward();
  EXPECT_EQ(x.grad().dtype(), kFloat32);
  Tensor y = ones({2, 3}, kFloat32).requires_grad_();
  (y.softmax(1, kFloat64) * ramp({2, 3}, 1.0)).sum().backward();
  EXPECT_EQ(y.grad().dtype(), kFloat32);
}

}  // namespace
}  // namespace kiln::testing
