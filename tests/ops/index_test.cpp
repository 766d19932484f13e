// Behaviour of Tensor::index / index_put_ and the index ops beyond what the harness checks.
#include <gtest/gtest.h>

#include "kiln/kiln.h"

using namespace kiln;
using namespace kiln::indexing;

namespace {

std::vector<int64_t> shape(const Tensor& t) { return {t.sizes().begin(), t.sizes().end()}; }

TEST(Indexing, SliceNoneIntEllipsisMatchesManualComputation) {
  Tensor t = arange(4 * 5 * 6).view({4, 5, 6});
  // t[1:, None, 0, ...] -> [3, 1, 6]; element [i, 0, k] = t[i + 1, 0, k].
  Tensor r = t.index({Slice(1, None), None, 0, Ellipsis});
  EXPECT_EQ(shape(r), (std::vector<int64_t>{3, 1, 6}));
  EXPECT_TRUE(r.is_alias_of(t));
  std::vector<int64_t> v = r.to_vector<int64_t>();
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t k = 0; k < 6; ++k) EXPECT_EQ(v[i * 6 + k], (i + 1) * 30 + k);
}

TEST(Indexing, SliceWithStepAndNegativeBounds) {
  Tensor t = arange(10);
  EXPECT_EQ(t.index({Slice(-8, -1, 3)}).to_vector<int64_t>(), (std::vector<int64_t>{2, 5, 8}));
}

TEST(Indexing, NegativeSliceStepRaisesValueError) {
  EXPECT_THROW(arange(5).index({Slice(None, None, -1)}), ValueError);
}

TEST(Indexing, TooManyIndicesRaisesIndexError) {
  EXPECT_THROW(arange(5).index({0, 0}), IndexError);
  EXPECT_THROW(arange(5).index({Ellipsis, Ellipsis}), IndexError);
}

TEST(Indexing, BoolMaskSelectsInRowMajorOrder) {
  Tensor t = arange(6).view({2, 3});
  Tensor mask = from_vector(std::vector<bool>{true, false, true, false, true, false},
                            std::vector<int64_t>{2, 3});
  EXPECT_EQ(t.index({mask}).to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 4}));
  Tensor rows = from_vector(std::vector<bool>{false, true});
  Tensor r = t.index({rows});
  EXPECT_EQ(shape(r), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{3, 4, 5}));
  // A mask on dim 1 after a slice.
  Tensor cols = from_vector(std::vector<bool>{true, false, true});
  EXPECT_EQ(t.index({Slice(), cols}).to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 3, 5}));
}

TEST(Indexing, BoolMaskShapeMismatchRaisesIndexError) {
  Tensor t = arange(6).view({2, 3});
  EXPECT_THROW(t.index({from_vector(std::vector<bool>{true, false, true})}), IndexError);
}

TEST(Indexing, BoolValueAddsOrDropsADim) {
  Tensor t = arange(3);
  EXPECT_EQ(shape(t.index({true})), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(shape(t.index({false})), (std::vector<int64_t>{0, 3}));
}

TEST(Indexing, NonAdjacentIndexTensorsMoveToTheFront) {
  Tensor t = arange(2 * 3 * 4).view({2, 3, 4});
  Tensor i = tensor({1, 0});
  Tensor r = t.index({i, Slice(), i});  // result [2, 3]: r[k, j] = t[i[k], j, i[k]]
  EXPECT_EQ(shape(r), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{13, 17, 21, 0, 4, 8}));
  Tensor adj = t.index({Slice(), i, i});  // adjacent: [2, 2]
  EXPECT_EQ(shape(adj), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(adj.to_vector<int64_t>(), (std::vector<int64_t>{5, 0, 17, 12}));
}

TEST(Indexing, UnsignedIndexTensorsWork) {
  Tensor t = arange(0, 50, 10);
  Tensor i = from_vector(std::vector<uint64_t>{4, 0});
  EXPECT_EQ(t.index({i}).to_vector<int64_t>(), (std::vector<int64_t>{40, 0}));
  EXPECT_THROW(t.index({from_vector(std::vector<uint64_t>{UINT64_MAX})}), IndexError);
}

TEST(Indexing, IndexPutAccumulateAddsDuplicates) {
  Tensor t = zeros({4}, kInt32);
  index_put_(t, {tensor({1, 1, 3, 1})}, tensor({1, 2, 3, 4}, kInt32), true);
  EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{0, 7, 0, 3}));
  Tensor f = zeros({2, 2});
  index_put_(f, {tensor({0, 0}), tensor({1, 1})}, tensor({0.5, 0.25}), true);
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{0, 0.75f, 0, 0}));
}

