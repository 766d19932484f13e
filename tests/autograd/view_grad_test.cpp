// Gradients of the view and copy ops through the public API: views that repeat elements
// (as_strided, unfold), double backward through the views' backward (against PyTorch's values),
// as_strided on strided inputs, copies across dtypes.
#include "tests/autograd/grad_reference.h"

namespace kiln::testing {
namespace {

// The views' double backward differentiates scatter_add, the index family's formula.
const std::vector<std::string> kScatterAdd = {"scatter_add"};

TEST(ViewGrad, ViewsThatRepeatElementsSumTheirGradients) {
  check_reference(
      "as_strided_overlapping",
      [](auto& x) {
        return x[0].as_strided({3, 2}, {1, 1}).pow(2);
      },
      {f64({1, 2, 3, 4})}, true, kScatterAdd);
  check_reference(
      "unfold_overlapping", [](auto& x) { return x[0].unfold(0, 3, 1).pow(2); },
      {f64({1, 2, 3, 4, 5})}, true, kScatterAdd);
}
TEST(ViewGrad, SelectingViews) {
  const Tensor x = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  check_reference(
      "diagonal_offset", [](auto& x) { return x[0].diagonal(1).pow(2); }, {x}, true, kScatterAdd);
  check_reference(
      "slice_step", [](auto& x) { return x[0].slice(1, 1, std::nullopt, 2).pow(2); },
      {f64({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4})}, true, kScatterAdd);
  check_reference(
      "select", [](auto& x) { return x[0].select(1, -1).pow(2); }, {x}, true);
}

// as_strided reads storage positions: on a transposed input, output element (i) reads storage
// position offset + i * stride whatever the input's own strides are.
TEST(ViewGrad, AsStridedOfAStridedInputUsesStoragePositions) {
  Tensor base = f64({0, 1, 2, 3, 4, 5}, {2, 3}).requires_grad_();
  Tensor t = base.t();  // [3, 2], strides [1, 3]
  Tensor w = f64({1, 10, 100});
  // Storage positions 1, 3, 5 of base: base[0][1], base[1][0], base[1][2].
  (t.as_strided({3}, {2}, 1) * w).sum().backward();
  expect_matches(base.grad(), {0, 1, 0, 10, 0, 100}, "base", 0);
}
TEST(ViewGrad, AsStridedOfAnOverlappingInputIsRefused) {
  Tensor x = f64({1, 2, 3}).requires_grad_();
  Tensor e = x.expand({2, 3});
  Tensor y = e.as_strided({2}, {1}, 0).sum();
  try {
    y.backward();
    FAIL() << "expected NotImplementedError";
  } catch (const NotImplementedError& err) {
    EXPECT_NE(std::string(err.what()).find("as_strided backward"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("contiguous"), std::string::npos) << err.what();
  }
}

TEST(CopyGrad, ToAnotherDtypeCastsTheGradientBack) {
  Tensor x = f64({1.5, -2}).requires_grad_();
  Tensor y = x.to(kFloat32);
  EXPECT_EQ(y.dtype(), kFloat32);
  (y * tensor({2.0, 3.0}, kFloat32)).sum().backward();
  EXPECT_EQ(x.grad().dtype(), kFloat64);
  expect_matches(x.grad(), {2, 3}, "x", 0);
  // To an integer dtype the result is not differentiable: no history.
  EXPECT_FALSE(x.to(kInt32).requires_grad());
}
TEST(CopyGrad, CopyIntoGivesTheSourceTheGradientAndSelfNone) {
  Tensor a = f64({1, 2, 3, 4, 5, 6}, {2, 3}).requires_grad_();
  Tensor b = tensor({7.0, 8.0, 9.0}, kFloat32).requires_grad_();
  Tensor y = a * 1.0;
  y.copy_(b);  // b broadcast over rows, cast to float64
  (y * ramp({2, 3}, 1.0)).sum().backward();
  expect_matches(a.grad(), {0, 0, 0, 0, 0, 0}, "a", 0);
  EXPECT_EQ(b.grad().dtype(), kFloat32);
  expect_matches(b.grad(), {5, 7, 9}, "b", 0);
  // An integer source is not differentiable and takes no gradient.
  Tensor c = f64({1, 2}).requires_grad_();
  Tensor z = c * 1.0;
  z.copy_(tensor({3, 4}));
  EXPECT_TRUE(z.requires_grad());
}
TEST(CopyGrad, FillGivesZeroGradient) {
  Tensor a = f64({1, 2}).requires_grad_();
  Tensor y = a * 1.0;
  y.fill_(3.0);
  (y * a).sum().backward();  // d/da (3 a) = 3; the filled values do not depend on a
  expect_matches(a.grad(), {3, 3}, "a", 0);
}

}  // namespace
}  // namespace kiln::testing
