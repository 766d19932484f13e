#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln/kiln.h"
#include "src/core/cast.h"

using namespace kiln;

TEST(DType, NamesRoundTrip) {
  for (ScalarType t : kAllScalarTypes) EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  EXPECT_THROW(dtype_from_name("float128"), ValueError);
}

TEST(DType, ElementSizes) {
  EXPECT_EQ(element_size(kBool), 1);
  EXPECT_EQ(element_size(kUInt16), 2);
  EXPECT_EQ(element_size(kBFloat16), 2);
  EXPECT_EQ(element_size(kUInt32), 4);
  EXPECT_EQ(element_size(kUInt64), 8);
}

TEST(Half, RoundTripsEveryFiniteValueExactly) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    Half h = Half::from_bits(static_cast<uint16_t>(bits));
    float f = h;
    if (std::isnan(f)) continue;
    EXPECT_EQ(Half(f).bits, h.bits) << bits;
  }
}

TEST(Half, RoundsToNearestEvenAndOverflowsToInf) {
  EXPECT_EQ(static_cast<float>(Half(1.0f + 1.0f / 2048)), 1.0f);  // halfway: rounds to even
  EXPECT_EQ(static_cast<float>(Half(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(static_cast<float>(Half(70000.0f))));
  EXPECT_EQ(static_cast<float>(Half(5.960464477539063e-08f)), 5.960464477539063e-08f);  // subnormal
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(std::nanf("")))));
}

TEST(BFloat16, KeepsFloatRangeWithEightBitMantissa) {
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f)), 1.0f);
  EXPECT_EQ(static_cast<float>(BFloat16(3.0e38f)),
            3.00405527047391e+38f);                            // PyTorch gives the same
  EXPECT_EQ(static_cast<float>(BFloat16(1.00390625f)), 1.0f);  // halfway: rounds to even
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::nanf("")))));
}

// Note [Casting to integers] in src/core/cast.h.
TEST(Cast, FloatToIntegerIsTotal) {
  EXPECT_EQ(cast_value<uint8_t>(-1.0), 255);
  EXPECT_EQ(cast_value<uint8_t>(256.7), 0);
  EXPECT_EQ(cast_value<int32_t>(-3.9), -3);
  EXPECT_EQ(cast_value<int64_t>(std::nan("")), 0);
  EXPECT_EQ(cast_value<int64_t>(1e30), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(cast_value<int64_t>(-1e30), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(cast_value<uint64_t>(1.8446744073709552e19 / 2 * 1.5), 13835058055282163712ULL);
  EXPECT_EQ(cast_value<uint64_t>(std::numeric_limits<double>::infinity()),
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(cast_value<uint64_t>(-1e30), 0u);
}

TEST(Cast, IntegerConversionsWrapAndBoolIsNonzero) {
  EXPECT_EQ(cast_value<uint8_t>(int64_t{-1}), 255);
  EXPECT_EQ(cast_value<int8_t>(uint16_t{200}), -56);
  EXPECT_EQ(cast_value<uint64_t>(int64_t{-1}), std::numeric_limits<uint64_t>::max());
  EXPECT_TRUE(cast_value<bool>(0.5));
  EXPECT_FALSE(cast_value<bool>(int32_t{0}));
  EXPECT_EQ(cast_value<double>(std::numeric_limits<uint64_t>::max()), 18446744073709551616.0);
  EXPECT_EQ(static_cast<float>(cast_value<Half>(uint16_t{65535})), INFINITY);
}

TEST(Cast, TensorToMatchesCastValue) {
  Tensor t = tensor({-1.5, 300.25, 1e20}, kFloat64);
  EXPECT_EQ(t.to(kUInt8).to_vector<uint8_t>(), (std::vector<uint8_t>{255, 44, 255}));
  EXPECT_EQ(t.to(kInt64).to_vector<int64_t>(),
            (std::vector<int64_t>{-1, 300, std::numeric_limits<int64_t>::max()}));
  EXPECT_EQ(t.to(kBool).to_vector<bool>(), (std::vector<bool>{true, true, true}));
}

TEST(Scalar, KeepsUint64AboveInt64Max) {
  Scalar s(std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(s.kind(), Scalar::Kind::UInt);
  EXPECT_EQ(s.to_uint64(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(s.natural_dtype(), kUInt64);
  EXPECT_EQ(Scalar(int64_t{-3}).natural_dtype(), kInt64);
  EXPECT_EQ(Scalar(2.5).natural_dtype(), kFloat64);
  EXPECT_EQ(Scalar(true).natural_dtype(), kBool);
}
