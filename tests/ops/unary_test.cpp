// Behaviour of the unary and ternary pointwise ops that the op harness cannot express.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln/kiln.h"
#include "src/kernels/cpu/unary.h"

namespace kiln {
namespace {

TEST(Unary, RoundHalfwayCasesGoToEven) {
  Tensor x = tensor({0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 2.4999}, kFloat64);
  EXPECT_EQ(x.round().to_vector<double>(), (std::vector<double>{0, 2, 2, -0.0, -2, -2, 4, 2}));
  Tensor h = tensor({0.5, 1.5, 2.5}, kFloat16);
  EXPECT_EQ(h.round().to_vector<double>(), (std::vector<double>{0, 2, 2}));
}

TEST(Unary, RoundingIntegersIsTheIdentity) {
  Tensor x = tensor({-3, 0, 7}, kInt32);
  for (const Tensor& r : {x.floor(), x.ceil(), x.round(), x.trunc()}) {
    EXPECT_EQ(r.dtype(), kInt32);
    EXPECT_EQ(r.to_vector<int32_t>(), (std::vector<int32_t>{-3, 0, 7}));
  }
}

TEST(Unary, ErfinvIsAccurateToDoublePrecision) {
  for (double y : {-0.999999999, -0.9, -0.3, 1e-10, 0.25, 0.5, 0.75, 0.99, 1 - 1e-12}) {
    const double x = cpu::erfinv(y);
    EXPECT_NEAR(std::erf(x), y, 4e-16) << y;
  }
  EXPECT_NEAR(cpu::erfinv(0.5), 0.47693627620446987, 1e-16);
  Tensor t = tensor({-1.0, 1.0, 0.0, 2.0}, kFloat32).erfinv();
  std::vector<float> v = t.to_vector<float>();
  EXPECT_EQ(v[0], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[1], std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[2], 0.0f);
  EXPECT_TRUE(std::isnan(v[3]));
}

TEST(Unary, NanToNumDefaultsToZeroAndTheDtypeLimits) {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor x = tensor({std::nan(""), inf, -inf, 1.5}, kFloat32);
  EXPECT_EQ(nan_to_num(x).to_vector<float>(),
            (std::vector<float>{0.0f, std::numeric_limits<float>::max(),
                                std::numeric_limits<float>::lowest(), 1.5f}));
  EXPECT_EQ(nan_to_num(x.to(kFloat16)).to_vector<double>(),
            (std::vector<double>{0.0, 65504.0, -65504.0, 1.5}));
  EXPECT_EQ(nan_to_num(x, 2.0, 3.0, -4.0).to_vector<float>(),
            (std::vector<float>{2.0f, 3.0f, -4.0f, 1.5f}));
}

TEST(Unary, InPlaceOpsBumpTheVersionCounter) {
  Tensor x = tensor({1.0, -2.0}, kFloat32);
  const uint32_t v0 = x.version();
  const Tensor& r = x.neg_();
  EXPECT_TRUE(r.is_same(x));
  EXPECT_EQ(x.version(), v0 + 1);
  x.relu_();
  x.exp_();
  EXPECT_EQ(x.version(), v0 + 3);
  EXPECT_FLOAT_EQ(x.to_vector<float>()[0], 1.0f);            // relu(-1) = 0, exp(0) = 1
  EXPECT_FLOAT_EQ(x.to_vector<float>()[1], std::exp(2.0f));  // relu(2) = 2
}

TEST(Unary, ExpInPlaceOnAnIntegerTensorRaisesDTypeError) {
  Tensor x = tensor({1, 2, 3});
  EXPECT_THROW(x.exp_(), DTypeError);
  EXPECT_THROW(x.sqrt_(), DTypeError);
  EXPECT_EQ(x.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3}));  // untouched
}

TEST(Unary, FloatingFunctionsOfIntegersReturnFloat32) {
  EXPECT_EQ(tensor({1, 2}).exp().dtype(), kFloat32);
  EXPECT_EQ(tensor({1, 2}, kUInt8).sigmoid().dtype(), kFloat32);
  EXPECT_EQ(tensor({1, 0}).to(kBool).sin().dtype(), kFloat32);
  EXPECT_EQ(tensor({1.0}, kFloat64).exp().dtype(), kFloat64);
  EXPECT_EQ(tensor({1.0}, kBFloat16).log().dtype(), kBFloat16);
}

