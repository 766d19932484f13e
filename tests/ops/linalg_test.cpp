// Behaviour of the matrix products, convolutions and pooling beyond what the OpInfo harness
// checks: hand-computed values, wrap-around, NaN handling, error messages.
#include <gtest/gtest.h>
#include <omp.h>

#include <array>
#include <cmath>

#include "kiln/kiln.h"

namespace kiln {
namespace {

std::vector<int64_t> shape(const Tensor& t) { return t.sizes().vec(); }

TEST(Linalg, MmMatchesHandComputedValues) {
  Tensor a = tensor({1.0, 2.0, 3.0, 4.0}).view({2, 2});
  Tensor b = tensor({5.0, 6.0, 7.0, 8.0}).view({2, 2});
  EXPECT_EQ(a.mm(b).to_vector<float>(), (std::vector<float>{19, 22, 43, 50}));
  EXPECT_EQ(a.t().mm(b).to_vector<float>(), (std::vector<float>{26, 30, 38, 44}));
  EXPECT_EQ(a.mm(b.t()).to_vector<float>(), (std::vector<float>{17, 23, 39, 53}));
}

// Note [Matrix-vector products] (src/kernels/cpu/blas.cpp): one-row and one-column products
// take gemv, whatever the operands' layouts (contiguous, transposed, every other column).
TEST(Linalg, OneRowAndOneColumnProductsMatchTheSumOfProducts) {
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    Tensor wide = (arange(int64_t{10} * 10) % 11).to(dtype).view({10, 10}) * 0.25 - 1;
    // A contiguous row, a column read as a row (elements 10 apart), every other element.
    const std::vector<Tensor> rows = {wide.narrow(0, 2, 1), wide.narrow(1, 3, 1).t(),
                                      wide.narrow(0, 1, 1).slice(1, 0, 10, 2)};
    Tensor b = (arange(int64_t{10} * 6) % 7).to(dtype).view({10, 6}) * 0.5 - 1;
    const std::vector<Tensor> matrices = {b, b.t().contiguous().t(), b.slice(0, 0, 10, 2)};
    for (const Tensor& a : rows) {
      for (const Tensor& m : matrices) {
        if (a.size(1) != m.size(0)) continue;
        Tensor expected = (a.t() * m).sum({0}, /*keepdim=*/true);  // [1, n]
        Tensor out = a.mm(m);
        ASSERT_EQ(shape(out), shape(expected));
        const auto got = out.to_vector<double>(), want = expected.to_vector<double>();
        for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
        // The transposed problem: a column on the right.
        Tensor col = m.t().mm(a.t());
        const auto got_col = col.to_vector<double>();
        ASSERT_EQ(shape(col), (std::vector<int64_t>{m.size(1), 1}));
        for (size_t i = 0; i < got_col.size(); ++i) EXPECT_NEAR(got_col[i], want[i], 1e-5) << i;
      }
    }
    // addmm's beta scales what is in `self` through gemv's y too.
    Tensor bias = full({1, 6}, 2.0, dtype);
    Tensor r = addmm(bias, rows[0], b, /*beta=*/0.5, /*alpha=*/2.0);
    Tensor e = (rows[0].t() * b).sum({0}, true) * 2.0 + 1.0;
    const auto got = r.to_vector<double>(), want = e.to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
  }
}

// Note [Products on Kiln's threads] (src/kernels/cpu/blas.cpp): every product runs BLAS with one
// OpenMP thread; the OpenMP thread count is restored after it, and small and large products
// (single and batched) still match float64.
TEST(Linalg, SmallProductsRunSeriallyAndRestoreTheThreadCount) {
  const int threads = omp_get_max_threads();
  Tensor x = randn({1, 784}), w = randn({512, 784}), b = randn({4, 3, 40}), c = randn({4, 40, 5});
  Tensor small = linear(x, w);
  EXPECT_EQ(omp_get_max_threads(), threads);
  Tensor batched = matmul(b, c);
  EXPECT_EQ(omp_get_max_threads(), threads);
  Tensor large = matmul(randn({256, 256}), randn({256, 256}));
  EXPECT_EQ(omp_get_max_threads(), threads);
  auto expect_near = [](const Tensor& got, const Tensor& want) {
    const std::vector<double> g = got.to(kFloat64).to_vector<double>();
    const std::vector<double> e = want.to_vector<double>();
    ASSERT_EQ(g.size(), e.size());
    for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], e[i], 1e-4 * (1 + std::abs(e[i]))) << i;
  };
  expect_near(small, linear(x.to(kFloat64), w.to(kFloat64)));
  expect_near(batched, matmul(b.to(kFloat64), c.to(kFloat64)));
  EXPECT_EQ(large.sizes().vec(), (std::vector<int64_t>{256, 256}));
}

