// Behaviour of the reduction family that the OpInfo harness cannot express.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln/kiln.h"

namespace kiln {
namespace {

TEST(Reduce, Uint64SumStaysUint64AndWraps) {
  Tensor x = from_vector(std::vector<uint64_t>{UINT64_MAX, 2, 3});
  Tensor s = x.sum();
  EXPECT_EQ(s.dtype(), kUInt64);
  EXPECT_EQ(s.item<uint64_t>(), 4u);  // 2^64 - 1 + 5 wraps to 4
}

TEST(Reduce, UnsignedSumsReturnUint64AndSignedInt64) {
  EXPECT_EQ(from_vector(std::vector<uint8_t>{200, 100}).sum().dtype(), kUInt64);
  EXPECT_EQ(from_vector(std::vector<uint8_t>{200, 100}).sum().item<uint64_t>(), 300u);
  EXPECT_EQ(from_vector(std::vector<int8_t>{100, 100}).sum().dtype(), kInt64);
  EXPECT_EQ(from_vector(std::vector<int8_t>{100, 100}).sum().item<int64_t>(), 200);
  EXPECT_EQ(from_vector(std::vector<bool>{true, true, false}).sum().item<int64_t>(), 2);
  EXPECT_EQ(from_vector(std::vector<int32_t>{1, 2}).cumsum(0).dtype(), kInt64);
}

TEST(Reduce, Float32SumOfTenMillionOnesIsExact) {
  Tensor x = ones({10000000}, kFloat32);
  EXPECT_EQ(x.sum().item<float>(), 1e7f);
  // The outer fast path (reducing the leading dim) too.
  EXPECT_EQ(x.view({10000000, 1}).sum({0}).item<float>(), 1e7f);
  EXPECT_EQ(x.view({2500000, 4}).sum({0}).to_vector<float>(), std::vector<float>(4, 2.5e6f));
}

TEST(Reduce, Float32MeanOfLargeRowIsAccurate) {
  Tensor x = full({1 << 22}, 0.1, kFloat32);
  EXPECT_NEAR(x.mean().item<double>(), 0.1, 1e-6);
}

TEST(Reduce, MaxPropagatesNaN) {
  Tensor x = tensor({1.0, NAN, 3.0});
  EXPECT_TRUE(std::isnan(x.max().item<float>()));
  EXPECT_TRUE(std::isnan(x.amin().item<float>()));
  auto [v, i] = x.max(0);
  EXPECT_TRUE(std::isnan(v.item<float>()));
  EXPECT_EQ(i.item<int64_t>(), 1);
  EXPECT_EQ(x.argmin().item<int64_t>(), 1);
}

TEST(Reduce, ArgmaxReturnsFirstOccurrence) {
  Tensor x = tensor({1, 5, 2, 5, 5}, kInt32);
  EXPECT_EQ(x.argmax().item<int64_t>(), 1);
  Tensor y = tensor({3.0, 0.0, 3.0, 0.0}).view({2, 2});
  EXPECT_EQ(y.argmin(1).to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(y.argmax().item<int64_t>(), 0);
}

TEST(Reduce, EmptyReductions) {
  EXPECT_EQ(zeros({0}).sum().item<float>(), 0.0f);
  EXPECT_EQ(zeros({0}, kInt32).prod().item<int64_t>(), 1);
  EXPECT_TRUE(std::isnan(zeros({0}).mean().item<float>()));
  EXPECT_THROW(zeros({0}).max(), IndexError);
  EXPECT_THROW(zeros({2, 0}).max(1), IndexError);
  EXPECT_THROW(zeros({0}).argmax(), IndexError);
  EXPECT_EQ(zeros({0, 3}).amax({1}).numel(), 0);  // reducing a non-empty dim of an empty tensor
}

TEST(Reduce, KeepdimAndNegativeDims) {
  Tensor x = arange(24, kFloat32).view({2, 3, 4});
  Tensor s = x.sum({-1, 0}, true);
  EXPECT_EQ(s.sizes(), IntArrayRef({1, 3, 1}));
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{60, 92, 124}));
  EXPECT_EQ(x.amax({1}).sizes(), IntArrayRef({2, 4}));
  EXPECT_EQ(x.mean({-2}).to_vector<float>()[0], 4.0f);
}

TEST(Reduce, ErrorsNameTheOp) {
  try {
    zeros({2, 3}).sum({2});
    FAIL();
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("sum"), std::string::npos);
  }
  EXPECT_THROW(zeros({2}, kInt64).softmax(0), DTypeError);
  EXPECT_THROW(zeros({2}, kInt64).mean(), DTypeError);
  EXPECT_THROW(zeros({2, 3}).topk(4, 1), IndexError);
  EXPECT_THROW(zeros({2}, kInt64).var(), DTypeError);
}