TEST(Unary, ReluOfUint8IsTheIdentity) {
  Tensor x = tensor({0, 1, 200, 255}, kUInt8);
  Tensor r = x.relu();
  EXPECT_EQ(r.dtype(), kUInt8);
  EXPECT_EQ(r.to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 200, 255}));
}

TEST(Unary, NegAndAbsWrapAtTheIntegerLimits) {
  Tensor m = from_vector(std::vector<int64_t>{INT64_MIN, -1, 5});
  EXPECT_EQ((-m).to_vector<int64_t>(), (std::vector<int64_t>{INT64_MIN, 1, -5}));
  EXPECT_EQ(m.abs().to_vector<int64_t>(), (std::vector<int64_t>{INT64_MIN, 1, 5}));
  Tensor u = tensor({0, 1, 255}, kUInt8);
  EXPECT_EQ(u.neg().to_vector<uint8_t>(), (std::vector<uint8_t>{0, 255, 1}));
  EXPECT_EQ(u.abs().to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 255}));
}

TEST(Unary, NegOfBoolIsAnError) { EXPECT_THROW(-tensor({1, 0}).to(kBool), DTypeError); }

TEST(Unary, NotOperatorsAreLogicalAndBitwise) {
  Tensor b = tensor({1, 0}).to(kBool);
  EXPECT_EQ((!b).to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ((~b).to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ((~tensor({0, 5}, kInt8)).to_vector<int8_t>(), (std::vector<int8_t>{-1, -6}));
  EXPECT_EQ((!tensor({0.0, 2.0})).dtype(), kBool);
  EXPECT_THROW(~tensor({1.0}), DTypeError);
}

TEST(Unary, IsnanIsinfIsfiniteReturnBoolForEveryDtype) {
  for (ScalarType t : kAllScalarTypes) {
    Tensor x = tensor({1, 0}).to(t);
    EXPECT_EQ(x.isnan().dtype(), kBool);
    EXPECT_EQ(x.isfinite().to_vector<bool>(), (std::vector<bool>{true, true}));
    EXPECT_EQ(x.isinf().to_vector<bool>(), (std::vector<bool>{false, false}));
  }
}

TEST(Unary, VectorExpAndLogHandleSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  // 37 elements: several full vectors plus a tail.
  std::vector<float> v(37, 1.0f);
  v[0] = std::nanf("");
  v[1] = inf;
  v[2] = -inf;
  v[3] = 0.0f;
  v[4] = -1.0f;
  v[5] = 89.0f;
  v[36] = -200.0f;
  std::vector<float> e = from_vector(v).exp().to_vector<float>();
  EXPECT_TRUE(std::isnan(e[0]));
  EXPECT_EQ(e[1], inf);
  EXPECT_EQ(e[2], 0.0f);
  EXPECT_EQ(e[3], 1.0f);
  EXPECT_EQ(e[5], inf);
  EXPECT_EQ(e[36], 0.0f);
  std::vector<float> l = from_vector(v).log().to_vector<float>();
  EXPECT_TRUE(std::isnan(l[0]));
  EXPECT_EQ(l[1], inf);
  EXPECT_TRUE(std::isnan(l[2]));
  EXPECT_EQ(l[3], -inf);
  EXPECT_TRUE(std::isnan(l[4]));
  EXPECT_EQ(l[6], 0.0f);
}

TEST(Unary, VectorExpIsWithinTwoUlpsOfTheCLibrary) {
  std::vector<float> v;
  for (float x = -103.0f; x < 88.7f; x += 0.37f) v.push_back(x);
  std::vector<float> e = from_vector(v).exp().to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) {
    const double ref = std::exp(static_cast<double>(v[i]));
    if (ref < std::numeric_limits<float>::min()) continue;  // subnormal results
    EXPECT_NEAR(e[i], ref, 2.5e-7 * ref) << v[i];
  }
}

TEST(Unary, GeluRejectsUnknownApproximations) {
  EXPECT_THROW(gelu(tensor({1.0}), "fast"), ValueError);
}

TEST(Ternary, WhereWithScalarsPromotesLikePyTorch) {
  Tensor c = tensor({1, 0}).to(kBool);
  EXPECT_EQ(where(c, 1.5, 0).dtype(), kFloat32);
  EXPECT_EQ(where(c, 1, 0).dtype(), kInt64);
  Tensor r = where(c, tensor({1, 2}, kUInt8), 7);
  EXPECT_EQ(r.dtype(), kUInt8);
  EXPECT_EQ(r.to_vector<uint8_t>(), (std::vector<uint8_t>{1, 7}));
  EXPECT_THROW(where(tensor({1.0, 0.0}), 1, 0), DTypeError);
}

TEST(Ternary, ClampPropagatesNanAndMinAboveMaxGivesMax) {
  Tensor x = tensor({std::nan(""), -3.0, 0.5, 9.0}, kFloat32);
  std::vector<float> v = x.clamp(-1, 1).to_vector<float>();
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], -1.0f);
  EXPECT_EQ(v[2], 0.5f);
  EXPECT_EQ(v[3], 1.0f);
  EXPECT_EQ(x.clamp(5, 1).to_vector<float>()[2], 1.0f);
  EXPECT_TRUE(std::isnan(x.clamp(std::nan(""), std::nullopt).to_vector<float>()[2]));
}