// Products large enough to be threaded: OpenBLAS's are split into bands of rows or of columns
// (Note [Splitting a product over the threads]), float32 may go to oneDNN (Note [oneDNN for
// float32 products]; ctest runs these tests once per library with KILN_GEMM). Small integer
// values make every sum exact, so each layout must give the integer kernel's result exactly.
TEST(Linalg, ThreadedProductsMatchTheExactIntegerProductInEveryLayout) {
  const auto ints = [](int64_t rows, int64_t cols, int64_t salt) {
    return ((arange(rows * cols) * 7 + salt) % 9 - 4).view({rows, cols});
  };
  // Tall (split by rows; 1000 is not a multiple of 16), wide (by columns), and square.
  const std::vector<std::array<int64_t, 3>> shapes = {
      {1000, 64, 40}, {40, 64, 1000}, {130, 130, 130}};
  for (const auto& [m, k, n] : shapes) {
    const Tensor a = ints(m, k, 1), b = ints(k, n, 2);
    const std::vector<int64_t> want = a.mm(b).to_vector<int64_t>();
    for (ScalarType dtype : {kFloat32, kFloat64}) {
      const Tensor fa = a.to(dtype), fb = b.to(dtype);
      // Stored as is, and stored transposed (read by BLAS with its Trans flag).
      for (const Tensor& x : {fa, fa.t().contiguous().t()}) {
        for (const Tensor& y : {fb, fb.t().contiguous().t()}) {
          EXPECT_EQ(x.mm(y).to(kInt64).to_vector<int64_t>(), want)
              << dtype_name(dtype) << " [" << m << ", " << k << "] x [" << k << ", " << n << "]";
        }
      }
      // A batch of two of them, and addmm accumulating into a nonzero output.
      const Tensor batched = stack({fa, fa * 2}).bmm(stack({fb, fb}));
      EXPECT_EQ(batched.select(0, 1).to(kInt64).to_vector<int64_t>(),
                (a.mm(b) * 2).to_vector<int64_t>());
      const Tensor sum = addmm(full({m, n}, 3.0, dtype), fa, fb, /*beta=*/1.0, /*alpha=*/1.0);
      EXPECT_EQ(sum.to(kInt64).to_vector<int64_t>(), (a.mm(b) + 3).to_vector<int64_t>());
    }
  }
}

TEST(Linalg, MatmulOfTwoVectorsIsAZeroDimDot) {
  Tensor r = matmul(tensor({1.0, 2.0, 3.0}), tensor({4.0, 5.0, 6.0}));
  EXPECT_EQ(r.dim(), 0);
  EXPECT_EQ(r.item<float>(), 32.0f);
}

TEST(Linalg, MatmulBroadcastsBatchDims) {
  Tensor a = ones({2, 1, 3, 4});
  Tensor b = ones({5, 4, 2});
  Tensor r = a.matmul(b);
  EXPECT_EQ(shape(r), (std::vector<int64_t>{2, 5, 3, 2}));
  for (float v : r.to_vector<float>()) EXPECT_EQ(v, 4.0f);
}