// Whole rows of a row-major tensor are copied row by row (cpu::gather_rows, scatter_rows); the
// result equals the element-by-element path, which a transposed (not row-major) input takes.
// Enough rows for scatter_rows to split dst's rows over the threads (Note [Writing rows in
// parallel, last write wins]): with duplicates in any order the last write of each row wins, as
// on the element path (a column-major dst), and values that share dst's memory are read before
// any write.
TEST(Indexing, ParallelRowWritesKeepTheLastWriteOfEachRow) {
  const int64_t n = 1024, width = 256;
  Tensor rows = (arange(3 * n) * 389) % n;  // every row three times, interleaved
  const Tensor values = arange(3 * n * width, kFloat32).reshape({3 * n, width});
  Tensor fast = zeros({n, width}), slow = zeros({width, n}).t();
  index_put_(fast, {rows}, values);
  index_put_(slow, {rows}, values);
  EXPECT_EQ(fast.to_vector<float>(), slow.contiguous().to_vector<float>());
  // Row r was last written by the largest p with (389 p) % n == r.
  for (int64_t p = 2 * n; p < 3 * n; ++p) {
    const int64_t r = (p * 389) % n;
    ASSERT_EQ(fast.select(0, r).to_vector<float>()[0], static_cast<float>(p * width)) << p;
  }
  // values a view of dst itself: dst[i] = dst[n - 1 - i], from the rows as they were.
  Tensor self = arange(n * width, kFloat32).reshape({n, width});
  const Tensor before = self.clone();
  index_put_(self, {arange(n)}, self.flip({0}));
  EXPECT_EQ(self.to_vector<float>(), before.flip({0}).to_vector<float>());
  Tensor shifted = arange(n * width, kFloat32).reshape({n, width});
  index_put_(shifted, {arange(1, n)}, shifted.narrow(0, 0, n - 1));  // a view, no flip
  EXPECT_EQ(shifted.narrow(0, 1, n - 1).contiguous().to_vector<float>(),
            before.narrow(0, 0, n - 1).contiguous().to_vector<float>());
}

TEST(Indexing, RowCopiesMatchTheElementPath) {
  const Tensor x = arange(24, kFloat32).reshape({6, 4});
  const Tensor rows = tensor({4, 0, 4, 5, -1});
  const Tensor through_columns = x.t().contiguous().t();  // same values, column-major
  EXPECT_EQ(x.index_select(0, tensor({4, 0, 4, 5})).to_vector<float>(),
            through_columns.index_select(0, tensor({4, 0, 4, 5})).to_vector<float>());
  EXPECT_EQ(index(x, {rows}).to_vector<float>(), index(through_columns, {rows}).to_vector<float>());
  EXPECT_EQ(index(x, {rows}).select(0, 4).to_vector<float>()[0], 20.0f);  // -1: the last row
  // Duplicate rows without accumulate: the last write wins, on both paths.
  const Tensor values = arange(20, kFloat32).reshape({5, 4}) * -1;
  Tensor a = x.clone(), b = through_columns.clone();
  index_put_(a, {rows}, values);
  index_put_(b, {rows}, values);
  EXPECT_EQ(a.to_vector<float>(), b.contiguous().to_vector<float>());
  EXPECT_EQ(a.select(0, 4).to_vector<float>(), (std::vector<float>{-8, -9, -10, -11}));
  EXPECT_EQ(a.select(0, 5).to_vector<float>(), (std::vector<float>{-16, -17, -18, -19}));
  // Rows of a 3-D tensor indexed on a middle dim are rows too.
  const Tensor y = arange(48, kInt64).reshape({2, 6, 4});
  EXPECT_EQ(index(y, {Tensor(), tensor({5, 1})}).to_vector<int64_t>(),
            index(y.contiguous(), {Tensor(), tensor({5, 1})}).to_vector<int64_t>());
  EXPECT_EQ(index(y, {Tensor(), tensor({5, 1})}).select(0, 1).select(0, 0).to_vector<int64_t>(),
            (std::vector<int64_t>{44, 45, 46, 47}));
}

