// Behaviour of the binary ops that the harness's per-sample checks do not state directly.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "kiln/kiln.h"

namespace kiln {
namespace {

template <typename T>
std::vector<T> values(const Tensor& t) {
  return t.to_vector<T>();
}

TEST(Binary, Uint8AddWrapsAround) {
  Tensor a = tensor({200}, kUInt8), b = tensor({100}, kUInt8);
  Tensor c = a + b;
  EXPECT_EQ(c.dtype(), kUInt8);
  EXPECT_EQ(c.item<int64_t>(), 44);
  EXPECT_EQ((b - a).item<int64_t>(), 156);  // 100 - 200 mod 256
  EXPECT_EQ((a * b).item<int64_t>(), (200 * 100) % 256);
}

TEST(Binary, Uint64MaxGreaterThanInt64MinusOne) {
  Tensor u = from_vector(std::vector<uint64_t>{UINT64_MAX, 0});
  EXPECT_EQ(values<bool>(u > Scalar(-1)), (std::vector<bool>{true, true}));
  EXPECT_EQ(values<bool>(u < Scalar(-1)), (std::vector<bool>{false, false}));
  EXPECT_EQ(values<bool>(u == Scalar(-1)), (std::vector<bool>{false, false}));
  EXPECT_EQ(values<bool>(u != Scalar(-1)), (std::vector<bool>{true, true}));
  // The same with a 0-dim int64 tensor on either side.
  Tensor m1 = scalar_tensor(-1, kInt64);
  EXPECT_EQ(values<bool>(gt(u, m1)), (std::vector<bool>{true, true}));
  EXPECT_EQ(values<bool>(lt(m1, u)), (std::vector<bool>{true, true}));
  EXPECT_EQ(values<bool>(ge(m1, u)), (std::vector<bool>{false, false}));
}

TEST(Binary, ComparisonWithOutOfRangeScalarIsExact) {
  Tensor a = tensor({0, 5, 255}, kUInt8);
  EXPECT_EQ(values<bool>(a < Scalar(1000)), (std::vector<bool>{true, true, true}));
  EXPECT_EQ(values<bool>(a == Scalar(1000 - 256 * 3)), (std::vector<bool>{false, false, false}));
  EXPECT_EQ(values<bool>(a == Scalar(255)), (std::vector<bool>{false, false, true}));
  Tensor i8 = tensor({-128, 0, 127}, kInt8);
  EXPECT_EQ(values<bool>(i8 > Scalar(-129)), (std::vector<bool>{true, true, true}));
  EXPECT_EQ(values<bool>(i8 >= Scalar(128)), (std::vector<bool>{false, false, false}));
  EXPECT_EQ(values<bool>(i8 <= Scalar(UINT64_MAX)), (std::vector<bool>{true, true, true}));
}

TEST(Binary, Uint64WithInt64TensorRaisesDTypeErrorNamingBoth) {
  Tensor u = zeros({2}, kUInt64), s = zeros({2}, kInt64);
  // (Comparisons have an exact answer: Note [Comparing uint64 with a signed tensor].)
  for (auto f : {+[](const Tensor&a, const Tensor&b) { return add(a, b); },
                 +[](const Tensor&a, const Tensor&b) { return mul(a, b); }}) {
    try {
      f(u, s);
      ADD_FAILURE() << "expected DTypeError";
    } catch (const DTypeError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("uint64"), std::string::npos) << msg;
      EXPECT_NE(msg.find("int64"), std::string::npos) << msg;
      EXPECT_NE(msg.find("ast"), std::string::npos) << msg;  // "Cast one side"
    }
  }
}

TEST(Binary, LogicalRightShiftOfUnsigned) {
  Tensor u = from_vector(std::vector<uint32_t>{0x80000000u});
  EXPECT_EQ((u >> Scalar(31)).item<int64_t>(), 1);
  Tensor s = from_vector(std::vector<int32_t>{INT32_MIN});
  EXPECT_EQ((s >> Scalar(31)).item<int64_t>(), -1);  // arithmetic for signed
}

TEST(Binary, ShiftsByBitWidthOrMoreAreDefined) {
  Tensor s = tensor({-8, 8}, kInt32);
  EXPECT_EQ(values<int32_t>(s >> Scalar(32)), (std::vector<int32_t>{-1, 0}));
  EXPECT_EQ(values<int32_t>(s >> Scalar(100)), (std::vector<int32_t>{-1, 0}));
  EXPECT_EQ(values<int32_t>(s << Scalar(32)), (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(values<int32_t>(s << tensor({-1, 31}, kInt32)), (std::vector<int32_t>{0, 0}));
  Tensor u = tensor({255}, kUInt8);
  EXPECT_EQ((u << Scalar(8)).item<int64_t>(), 0);
  EXPECT_EQ((u << Scalar(7)).item<int64_t>(), 128);
  EXPECT_EQ((u >> Scalar(8)).item<int64_t>(), 0);
}

TEST(Binary, Int8MinDividedByMinusOneWraps) {
  Tensor a = tensor({-128}, kInt8), b = tensor({-1}, kInt8);
  EXPECT_EQ(div(a, b, "trunc").item<int64_t>(), -128);
  EXPECT_EQ(div(a, b, "floor").item<int64_t>(), -128);
  EXPECT_EQ(remainder(a, b).item<int64_t>(), 0);
  EXPECT_EQ(fmod(a, b).item<int64_t>(), 0);
  Tensor l = from_vector(std::vector<int64_t>{INT64_MIN});
  EXPECT_EQ(div(l, Scalar(-1), "floor").item<int64_t>(), INT64_MIN);
}

TEST(Binary, RemainderTakesTheDivisorsSignFmodTheDividends) {
  Tensor a = tensor({-7, 7, -7, 7}), b = tensor({2, -2, -2, 2});
  EXPECT_EQ(values<int64_t>(remainder(a, b)), (std::vector<int64_t>{1, -1, -1, 1}));
  EXPECT_EQ(values<int64_t>(a % b), (std::vector<int64_t>{1, -1, -1, 1}));
  EXPECT_EQ(values<int64_t>(fmod(a, b)), (std::vector<int64_t>{-1, 1, -1, 1}));
  Tensor fa = tensor({-7.5, 7.5}, kFloat64), fb = tensor({2.0, -2.0}, kFloat64);
  EXPECT_EQ(values<double>(remainder(fa, fb)), (std::vector<double>{0.5, -0.5}));
  EXPECT_EQ(values<double>(fmod(fa, fb)), (std::vector<double>{-1.5, 1.5}));
  EXPECT_EQ(values<int64_t>(div(a, b, "floor")), (std::vector<int64_t>{-4, -4, 3, 3}));
  EXPECT_EQ(values<int64_t>(div(a, b, "trunc")), (std::vector<int64_t>{-3, -3, 3, 3}));
}

TEST(Binary, UnsignedFloorDivisionAndRemainder) {
  Tensor a = from_vector(std::vector<uint64_t>{UINT64_MAX, 7});
  EXPECT_EQ(values<uint64_t>(div(a, Scalar(2), "floor")),
            (std::vector<uint64_t>{UINT64_MAX / 2, 3}));
  EXPECT_EQ(values<uint64_t>(remainder(a, Scalar(10))),
            (std::vector<uint64_t>{UINT64_MAX % 10, 7}));
}

TEST(Binary, IntegerDivisionByZeroRaisesValueError) {
  Tensor a = tensor({1, 2, 3}), z = tensor({1, 0, 1});
  EXPECT_THROW(div(a, z, "floor"), ValueError);
  EXPECT_THROW(div(a, z, "trunc"), ValueError);
  EXPECT_THROW(remainder(a, Scalar(0)), ValueError);
  EXPECT_THROW(fmod(a, z), ValueError);
  try {
    div(a, Scalar(0), "floor");
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("ZeroDivisionError"), std::string::npos) << e.what();
  }
  // In place, self is untouched when the error is raised.
  Tensor s = tensor({5, 6, 7});
  EXPECT_THROW(s.div_(z), DTypeError);  // true division of int64 cannot go in place
  // Large and strided divisors are checked too (parallel path).
  Tensor big = ones({100000}, kInt32);
  std::vector<int32_t> divisor(100000, 1);
  divisor.back() = 0;
  Tensor bz = from_vector(divisor);
  EXPECT_THROW(div(big, bz, "floor"), ValueError);
  EXPECT_THROW(div(big.view({100, 1000}).t(), bz.view({100, 1000}).t(), "floor"), ValueError);
  // An empty result divides nothing (Note [Division by zero in an empty result]).
  EXPECT_EQ(fmod(zeros({7, 0}, kInt64), scalar_tensor(0, kInt64)).size(0), 7);
  EXPECT_EQ(div(zeros({0, 3}, kInt32), tensor({1, 0, 2}, kInt32), "floor").size(1), 3);
  EXPECT_EQ(remainder(zeros({0}, kInt64), Scalar(0)).numel(), 0);
  // True division of integers gives float, inf for x / 0.
  Tensor t = a / z;
  EXPECT_EQ(t.dtype(), kFloat32);
  EXPECT_TRUE(std::isinf(t.to_vector<float>()[1]));
}

TEST(Binary, UnknownRoundingModeRaisesValueError) {
  EXPECT_THROW(div(tensor({1.0}), tensor({2.0}), "round"), ValueError);
  EXPECT_THROW(div(tensor({1.0}), Scalar(2), "ceil"), ValueError);
}

TEST(Binary, TensorWithScalarKeepsTheTensorsCategory) {
  EXPECT_EQ((tensor({200}, kUInt8) + Scalar(1000)).dtype(), kUInt8);
  EXPECT_EQ((tensor({200}, kUInt8) + Scalar(1000)).item<int64_t>(), (200 + 1000) % 256);
  Tensor f = tensor({3}, kInt32) * Scalar(2.5);
  EXPECT_EQ(f.dtype(), kFloat32);
  EXPECT_FLOAT_EQ(f.item<float>(), 7.5f);
  EXPECT_EQ((tensor({1.0}, kFloat16) * Scalar(2.5)).dtype(), kFloat16);
  EXPECT_EQ((tensor({1}, kInt16) + Scalar(1)).dtype(), kInt16);
  EXPECT_EQ((tensor({1}, kBool) + Scalar(1)).dtype(), kInt64);
  EXPECT_EQ((Scalar(2) - tensor({1}, kInt8)).dtype(), kInt8);
  EXPECT_EQ((Scalar(2) - tensor({1}, kInt8)).item<int64_t>(), 1);
  EXPECT_EQ((Scalar(1) / tensor({4}, kInt32)).item<float>(), 0.25f);
}

TEST(Binary, InPlaceRequiresCastableResult) {
  Tensor i = tensor({1, 2});
  EXPECT_THROW(i.add_(tensor({1.5, 2.5})), DTypeError);
  EXPECT_THROW(i += Scalar(1.5), DTypeError);
  EXPECT_EQ(values<int64_t>(i), (std::vector<int64_t>{1, 2}));
  Tensor u = tensor({250}, kUInt8);
  u += tensor({10}, kInt64);  // same category: allowed, wraps in uint8
  EXPECT_EQ(u.item<int64_t>(), 4);
  Tensor f = tensor({1.0, 2.0});
  f *= tensor({2, 3});
  f /= Scalar(2);
  f -= Scalar(0.5);
  EXPECT_EQ(values<float>(f), (std::vector<float>{0.5f, 2.5f}));
  const uint32_t v = f.version();
  f.add_(Scalar(1), Scalar(2));
  EXPECT_GT(f.version(), v);
  EXPECT_EQ(values<float>(f), (std::vector<float>{2.5f, 4.5f}));
  EXPECT_THROW(tensor({1.0}).add_(tensor({1.0, 2.0})), ShapeError);
}

TEST(Binary, AddAndSubUseAlpha) {
  Tensor a = tensor({1, 2}), b = tensor({10, 20});
  EXPECT_EQ(values<int64_t>(add(a, b, 3)), (std::vector<int64_t>{31, 62}));
  EXPECT_EQ(values<int64_t>(sub(a, b, 2)), (std::vector<int64_t>{-19, -38}));
  EXPECT_THROW(add(a, b, 1.5), ValueError);
  Tensor big = from_vector(std::vector<int64_t>{INT64_MAX});
  EXPECT_EQ(add(big, Scalar(1)).item<int64_t>(), INT64_MIN);  // wraps, no UB
  EXPECT_EQ(mul(big, Scalar(2)).item<int64_t>(), -2);
}

TEST(Binary, IntegerPowWrapsAndRejectsNegativeScalarExponent) {
  Tensor a = tensor({2, 3, -1, 1, 5}, kInt32);
  EXPECT_EQ(values<int32_t>(a.pow(Scalar(3))), (std::vector<int32_t>{8, 27, -1, 1, 125}));
  EXPECT_EQ(tensor({2}, kUInt8).pow(Scalar(9)).item<int64_t>(), 0);  // 512 mod 256
  EXPECT_EQ(tensor({3}, kUInt8).pow(Scalar(5)).item<int64_t>(), 243);
  EXPECT_EQ(tensor({3}, kUInt8).pow(Scalar(6)).item<int64_t>(), (729 % 256));
  EXPECT_THROW(a.pow(Scalar(-1)), ValueError);
  // A tensor exponent follows PyTorch: 1 for 1, +-1 for -1, 0 otherwise.
  EXPECT_EQ(values<int32_t>(a.pow(tensor({-1, -2, -3, -4, -1}, kInt32))),
            (std::vector<int32_t>{0, 0, -1, 1, 0}));
  EXPECT_EQ(tensor({2}, kInt32).pow(Scalar(0.5)).dtype(), kFloat32);
}

TEST(Binary, MaximumPropagatesNaN) {
  Tensor a = tensor({1.0, NAN, 3.0}), b = tensor({2.0, 0.0, NAN});
  std::vector<float> m = maximum(a, b).to_vector<float>();
  EXPECT_EQ(m[0], 2.0f);
  EXPECT_TRUE(std::isnan(m[1]));
  EXPECT_TRUE(std::isnan(m[2]));
}

TEST(Binary, BitwiseOnFloatRaisesDTypeError) {
  EXPECT_THROW(bitwise_and(tensor({1.0}), tensor({1.0})), DTypeError);
  EXPECT_THROW(tensor({1}) & tensor({1.0}), DTypeError);
  EXPECT_THROW(tensor({1}) << Scalar(1.5), DTypeError);
  EXPECT_EQ(values<int64_t>(tensor({6}) & tensor({3})), (std::vector<int64_t>{2}));
  EXPECT_EQ(values<bool>(tensor({1}, kBool) ^ tensor({1}, kBool)), (std::vector<bool>{false}));
}

TEST(Binary, SubWithBoolRaises) {
  EXPECT_THROW(tensor({1}, kBool) - tensor({1}, kBool), DTypeError);
  EXPECT_THROW(tensor({1}) - tensor({1}, kBool), DTypeError);
}

TEST(Binary, MixedSignednessTensorsCompareExactly) {
  Tensor u = tensor({255}, kUInt8), s = tensor({-1}, kInt8);
  EXPECT_TRUE((u > s).item<bool>());  // computed in int16
  Tensor u32 = from_vector(std::vector<uint32_t>{UINT32_MAX});
  Tensor i32 = tensor({-1}, kInt32);
  EXPECT_FALSE((u32 == i32).item<bool>());  // computed in int64
}

// kiln-fuzz seed 20261216 index 534: each side's truth is taken in its own dtype; a 0-dim
// float 0.3 is true next to an int64 tensor (it was converted to the integer 0 first).
TEST(Binary, LogicalOpsTakeEachOperandsTruthInItsOwnDtype) {
  Tensor ints = tensor({0, 1, 2}, kInt64), point3 = scalar_tensor(0.3, kFloat32);
  EXPECT_EQ(values<bool>(logical_xor(ints, point3)), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(values<bool>(logical_and(point3, ints)), (std::vector<bool>{false, true, true}));
  EXPECT_EQ(values<bool>(logical_or(tensor({0.0, 0.5}), tensor({0, 0}, kInt32))),
            (std::vector<bool>{false, true}));
  Tensor nan = scalar_tensor(NAN, kFloat64);  // NaN is true
  EXPECT_EQ(values<bool>(logical_and(tensor({0, 3}, kUInt8), nan)),
            (std::vector<bool>{false, true}));
}

// PyTorch's assert_no_partial_overlap: an in-place op whose input is another view of the
// memory it writes would read elements it already overwrote.
TEST(Binary, InPlaceWithAPartiallyOverlappingInputIsAnError) {
  Tensor x = arange(16).to(kFloat32).view({4, 4});
  try {
    x.add_(x.t());
    FAIL() << "expected an overlap error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("add_"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("same memory location"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(".clone()"), std::string::npos) << e.what();
  }
  Tensor flat = arange(8).to(kFloat32);
  EXPECT_THROW(flat.narrow(0, 0, 6).mul_(flat.narrow(0, 2, 6)), ValueError);
  // The same view, disjoint views and a clone are fine.
  x.add_(x);
  EXPECT_EQ(x.select(0, 1).to_vector<float>(), (std::vector<float>{8, 10, 12, 14}));
  flat.narrow(0, 0, 4).add_(flat.narrow(0, 4, 4));
  EXPECT_EQ(flat.narrow(0, 0, 4).to_vector<float>(), (std::vector<float>{4, 6, 8, 10}));
  x.add_(x.t().clone());
}

}  // namespace
}  // namespace kiln