TEST(Linalg, MatmulRemovesTheDimOfAVectorOperand) {
  EXPECT_EQ(shape(matmul(ones({4}), ones({2, 4, 5}))), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(shape(matmul(ones({2, 3, 4}), ones({4}))), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(shape(matmul(ones({0, 3, 4}), ones({4, 2}))), (std::vector<int64_t>{0, 3, 2}));
}

TEST(Linalg, Int8MatmulWrapsAround) {
  Tensor a = tensor({100, 100}, kInt8).view({1, 2});
  Tensor b = tensor({2, 1}, kInt8).view({2, 1});
  EXPECT_EQ(a.mm(b).item<int64_t>(), 44);  // 300 mod 256
  Tensor c = tensor({-128}, kInt8).view({1, 1});
  EXPECT_EQ(c.mm(tensor({-1}, kInt8).view({1, 1})).item<int64_t>(),
            -128);  // no UB on INT8_MIN * -1
}

TEST(Linalg, Uint16MatmulDoesNotOverflowIntPromotion) {
  // 65535 * 65535 overflows int (uint16 promotes to int in C++); the kernel wraps instead.
  Tensor a = from_vector(std::vector<uint16_t>{65535}, std::vector<int64_t>{1, 1});
  EXPECT_EQ(a.mm(a).item<int64_t>(), 1);  // (2^16 - 1)^2 mod 2^16
}

TEST(Linalg, Uint64MatmulWrapsAround) {
  Tensor a = from_vector(std::vector<uint64_t>{UINT64_MAX, 2}, std::vector<int64_t>{1, 2});
  Tensor b = from_vector(std::vector<uint64_t>{3, 1}, std::vector<int64_t>{2, 1});
  EXPECT_EQ(a.mm(b).item<uint64_t>(), uint64_t{UINT64_MAX - 2 + 2});  // -3 + 2 mod 2^64
}

TEST(Linalg, AddmmWithBetaZeroIgnoresNaNInSelf) {
  Tensor self = full({2, 2}, NAN);
  Tensor r = addmm(self, ones({2, 3}), ones({3, 2}), 0, 2);
  for (float v : r.to_vector<float>()) EXPECT_EQ(v, 6.0f);
  // The gemv paths (Note [Matrix-vector products]) too: one row, one column.
  for (float v : addmm(full({1, 2}, NAN), ones({1, 3}), ones({3, 2}), 0, 2).to_vector<float>())
    EXPECT_EQ(v, 6.0f);
  for (float v : addmm(full({2, 1}, NAN), ones({2, 3}), ones({3, 1}), 0, 2).to_vector<float>())
    EXPECT_EQ(v, 6.0f);
}

TEST(Linalg, MmShapeErrorNamesOpAndShapes) {
  try {
    mm(zeros({2, 3}), zeros({4, 5}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "mm: mat1 [2, 3] and mat2 [4, 5] cannot be multiplied (3 != 4)");
  }
}

TEST(Linalg, MixedDtypesAndBoolAreRejected) {
  EXPECT_THROW(mm(zeros({2, 3}), zeros({3, 2}, kFloat64)), DTypeError);
  EXPECT_THROW(matmul(zeros({2, 3}, kBool), zeros({3, 2}, kBool)), DTypeError);
  EXPECT_THROW(addmm(zeros({2}, kInt32), zeros({2, 3}, kInt32), zeros({3, 2}, kInt32), 0.5, 1),
               DTypeError);
}

TEST(Linalg, LinearOnMetaTensorsGivesTheShape) {
  Tensor x = empty({4, 7, 3}, TensorOptions(kFloat32).device(Device::Meta));
  Tensor w = empty({5, 3}, TensorOptions(kFloat32).device(Device::Meta));
  Tensor b = empty({5}, TensorOptions(kFloat32).device(Device::Meta));
  Tensor r = linear(x, w, b);
  EXPECT_TRUE(r.is_meta());
  EXPECT_EQ(shape(r), (std::vector<int64_t>{4, 7, 5}));
}

TEST(Linalg, HalfAndBFloat16ProductsComputeInFloat) {
  for (ScalarType dt : {kFloat16, kBFloat16}) {
    Tensor a = full({1, 64}, 0.5, TensorOptions(dt));
    Tensor b = full({64, 1}, 3.0, TensorOptions(dt));
    EXPECT_EQ(a.mm(b).dtype(), dt);
    EXPECT_EQ(a.mm(b).item<float>(), 96.0f);
  }
}

TEST(Conv, Conv2dOfOnesCountsTheWindow) {
  Tensor r = conv2d(ones({1, 1, 3, 3}), ones({1, 1, 2, 2}), {}, 1, 1);
  EXPECT_EQ(shape(r), (std::vector<int64_t>{1, 1, 4, 4}));
  EXPECT_EQ(r.to_vector<float>(),
            (std::vector<float>{1, 2, 2, 1, 2, 4, 4, 2, 2, 4, 4, 2, 1, 2, 2, 1}));
}

TEST(Conv, SamePaddingKeepsTheSizeForEvenKernels) {
  Tensor r = conv2d(ones({2, 3, 6, 7}), ones({4, 3, 4, 2}), {}, 1, ConvPadding::Same, 1);
  EXPECT_EQ(shape(r), (std::vector<int64_t>{2, 4, 6, 7}));
  // Total padding 3 rows = 1 before + 2 after (the odd one at the end) and 1 column = 0 + 1:
  // output (0, 0) sees 3 input rows x 2 columns, output (5, 6) sees 2 rows x 1 column.
  const std::vector<float> v = r.to_vector<float>();
  EXPECT_EQ(v[0], 3.0f * 2 * 3);
  EXPECT_EQ(v[6 * 7 - 1], 2.0f * 1 * 3);
}

TEST(Conv, Conv1dWithBiasAndGroups) {
  Tensor x = tensor({1.0, 2.0, 3.0, 10.0, 20.0, 30.0}).view({1, 2, 3});
  Tensor w = tensor({1.0, 1.0, 2.0, 2.0}).view({2, 1, 2});
  Tensor r = conv1d(x, w, tensor({0.5, -0.5}), 1, 0, 1, 2);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{3.5, 5.5, 59.5, 99.5}));
}

TEST(Conv, IntegerInputIsRejectedWithTheOpName) {
  try {
    conv2d(zeros({1, 1, 3, 3}, kInt32), zeros({1, 1, 2, 2}, kInt32));
    FAIL() << "expected DTypeError";
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("conv2d"), std::string::npos) << e.what();
  }
}

