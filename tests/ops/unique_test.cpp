// unique and repeat_interleave (src/ops/unique.cpp): PyTorch's values, every dtype, the sizes 0
// and 1, NaN, and the bad inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"

namespace kiln {
namespace {

std::vector<int64_t> ints(const Tensor& t) { return t.to(kInt64).to_vector<int64_t>(); }

TEST(Unique, SortedValuesInverseAndCounts) {
  const Tensor x = tensor({3, 1, 2, 3, 1, 3}).reshape({2, 3});
  const UniqueResult u = unique(x);
  EXPECT_EQ(ints(u.values), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(u.inverse.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ints(u.inverse), (std::vector<int64_t>{2, 0, 1, 2, 0, 2}));
  EXPECT_EQ(ints(u.counts), (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(u.values.dtype(), kInt64);
  EXPECT_EQ(u.inverse.dtype(), kInt64);
}

TEST(Unique, EveryDtypeKeepsItsDtype) {
  for (ScalarType t : {kUInt8, kInt8, kInt32, kUInt64, kFloat16, kBFloat16, kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(t));
    const UniqueResult u = unique(tensor({5, 0, 5, 7}).to(t));
    EXPECT_EQ(u.values.dtype(), t);
    EXPECT_EQ(ints(u.values), (std::vector<int64_t>{0, 5, 7}));
    EXPECT_EQ(ints(u.counts), (std::vector<int64_t>{1, 2, 1}));
  }
  const UniqueResult b = unique(tensor({1, 0, 1}).ne(0));
  EXPECT_EQ(b.values.dtype(), kBool);
  EXPECT_EQ(ints(b.values), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(ints(b.inverse), (std::vector<int64_t>{1, 0, 1}));
}

TEST(Unique, EachNanIsItsOwnValueAndSortsLast) {
  const float nan = std::nanf("");
  const Tensor x = from_vector(std::vector<float>{nan, 1.0f, nan, 1.0f, -2.0f});
  const UniqueResult u = unique(x);
  const std::vector<float> v = u.values.to_vector<float>();
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0], -2.0f);
  EXPECT_EQ(v[1], 1.0f);
  EXPECT_TRUE(std::isnan(v[2]) && std::isnan(v[3]));
  EXPECT_EQ(ints(u.counts), (std::vector<int64_t>{1, 2, 1, 1}));
  EXPECT_EQ(ints(u.inverse), (std::vector<int64_t>{2, 1, 3, 1, 0}));
}

TEST(Unique, SizesZeroAndOne) {
  const UniqueResult empty_result = unique(zeros({0, 3}));
  EXPECT_EQ(empty_result.values.sizes().vec(), (std::vector<int64_t>{0}));
  EXPECT_EQ(empty_result.inverse.sizes().vec(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(empty_result.counts.numel(), 0);
  const UniqueResult one = unique(scalar_tensor(4.5));
  EXPECT_EQ(one.values.to_vector<float>(), (std::vector<float>{4.5f}));
  EXPECT_EQ(one.inverse.dim(), 0);
  EXPECT_EQ(ints(one.counts), (std::vector<int64_t>{1}));
}

TEST(Unique, OnMetaTensorsOutsideATraceRaises) {
  EXPECT_THROW(unique(empty({3}, TensorOptions().device(Device::Meta))), NotImplementedError);
}

TEST(RepeatInterleave, OfRepeatsGivesTheRepeatedIndices) {
  EXPECT_EQ(ints(repeat_interleave(tensor({2, 0, 1, 3}))),
            (std::vector<int64_t>{0, 0, 2, 3, 3, 3}));
  const Tensor r = repeat_interleave(tensor({1, 2}).to(kInt32));
  EXPECT_EQ(r.dtype(), kInt32);
  EXPECT_EQ(ints(r), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(repeat_interleave(tensor({0, 0})).numel(), 0);
  const std::optional<int64_t> three = 3;  // output_size (a plain 3 would be the int repeats)
  EXPECT_EQ(ints(repeat_interleave(tensor({2, 1}), three)), (std::vector<int64_t>{0, 0, 1}));
}

TEST(RepeatInterleave, OfATensorAlongADim) {
  const Tensor x = tensor({1, 2, 3, 4}).reshape({2, 2});
  const Tensor rows = repeat_interleave(x, tensor({1, 2}), 0);
  EXPECT_EQ(rows.sizes().vec(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(ints(rows), (std::vector<int64_t>{1, 2, 3, 4, 3, 4}));
  // One repeat for every slice, and no dim: the flattened tensor.
  EXPECT_EQ(ints(repeat_interleave(x, tensor({2}))),
            (std::vector<int64_t>{1, 1, 2, 2, 3, 3, 4, 4}));
  const Tensor cols = repeat_interleave(x, 2, 1);
  EXPECT_EQ(cols.sizes().vec(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(ints(cols), (std::vector<int64_t>{1, 1, 2, 2, 3, 3, 4, 4}));
  EXPECT_EQ(ints(repeat_interleave(x, 2, -2)), (std::vector<int64_t>{1, 2, 1, 2, 3, 4, 3, 4}));
  EXPECT_EQ(repeat_interleave(x, 0, 0).sizes().vec(), (std::vector<int64_t>{0, 2}));
}

TEST(RepeatInterleave, GradientsSumTheRepeatedSlices) {
  const Tensor x = tensor({1.0, 2.0, 3.0}, kFloat64).requires_grad_();
  const Tensor y = repeat_interleave(x, tensor({3, 0, 2}), 0);
  const Tensor w = tensor({1.0, 2.0, 3.0, 4.0, 5.0}, kFloat64);
  const Tensor g = grad({(y * w).sum()}, {x})[0];
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{6.0, 0.0, 9.0}));
  const Tensor g2 = grad({repeat_interleave(x, 2).sum()}, {x})[0];
  EXPECT_EQ(g2.to_vector<double>(), (std::vector<double>{2.0, 2.0, 2.0}));
}

TEST(RepeatInterleave, BadRepeatsRaise) {
  const Tensor x = ones({2, 3});
  EXPECT_THROW(repeat_interleave(tensor({1, -1})), ValueError);
  EXPECT_THROW(repeat_interleave(tensor({1, 2}).reshape({1, 2})), ValueError);
  EXPECT_THROW(repeat_interleave(tensor({1.0, 2.0})), Error);
  EXPECT_THROW(repeat_interleave(tensor({1, 2}), std::optional<int64_t>(4)), ValueError);
  EXPECT_THROW(repeat_interleave(x, tensor({1, 2}), 1), ShapeError);  // 3 slices, 2 repeats
  EXPECT_THROW(repeat_interleave(x, -1, 0), ValueError);
  EXPECT_THROW(repeat_interleave(x, 2, 2), Error);
  try {
    repeat_interleave(tensor({3, -2}));
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("repeat_interleave: repeats must be non-negative, got -2 "
                                         "at index 1"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kiln
