#include <gtest/gtest.h>

#include "kiln/kiln.h"

using namespace kiln;

TEST(Tensor, ZerosHasShapeDtypeAndZeroValues) {
  Tensor t = zeros({2, 3}, kUInt16);
  EXPECT_EQ(t.dim(), 2);
  EXPECT_EQ(t.size(0), 2);
  EXPECT_EQ(t.size(-1), 3);
  EXPECT_EQ(t.dtype(), kUInt16);
  EXPECT_TRUE(t.is_contiguous());
  for (uint16_t v : t.to_vector<uint16_t>()) EXPECT_EQ(v, 0);
}

TEST(Tensor, ViewsShareStorage) {
  Tensor t = arange(6).view({2, 3});
  Tensor tt = t.t();
  EXPECT_FALSE(tt.is_contiguous());
  EXPECT_TRUE(tt.is_alias_of(t));
  EXPECT_EQ(tt.to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  tt.select(0, 1).fill_(7);
  EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{0, 7, 2, 3, 7, 5}));
}

TEST(Tensor, CastFloatToUnsignedWrapsThroughInt64) {
  Tensor t = tensor({-1.0, 256.5, 3.9}, kFloat32).to(kUInt8);
  EXPECT_EQ(t.to_vector<uint8_t>(), (std::vector<uint8_t>{255, 0, 3}));
}

TEST(Tensor, MetaTensorsHaveShapeButNoData) {
  Tensor t = zeros({4, 5}, TensorOptions(kFloat64).device(kMeta));
  EXPECT_TRUE(t.is_meta());
  Tensor v = t.transpose(0, 1).unsqueeze(0);
  EXPECT_EQ(std::vector<int64_t>(v.sizes().begin(), v.sizes().end()),
            (std::vector<int64_t>{1, 5, 4}));
  EXPECT_THROW(t.item<double>(), ValueError);
}

TEST(Tensor, ViewOfIncompatibleStridesIsShapeError) {
  Tensor t = arange(6).view({2, 3}).t();
  EXPECT_THROW(t.view({6}), ShapeError);
  EXPECT_EQ(t.reshape({6}).to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
}

TEST(Tensor, HugeOrNegativeShapesAreValueErrors) {
  EXPECT_THROW(empty({-1, 2}), ValueError);
  EXPECT_THROW(empty({int64_t{1} << 40, int64_t{1} << 40}), ValueError);
  EXPECT_THROW(empty({0, int64_t{1} << 40, int64_t{1} << 40}), ValueError);
  EXPECT_THROW(empty({int64_t{1} << 62}, kFloat64), ValueError);
}