TEST(Pool, MaxPoolIndicesAreFlatPositionsInThePlane) {
  Tensor x =
      tensor({1.0, 9.0, 2.0, 3.0, 4.0, 5.0, 8.0, 6.0, 7.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0})
          .view({1, 1, 4, 4});
  auto [values, indices] = max_pool2d_with_indices(x, 2);
  EXPECT_EQ(values.to_vector<float>(), (std::vector<float>{9, 8, 7, 6}));
  EXPECT_EQ(indices.to_vector<int64_t>(), (std::vector<int64_t>{1, 6, 8, 15}));
  EXPECT_EQ(indices.dtype(), kInt64);
}

TEST(Pool, MaxPoolPropagatesNaN) {
  Tensor x = tensor({1.0, NAN, 3.0, 4.0}).view({1, 1, 2, 2});
  EXPECT_TRUE(std::isnan(max_pool2d(x, 2).item<float>()));
}

TEST(Pool, CeilModeKeepsThePartialLastWindow) {
  EXPECT_EQ(shape(max_pool2d(ones({1, 1, 5, 5}), 2)), (std::vector<int64_t>{1, 1, 2, 2}));
  EXPECT_EQ(shape(max_pool2d(ones({1, 1, 5, 5}), 2, {}, 0, 1, true)),
            (std::vector<int64_t>{1, 1, 3, 3}));
}

TEST(Pool, AvgPoolPaddingCountsUnlessExcluded) {
  Tensor x = ones({1, 1, 2, 2});
  EXPECT_EQ(avg_pool2d(x, 2, 1, 1).to_vector<float>()[0], 0.25f);
  EXPECT_EQ(avg_pool2d(x, 2, 1, 1, false, false).to_vector<float>()[0], 1.0f);
  EXPECT_EQ(avg_pool2d(x, 2, 1, 1, false, true, 2).to_vector<float>()[0], 0.5f);
}

TEST(Pool, AdaptiveAvgPoolToOneIsTheMean) {
  Tensor x = arange(0, 12, 1, TensorOptions(kFloat32)).view({1, 1, 3, 4});
  EXPECT_EQ(adaptive_avg_pool2d(x, 1).item<float>(), 5.5f);
}

}  // namespace
}  // namespace kiln
