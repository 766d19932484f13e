// Values PyTorch rejects or computes specially, found by a numeric oracle against PyTorch 1.13
// (issue 19): fill values that overflow their dtype, an integer arange whose step truncates to 0,
// and powers of one half.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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
  EXPECT_NE(error_of([] { zeros({2}, kUInt8).fill_(256); })
                .find("fill_: value 256 cannot be converted to dtype uint8 without overflow"),
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
}  // namespace kiln