TEST(Ternary, ClampOfIntegersWithAFloatBoundReturnsFloat) {
  Tensor r = tensor({0, 1, 2}).clamp(0.5);
  EXPECT_EQ(r.dtype(), kFloat32);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{0.5f, 1.0f, 2.0f}));
  EXPECT_THROW(tensor({0, 1}).clamp_(0.5), DTypeError);
}

TEST(Ternary, InPlaceTernaryOpsBumpTheVersionCounter) {
  Tensor x = tensor({1.0, 2.0, 3.0}, kFloat32);
  const uint32_t v0 = x.version();
  x.clamp_(1.5, 2.5);
  x.masked_fill_(tensor({1, 0, 0}).to(kBool), 0.0);
  x.addcmul_(tensor({1.0, 1.0, 1.0}), tensor({2.0, 2.0, 2.0}), 0.5);
  x.addcdiv_(tensor({1.0, 1.0, 1.0}), tensor({2.0, 2.0, 2.0}));
  x.lerp_(tensor({0.0, 0.0, 0.0}), 0.5);
  EXPECT_EQ(x.version(), v0 + 5);
  // clamp -> [1.5, 2, 2.5]; fill -> [0, 2, 2.5]; +1 -> [1, 3, 3.5]; +0.5 -> [1.5, 3.5, 4];
  // halfway to 0 -> [0.75, 1.75, 2].
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0.75f, 1.75f, 2.0f}));
}

TEST(Ternary, AddcdivOfIntegerTensorsIsAnError) {
  EXPECT_THROW(addcdiv(tensor({1.0}), tensor({1}), tensor({2})), DTypeError);
  EXPECT_EQ(addcdiv(tensor({1}), tensor({1.0}), tensor({4.0})).to_vector<float>(),
            (std::vector<float>{1.25f}));
}

TEST(Ternary, AddcmulOfIntegersWraps) {
  Tensor r = addcmul(tensor({250}, kUInt8), tensor({3}, kUInt8), tensor({4}, kUInt8), 2);
  EXPECT_EQ(r.to_vector<uint8_t>(), (std::vector<uint8_t>{static_cast<uint8_t>(250 + 24)}));
}

TEST(Ternary, MaskedFillBroadcastsTheMask) {
  Tensor x = zeros({2, 3}, kInt32);
  Tensor r = x.masked_fill(tensor({1, 0, 1}).to(kBool), 7);
  EXPECT_EQ(r.to_vector<int32_t>(), (std::vector<int32_t>{7, 0, 7, 7, 0, 7}));
  EXPECT_THROW(x.masked_fill(tensor({1, 0}).to(kBool), 7), ShapeError);
}

}  // namespace
}  // namespace kiln