TEST(Indexing, IndexPutThroughTensorIndexList) {
  Tensor t = zeros({3, 4}, kInt64);
  t.index_put_({Slice(), tensor({0, 2})}, Scalar(7));
  t.index_put_({1, Slice(1, 3)}, Scalar(5));
  EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{7, 0, 7, 0, 7, 5, 5, 0, 7, 0, 7, 0}));
  Tensor mask = from_vector(std::vector<bool>{1, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0},
                            std::vector<int64_t>{3, 4});
  t.index_put_({mask}, tensor({1, 2, 3, 4, 5}, kInt64));
  EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 2, 0, 3, 5, 5, 0, 4, 0, 5, 0}));
}

TEST(Indexing, OutOfRangeIndexPutWritesNothing) {
  Tensor t = zeros({3}, kInt64);
  EXPECT_THROW(index_put_(t, {tensor({0, 1, 3})}, tensor({1, 1, 1}, kInt64)), IndexError);
  EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0}));
  Tensor s = zeros({3}, kInt64);
  EXPECT_THROW(s.scatter(0, tensor({0, 5}), Scalar(1)), IndexError);
}

TEST(Indexing, OutOfRangeMessageNamesOpIndexAndSize) {
  try {
    arange(3).gather(0, tensor({7}));
    FAIL();
  } catch (const IndexError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("gather"), std::string::npos);
    EXPECT_NE(m.find("7"), std::string::npos);
    EXPECT_NE(m.find("size 3"), std::string::npos);
  }
}

TEST(Indexing, NonzeroOnMetaRaisesNotImplemented) {
  Tensor m = empty({3}, TensorOptions(kFloat32).device(kMeta));
  EXPECT_THROW(m.nonzero(), NotImplementedError);
}

TEST(Indexing, IndexOnMetaGivesShapes) {
  Tensor m = empty({4, 5, 6}, TensorOptions(kFloat32).device(kMeta));
  Tensor i = empty({2, 3}, TensorOptions(kInt64).device(kMeta));
  Tensor r = m.index({Slice(), i});
  EXPECT_TRUE(r.is_meta());
  EXPECT_EQ(shape(r), (std::vector<int64_t>{4, 2, 3, 6}));
}

TEST(Indexing, OneHotInfersClasses) {
  Tensor r = one_hot(tensor({0, 2, 1}));
  EXPECT_EQ(shape(r), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0, 0, 0, 1, 0, 1, 0}));
}

TEST(ShapeOps, SplitAndChunkReturnViews) {
  Tensor t = arange(10);
  std::vector<Tensor> parts = t.split(4);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_TRUE(parts[2].is_alias_of(t));
  EXPECT_EQ(parts[2].to_vector<int64_t>(), (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(t.chunk(3).size(), 3u);
  EXPECT_EQ(t.split({3, 7})[1].size(0), 7);
}

TEST(ShapeOps, CatPromotesAndSkipsLegacyEmpty) {
  Tensor r = cat({tensor({1, 2}, kInt32), tensor({0.5}, kFloat64), zeros({0}, kUInt8)});
  EXPECT_EQ(r.dtype(), kFloat64);
  EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{1, 2, 0.5}));
  Tensor m = cat({zeros({2, 2}), zeros({0})}, 1);
  EXPECT_EQ(shape(m), (std::vector<int64_t>{2, 2}));
}

}  // namespace
