// max_pool2d as generated code (Note [Max pooling as a pointwise value] in
// src/lower/lowerings/pooling.cpp) and the masked vector tails that make short rows vector work
// (Note [Masked vector tails] in src/codegen/cpp/codegen.cpp): compiled results equal eager's over
// window shapes, padding, dilation, ceil_mode, NaN and dtypes, and rows of every tail length.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "tests/capture/compare.h"

namespace kiln {
namespace {

using testing::inductor;

struct PoolCase {
  std::vector<int64_t> shape, kernel, stride, padding, dilation;
  bool ceil_mode = false;
};

Tensor pool(const Tensor& x, const PoolCase& c) {
  return max_pool2d(x, c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode);
}

TEST(CompiledPooling, MaxPoolMatchesEagerOverWindowShapes) {
  const std::vector<PoolCase> cases = {
      {{2, 3, 28, 28}, {2}, {2}, {0}, {1}},          // the CNN's windows: always inside
      {{2, 3, 7, 7}, {2}, {2}, {0}, {1}},            // the last row and column dropped
      {{2, 3, 14, 14}, {3}, {2}, {1}, {1}},          // padding
      {{1, 2, 9, 11}, {3, 2}, {1, 2}, {1, 0}, {1}},  // per-dim windows
      {{1, 2, 7, 7}, {2}, {2}, {0}, {1}, true},      // ceil_mode: windows overhang
      {{1, 2, 15, 15}, {3}, {2}, {1}, {2}},          // dilation
      {{3, 10, 10}, {2}, {}, {0}, {1}},              // [C, H, W], default stride
  };
  for (const PoolCase& c : cases) {
    SCOPED_TRACE(fmt::format("shape {} kernel {} stride {} padding {} dilation {} ceil {}",
                             fmt::join(c.shape, "x"), fmt::join(c.kernel, ","),
                             fmt::join(c.stride, ","), fmt::join(c.padding, ","),
                             fmt::join(c.dilation, ","), c.ceil_mode));
    auto f = compile([c](const Tensor& x) { return pool(x.relu() * 2.0, c); }, inductor());
    Tensor x = randn(c.shape);
    testing::expect_equal(f(x), pool(x.relu() * 2.0, c));
  }
}

TEST(CompiledPooling, MaxPoolPropagatesNaNAndKeepsIntegerDtypes) {
  const PoolCase c{{1, 2, 6, 6}, {2}, {2}, {0}, {1}};
  auto f = compile([c](const Tensor& x) { return pool(x, c); }, inductor());
  Tensor x = randn(c.shape);
  x.select(1, 1).select(1, 3).select(1, 4).fill_(std::nanf(""));  // window (1, 2) of channel 1
  Tensor got = f(x);
  testing::expect_equal(got, pool(x, c));
  EXPECT_TRUE(std::isnan(got.select(0, 0).select(0, 1).select(0, 1).select(0, 2).item<float>()));
  for (ScalarType dtype : {kInt32, kUInt8, kInt64, kFloat16, kFloat64}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor xi = (randn(c.shape) * 50.0).abs().to(dtype);
    testing::expect_equal(f(xi), pool(xi, c));
  }
  // Padded windows of an integer dtype start from the dtype's smallest value, not from 0.
  const PoolCase padded{{1, 1, 5, 5}, {3}, {2}, {1}, {1}};
  auto g = compile([padded](const Tensor& x) { return pool(x, padded); }, inductor());
  Tensor negative = (randn(padded.shape) * 50.0 - 200.0).to(kInt32);
  testing::expect_equal(g(negative), pool(negative, padded));
}

// The input gradient through a compiled max_pool2d (AOT autograd: the forward is generated code,
// the backward's max_pool2d_backward generated code over tiling windows (Note [Max pooling
// gradient as a pointwise value]) and an extern kernel otherwise) equals eager's, with ties
// (relu's zeros: the first position takes the gradient) and NaN (the last NaN takes it), over
// window shapes.
TEST(CompiledPooling, MaxPoolBackwardMatchesEager) {
  const std::vector<PoolCase> cases = {
      {{2, 3, 28, 28}, {2}, {2}, {0}, {1}},      // the CNN's, exact
      {{2, 3, 7, 9}, {2}, {2}, {0}, {1}},        // uncovered last row and column
      {{1, 2, 6, 6}, {3, 2}, {3, 2}, {0}, {1}},  // 3x2 tiles
      {{1, 2, 9, 12}, {3}, {3}, {0}, {1}},       // 3x3 tiles
      {{1, 2, 8, 6}, {2, 1}, {2, 1}, {0}, {1}},  // 2x1 tiles
      {{1, 2, 9, 9}, {3}, {1}, {1}, {1}},        // overlapping, padded: extern
      {{1, 2, 7, 7}, {2}, {2}, {0}, {1}, true},  // ceil_mode: extern
  };
  for (ScalarType dtype : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    for (const PoolCase& c : cases) {
      SCOPED_TRACE(fmt::format("{} shape {} kernel {} stride {} padding {} ceil {}",
                               dtype_name(dtype), fmt::join(c.shape, "x"), fmt::join(c.kernel, ","),
                               fmt::join(c.stride, ","), fmt::join(c.padding, ","), c.ceil_mode));
      auto loss = [c](const Tensor& x, const Tensor& w) { return (pool(x.relu(), c) * w).sum(); };
      auto f = compile(loss, inductor());
      Tensor x = randn(c.shape).to(dtype);
      x.select(-1, 1).select(-1, 2).fill_(std::nan(""));  // one NaN per plane
      x.requires_grad_();
      Tensor w = randn(pool(x.detach(), c).sizes().vec()).to(dtype);
      f(x, w).backward();
      const Tensor compiled = x.grad().clone();
      x.mutable_grad() = Tensor();
      loss(x, w).backward();
      testing::expect_equal(compiled, x.grad());
    }
  }
}

// Pointwise rows of every tail length (1-7 lanes after the vector loop, and rows shorter than a
// vector) match eager.
TEST(CompiledPooling, MaskedTailsCoverEveryRowLength) {
  auto f =
      compile([](const Tensor& x, const Tensor& y) { return (x * y + 1.0).relu(); }, inductor());
  for (int64_t n = 1; n <= 17; ++n) {
    SCOPED_TRACE(n);
    // A transposed input keeps the rows from merging into one long loop.
    Tensor x = randn({n, 3}).t(), y = randn({3, n});
    testing::expect_equal(f(x, y), (x * y + 1.0).relu());
  }
}

// A masked tail stores only its row's elements: an input that is the first n columns of a wider
// tensor, updated in place (stored straight into the input), leaves the other columns as they
// were, for every tail length.
TEST(CompiledPooling, MaskedTailStoresStayInsideTheRow) {
  auto f = compile([](const Tensor& x) { x.mul_(2.0).add_(1.0); }, inductor());
  for (int64_t n = 1; n <= 17; ++n) {
    SCOPED_TRACE(n);
    Tensor base = randn({5, n + 9});
    Tensor before = base.clone();
    f(base.narrow(1, 0, n));
    testing::expect_equal(base.narrow(1, 0, n), before.narrow(1, 0, n) * 2.0 + 1.0);
    EXPECT_EQ(base.narrow(1, n, 9).to_vector<float>(), before.narrow(1, n, 9).to_vector<float>());
  }
}

}  // namespace
}  // namespace kiln
