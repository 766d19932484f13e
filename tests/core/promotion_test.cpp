// promote_types, checked entry by entry against an expectation written from the rules (not
// copied from the table), and result_type's rank rules for 0-dim tensors and Scalars.
#include <gtest/gtest.h>

#include <optional>

#include "kiln/kiln.h"
#include "src/core/promotion.h"
#include "src/core/tensor_factory.h"

namespace kiln {
namespace {

int bits(ScalarType t) { return static_cast<int>(element_size(t)) * 8; }

ScalarType signed_of_bits(int b) {
  switch (b) {
    case 8:
      return kInt8;
    case 16:
      return kInt16;
    case 32:
      return kInt32;
    default:
      return kInt64;
  }
}

// The rules of Note [Promotion table], restated: nullopt means "DTypeError".
std::optional<ScalarType> expected_promotion(ScalarType a, ScalarType b) {
  if (a == b) return a;
  if (a == kBool) return b;
  if (b == kBool) return a;
  if (is_floating(a) || is_floating(b)) {
    if (!is_floating(a)) return b;
    if (!is_floating(b)) return a;
    // Both floating: float16 and bfloat16 have no common 16-bit type.
    if ((a == kFloat16 && b == kBFloat16) || (a == kBFloat16 && b == kFloat16)) return kFloat32;
    return bits(a) >= bits(b) ? a : b;
  }
  if (is_unsigned(a) == is_unsigned(b)) return bits(a) >= bits(b) ? a : b;
  const ScalarType u = is_unsigned(a) ? a : b;
  const ScalarType s = is_unsigned(a) ? b : a;
  if (u == kUInt64) return std::nullopt;  // would need 65 bits
  // The smallest signed type holding every value of u (twice its width) and of s.
  return signed_of_bits(std::max(2 * bits(u), bits(s)));
}

TEST(Promotion, EveryPairMatchesTheRules) {
  int checked = 0;
  for (ScalarType a : kAllScalarTypes) {
    for (ScalarType b : kAllScalarTypes) {
      SCOPED_TRACE(fmt::format("{} with {}", dtype_name(a), dtype_name(b)));
      const std::optional<ScalarType> want = expected_promotion(a, b);
      if (want) {
        EXPECT_EQ(dtype_name(promote_types(a, b)), dtype_name(*want));
      } else {
        EXPECT_THROW(promote_types(a, b), DTypeError);
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 169);
}

TEST(Promotion, IsSymmetric) {
  for (ScalarType a : kAllScalarTypes)
    for (ScalarType b : kAllScalarTypes) {
      if (!expected_promotion(a, b)) continue;
      EXPECT_EQ(promote_types(a, b), promote_types(b, a)) << dtype_name(a) << " " << dtype_name(b);
    }
}

TEST(Promotion, SpotChecksFromTheDesign) {
  EXPECT_EQ(promote_types(kUInt8, kInt8), kInt16);
  EXPECT_EQ(promote_types(kUInt16, kInt16), kInt32);
  EXPECT_EQ(promote_types(kUInt32, kInt32), kInt64);
  EXPECT_EQ(promote_types(kUInt32, kInt64), kInt64);
  EXPECT_EQ(promote_types(kUInt8, kUInt64), kUInt64);
  EXPECT_EQ(promote_types(kFloat16, kBFloat16), kFloat32);
  EXPECT_EQ(promote_types(kUInt64, kFloat16), kFloat16);
  EXPECT_EQ(promote_types(kBool, kBool), kBool);
}

TEST(Promotion, Uint64WithSignedThrowsNamingBothAndSayingToCast) {
  for (ScalarType s : {kInt8, kInt16, kInt32, kInt64}) {
    try {
      promote_types(kUInt64, s);
      ADD_FAILURE() << "no error for uint64 with " << dtype_name(s);
    } catch (const DTypeError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("uint64"), std::string::npos) << msg;
      EXPECT_NE(msg.find(std::string(dtype_name(s))), std::string::npos) << msg;
      EXPECT_NE(msg.find("ast"), std::string::npos) << msg;  // "Cast one side explicitly"
    }
  }
}

Tensor dim_tensor(ScalarType t) { return zeros({2}, t); }
Tensor zero_dim(ScalarType t) { return zeros({}, t); }

TEST(ResultType, DimensionedTensorOutranksZeroDimOfSameCategory) {
  EXPECT_EQ(result_type("t", dim_tensor(kUInt8), zero_dim(kInt64)), kUInt8);
  EXPECT_EQ(result_type("t", dim_tensor(kInt32), zero_dim(kInt64)), kInt32);
  EXPECT_EQ(result_type("t", dim_tensor(kFloat16), zero_dim(kFloat64)), kFloat16);
  // uint64 with a 0-dim signed tensor: no promotion of the two, so no error.
  EXPECT_EQ(result_type("t", dim_tensor(kUInt64), zero_dim(kInt64)), kUInt64);
}

TEST(ResultType, ZeroDimOfHigherCategoryPromotes) {
  EXPECT_EQ(result_type("t", dim_tensor(kInt32), zero_dim(kFloat64)), kFloat64);
  EXPECT_EQ(result_type("t", dim_tensor(kBool), zero_dim(kInt16)), kInt16);
  EXPECT_EQ(result_type("t", dim_tensor(kUInt8), zero_dim(kFloat16)), kFloat16);
}

TEST(ResultType, ZeroDimTensorsPromoteLikeTensors) {
  EXPECT_EQ(result_type("t", zero_dim(kUInt8), zero_dim(kInt8)), kInt16);
  EXPECT_EQ(result_type("t", zero_dim(kInt32), zero_dim(kInt64)), kInt64);
  EXPECT_THROW(result_type("t", zero_dim(kUInt64), zero_dim(kInt8)), DTypeError);
  EXPECT_THROW(result_type("t", dim_tensor(kUInt64), dim_tensor(kInt32)), DTypeError);
}

TEST(ResultType, ScalarsKeepTheTensorsCategory) {
  EXPECT_EQ(result_type("t", dim_tensor(kUInt8), Scalar(1000)), kUInt8);
  EXPECT_EQ(result_type("t", dim_tensor(kUInt64), Scalar(-1)), kUInt64);
  EXPECT_EQ(result_type("t", dim_tensor(kInt8), Scalar(int64_t{1} << 40)), kInt8);
  EXPECT_EQ(result_type("t", dim_tensor(kFloat16), Scalar(2.5)), kFloat16);
  EXPECT_EQ(result_type("t", dim_tensor(kBool), Scalar(true)), kBool);
  EXPECT_EQ(result_type("t", zero_dim(kInt16), Scalar(7)), kInt16);
}

TEST(ResultType, ScalarsOfHigherCategoryGiveDefaultOrTheirKind) {
  // A float Scalar with an integer tensor: the default float dtype (float32), not float64.
  EXPECT_EQ(result_type("t", dim_tensor(kInt32), Scalar(2.5)), kFloat32);
  EXPECT_EQ(result_type("t", dim_tensor(kUInt64), Scalar(2.5)), kFloat32);
  EXPECT_EQ(result_type("t", dim_tensor(kBool), Scalar(2.5)), kFloat32);
  // An int Scalar with a bool tensor: int64.
  EXPECT_EQ(result_type("t", dim_tensor(kBool), Scalar(3)), kInt64);
}

TEST(ResultType, WrappedNumbersRankAsScalars) {
  Tensor w = scalar_to_tensor(Scalar(2.5));
  EXPECT_EQ(w.dtype(), kFloat64);
  EXPECT_EQ(result_type("t", dim_tensor(kInt32), w), kFloat32);
  EXPECT_EQ(result_type("t", dim_tensor(kFloat16), w), kFloat16);
  EXPECT_EQ(result_type("t", dim_tensor(kUInt8), scalar_to_tensor(Scalar(1000))), kUInt8);
  // A 0-dim tensor outranks a wrapped number.
  EXPECT_EQ(result_type("t", zero_dim(kInt8), scalar_to_tensor(Scalar(1000))), kInt8);
}

TEST(CanCast, FollowsCategories) {
  EXPECT_TRUE(can_cast(kInt64, kUInt8));    // same category narrows
  EXPECT_TRUE(can_cast(kInt32, kFloat16));  // int -> float
  EXPECT_FALSE(can_cast(kFloat32, kInt64));
  EXPECT_FALSE(can_cast(kInt8, kBool));
  EXPECT_TRUE(can_cast(kBool, kUInt8));
}

}  // namespace
}  // namespace kiln
