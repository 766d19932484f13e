// Double backward through an in-place op whose formula reads self's old value (mul_, and every
// in-place op whose derivative needs its input).
//
// Known engine bug (reported by the derivative-formula work, issue 3): record() in
// src/autograd/op_backward.cpp saves an in-place op's old self as `t.detach().clone()`, so the
// saved value has no history and a create_graph backward cannot differentiate through it; the
// second derivative comes out zero. PyTorch clones self *with* autograd recording (CloneBackward)
// before running the op. This test fails until the engine does the same; the gradient check of
// mul_ fails its second-order part for the same reason.
#include <gtest/gtest.h>

#include "kiln/kiln.h"

namespace kiln {
namespace {

TEST(InPlaceDoubleBackward, SavedOldSelfKeepsItsHistory) {
  Tensor x = tensor({1.0, 2.0}, kFloat64).requires_grad_();
  Tensor w = tensor({3.0, -4.0}, kFloat64).requires_grad_();
  Tensor y = x * 1.0;
  y.mul_(w);  // y = x * w; d/dw = x, read from mul_'s saved old self
  std::vector<Tensor> gw = grad({y.sum()}, {w}, {}, std::nullopt, /*create_graph=*/true);
  ASSERT_TRUE(gw[0].requires_grad()) << "dL/dw = x must stay a function of x";
  std::vector<Tensor> gx = grad({gw[0].sum()}, {x}, {}, std::nullopt, false, /*allow_unused=*/true);
  ASSERT_TRUE(gx[0].defined());
  EXPECT_EQ(gx[0].to_vector<double>(), (std::vector<double>{1.0, 1.0}));
}

}  // namespace
}  // namespace kiln
