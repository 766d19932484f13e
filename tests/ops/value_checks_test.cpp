// Values PyTorch rejects or computes specially, found by a numeric oracle against PyTorch 1.13
// (issue 19): fill values that overflow their dtype, an integer arange whose step truncates to 0,
// and powers of one half.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln/compile.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Note [Overflowing fill values] (src/core/checked_convert.h).
TEST(FillValues, OverflowingValuesRaiseAsPyTorch) {
  EXPECT_NE(error_of([] {
              zeros({2}, kUInt8).fill_(256);
            }).find("fill_: value 256 cannot be converted to dtype uint8 without overflow"),
            std::string::npos);
  EXPECT_THROW(full({2}, 300, kInt8), ValueError);
  EXPECT_THROW(zeros({2}, kInt8).masked_fill(tensor({1, 0}) != 0, 300), ValueError);
  EXPECT_THROW(zeros({2}, kInt32).fill_(std::numeric_limits<double>::infinity()), ValueError);
  EXPECT_THROW(zeros({2}, kInt32).fill_(std::nan("")), ValueError);
  EXPECT_THROW(full({2}, 1e300, kFloat32), ValueError);
  EXPECT_THROW(full({2}, 70000, kFloat16), ValueError);
  EXPECT_THROW(zeros({2}, kUInt8).fill_(-1.0), ValueError);
  // In range, or wrapping as PyTorch allows: an unsigned dtype takes -1 (255); inf and NaN fill
  // floating tensors.
  EXPECT_EQ(zeros({2}, kUInt8).fill_(-1).to_vector<int64_t>(), (std::vector<int64_t>{255, 255}));
  EXPECT_EQ(full({1}, 127, kInt8).to_vector<int64_t>(), std::vector<int64_t>{127});
  EXPECT_TRUE(std::isinf(full({1}, INFINITY, kFloat16).to_vector<float>()[0]));
  EXPECT_TRUE(std::isnan(zeros({1}).fill_(NAN).to_vector<float>()[0]));
  EXPECT_EQ(full({1}, 65504, kFloat16).to_vector<float>()[0], 65504.0f);
  EXPECT_TRUE(zeros({1}, kBool).fill_(5).to_vector<bool>()[0]);
}

TEST(Arange, AnIntegerStepOfZeroRaises) {
  EXPECT_NE(error_of([] { arange(1, 4, 0.5, kInt64); }).find("arange: step must be nonzero"),
            std::string::npos);
  EXPECT_EQ(arange(1, 4, 0.5, kFloat32).numel(), 6);
  EXPECT_EQ(arange(1, 4, 1.5, kInt64).to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));
}

// Note [Power of one half] (src/kernels/cpu/binary_arith.cpp).
TEST(Pow, OneHalfIsASquareRoot) {
  Tensor x = tensor({-INFINITY, 4.0, -0.0, INFINITY});
  const std::vector<float> half = x.pow(0.5).to_vector<float>();
  EXPECT_TRUE(std::isnan(half[0]));  // std::pow gives inf
  EXPECT_EQ(half[1], 2.0f);
  EXPECT_TRUE(std::signbit(half[2]));
  EXPECT_EQ(half[3], INFINITY);
  const std::vector<float> inverse = x.pow(-0.5).to_vector<float>();
  EXPECT_TRUE(std::isnan(inverse[0]));
  EXPECT_EQ(inverse[1], 0.5f);
  EXPECT_EQ(inverse[3], 0.0f);
}

}  // namespace
// Note [Comparing uint64 with a signed tensor]: exact answers, eager and compiled.
TEST(UnsignedComparisons, Uint64AgainstASignedTensorComparesMathematicalValues) {
  const Tensor u =
      from_vector(std::vector<uint64_t>{0, 5, std::numeric_limits<uint64_t>::max(), 7});
  const Tensor s = tensor({-1, 5, -9, 9}, kInt64);
  auto check = [&](const Tensor& got, std::vector<bool> want, const char* what) {
    ASSERT_EQ(got.dtype(), kBool) << what;
    const std::vector<bool> v = got.to_vector<bool>();
    EXPECT_EQ(v, want) << what;
  };
  check(u.lt(s), {false, false, false, true}, "u < s");
  check(u.le(s), {false, true, false, true}, "u <= s");
  check(u.gt(s), {true, false, true, false}, "u > s");
  check(u.ge(s), {true, true, true, false}, "u >= s");
  check(u.eq(s), {false, true, false, false}, "u == s");
  check(u.ne(s), {true, false, true, true}, "u != s");
  check(s.lt(u), {true, false, true, false}, "s < u");
  check(s.ge(u), {false, true, false, true}, "s >= u");
  // Broadcast: a column of signed values against a row of unsigned ones.
  check(s.to(kInt8).reshape({4, 1}).gt(u.reshape({1, 4})).reshape({-1}),
        {false, false, false, false, true, false, false, false, false, false, false, false, true,
         true, false, true},
        "s[:, None] > u[None, :]");
  auto f = compile([](const Tensor& a, const Tensor& b) {
    return std::make_tuple(a.lt(b), a.ge(b), b.gt(a), a.eq(b));
  });
  auto [lt, ge, gt, eq] = f(u, s);
  check(lt, {false, false, false, true}, "compiled u < s");
  check(ge, {true, true, true, false}, "compiled u >= s");
  check(gt, {false, false, false, true}, "compiled s > u");
  check(eq, {false, true, false, false}, "compiled u == s");
}

// max()/min() of every element: the gradient goes evenly to the elements equal to the result,
// and to the NaN elements when the result is NaN (PyTorch's evenly_distribute_backward); amax's
// gives a NaN result no gradient.
TEST(FullExtremumGradient, GoesToTheNaNOrIsSharedByTies) {
  for (bool is_max : {true, false}) {
    Tensor x = tensor({1.0, NAN, 3.0}, kFloat64).requires_grad_();
    (is_max ? x.max() : x.min()).backward();
    EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 1, 0}));
    Tensor ties = tensor({3.0, 1.0, 3.0}, kFloat64).requires_grad_();
    (is_max ? ties.max() : ties.min()).backward();
    EXPECT_EQ(ties.grad().to_vector<double>(),
              is_max ? (std::vector<double>{0.5, 0, 0.5}) : (std::vector<double>{0, 1, 0}));
  }
  auto f = compile([](const Tensor& x) { return x.max() * 2; });
  Tensor x = tensor({1.0, NAN, 3.0}, kFloat64).requires_grad_();
  f(x).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 2, 0}));
}

}  // namespace kiln