TEST(Reduce, SoftmaxOfIntegerWithDtype) {
  Tensor p = tensor({1, 2, 3}, kInt64).softmax(0, kFloat32);
  EXPECT_EQ(p.dtype(), kFloat32);
  EXPECT_NEAR(p.sum().item<double>(), 1.0, 1e-6);
}

TEST(Reduce, SoftmaxIsStableForLargeInputs) {
  Tensor p = tensor({1000.0, 1000.0}).softmax(0);
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{0.5f, 0.5f}));
  Tensor l = tensor({1e30, 0.0}).log_softmax(0);
  EXPECT_EQ(l.to_vector<float>()[0], 0.0f);
}

TEST(Reduce, LogsumexpHandlesInfinities) {
  EXPECT_EQ(tensor({-INFINITY, -INFINITY}).logsumexp({0}).item<float>(), -INFINITY);
  EXPECT_NEAR(tensor({1000.0, 1000.0}).logsumexp({0}).item<double>(), 1000 + std::log(2.0), 1e-3);
}

TEST(Reduce, VarianceCorrection) {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0});
  EXPECT_NEAR(x.var().item<double>(), 1.6666667, 1e-6);
  EXPECT_NEAR(x.var({}, 0).item<double>(), 1.25, 1e-6);
  EXPECT_NEAR(x.std().item<double>(), std::sqrt(1.6666667), 1e-6);
}

TEST(Sort, StableSortKeepsOrderOfEqualKeys) {
  Tensor x = tensor({2, 1, 2, 1, 2}, kInt32);
  auto [v, i] = x.sort(0, false, true);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 0, 2, 4}));
  auto [vd, id] = x.sort(0, true, true);
  EXPECT_EQ(id.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 4, 1, 3}));
}

TEST(Sort, NaNSortsLastAscendingAndFirstDescending) {
  Tensor x = tensor({3.0, NAN, -1.0, INFINITY});
  auto [v, i] = x.sort();
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{2, 0, 3, 1}));
  EXPECT_EQ(x.argsort(-1, true).to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 0, 2}));
  auto [tv, ti] = x.topk(1);
  EXPECT_EQ(ti.item<int64_t>(), 1);  // NaN is the largest, as PyTorch
}

TEST(Sort, Uint64SortsByValue) {
  Tensor x = from_vector(std::vector<uint64_t>{UINT64_MAX, 0, uint64_t{1} << 63});
  EXPECT_EQ(x.sort().first.to_vector<uint64_t>(),
            (std::vector<uint64_t>{0, uint64_t{1} << 63, UINT64_MAX}));
}

TEST(Reduce, MetaTensorsGetShapes) {
  Tensor x = empty({4, 5, 6}, TensorOptions(kInt8).device(Device::Meta));
  Tensor s = x.sum({1}, true);
  EXPECT_TRUE(s.is_meta());
  EXPECT_EQ(s.dtype(), kInt64);
  EXPECT_EQ(s.sizes(), IntArrayRef({4, 1, 6}));
}

}  // namespace
}  // namespace kiln
