// The generated vector math (Note [Generated vector math] in src/codegen/cpp/prelude.cpp): the
// inline exp and erf are within their documented error bounds over dense samples of float32,
// special values come out as IEEE says, and the vector reductions (Note [Blocked vector
// Welford], NaN-tracking max/min) agree with float64 references.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "tests/capture/compare.h"

namespace kiln {
namespace {

using testing::inductor;

// n floats spread evenly over [low, high] (a multiple of 8, so all lanes are vector lanes).
Tensor dense(double low, double high, int64_t n) {
  return (arange(n).to(kFloat64) * ((high - low) / static_cast<double>(n - 1)) + low).to(kFloat32);
}

// |got - exact| in units of the last place of the float32 nearest to exact.
double ulps(float got, double exact) {
  const float rounded = static_cast<float>(exact);
  if (rounded == 0.0f || std::isinf(rounded)) return got == rounded ? 0.0 : 1e9;
  int e = 0;
  std::frexp(rounded, &e);
  const double ulp = std::ldexp(1.0, std::max(e - 24, -149));
  return std::abs(static_cast<double>(got) - exact) / ulp;
}

template <typename Exact>
double worst_ulps(const Tensor& x, const Tensor& y, Exact exact) {
  const std::vector<float> xs = x.to_vector<float>(), ys = y.to_vector<float>();
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) worst = std::max(worst, ulps(ys[i], exact(double{xs[i]})));
  return worst;
}

TEST(CodegenMath, ExpWithinOneUlp) {
  auto f = compile([](const Tensor& x) { return x.exp(); }, inductor());
  // Overflow above 88.72, subnormal results below -87.34, zero below -103.97.
  for (auto [low, high] : {std::pair{-110.0, 95.0}, {-1.0, 1.0}, {-88.0, -86.0}, {88.0, 89.0}}) {
    Tensor x = dense(low, high, 1 << 18);
    EXPECT_LE(worst_ulps(x, f(x), [](double v) { return std::exp(v); }), 1.0) << low;
  }
  const float inf = std::numeric_limits<float>::infinity();
  Tensor s = tensor({inf, -inf, NAN, -0.0, 0.0, 89.0, -104.0, 1e-30});
  std::vector<float> got = f(s).to_vector<float>();
  EXPECT_EQ(got[0], inf);
  EXPECT_EQ(got[1], 0.0f);
  EXPECT_TRUE(std::isnan(got[2]));
  EXPECT_EQ(got[3], 1.0f);
  EXPECT_EQ(got[4], 1.0f);
  EXPECT_EQ(got[5], inf);
  EXPECT_EQ(got[6], 0.0f);
  EXPECT_EQ(got[7], 1.0f);
}

TEST(CodegenMath, ErfWithinOneUlp) {
  auto f = compile([](const Tensor& x) { return x.erf(); }, inductor());
  // The two branches meet at |x| = 1; erf rounds to +-1 beyond 3.92.
  for (auto [low, high] : {std::pair{-6.0, 6.0}, {-1e-3, 1e-3}, {0.99, 1.01}, {3.5, 4.5}}) {
    Tensor x = dense(low, high, 1 << 18);
    EXPECT_LE(worst_ulps(x, f(x), [](double v) { return std::erf(v); }), 1.5) << low;
  }
  const float inf = std::numeric_limits<float>::infinity();
  Tensor s = tensor({inf, -inf, NAN, -0.0, 0.0, 1e-30, -1e-30, 100.0});
  std::vector<float> got = f(s).to_vector<float>();
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], -1.0f);
  EXPECT_TRUE(std::isnan(got[2]));
  EXPECT_EQ(got[3], 0.0f);
  EXPECT_TRUE(std::signbit(got[3]));
  EXPECT_EQ(got[4], 0.0f);
  EXPECT_NEAR(got[5], 1.1283791e-30f, 1e-36f);
  EXPECT_NEAR(got[6], -1.1283791e-30f, 1e-36f);
  EXPECT_EQ(got[7], 1.0f);
}

TEST(CodegenMath, GeluIsCloseToItsFloat64Value) {
  auto f = compile([](const Tensor& x) { return gelu(x); }, inductor());
  Tensor x = dense(-10.0, 10.0, 1 << 16);
  Tensor exact = gelu(x.to(kFloat64));
  const std::vector<float> got = f(x).to_vector<float>();
  const std::vector<double> want = exact.to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-6 + 4e-7 * std::abs(want[i]))
        << "x = " << x.to_vector<float>()[i];
}

// Outputs of 16 MiB or more take non-temporal stores where aligned (Note [Streaming stores in
// generated code]); rows of 1023 floats start at every alignment, so both kinds of store mix.
TEST(CodegenMath, LargeOutputsWithStreamingStoresMatchEager) {
  auto f = compile([](const Tensor& x) { return (x * 0.5).exp() + x.softmax(-1); }, inductor());
  for (auto shape : {std::vector<int64_t>{4096, 1024}, {4099, 1023}}) {
    Tensor x = randn(shape);
    testing::expect_equal(f(x), (x * 0.5).exp() + x.softmax(-1));
  }
}

// Rows far from zero (mean 1e4, spread 1): a naive sum of squares in float32 would lose every
// digit of the variance; the blocked Welford loop must not.
TEST(CodegenMath, VarianceOfOffsetRowsMatchesFloat64) {
  auto f = compile(
      [](const Tensor& x) {
        return std::vector<Tensor>{x.var({1}, 0.0), x.mean({1})};
      },
      inductor());
  for (int64_t n : {8, 16, 17, 100, 1024, 4099}) {
    SCOPED_TRACE(n);
    Tensor x = randn({6, n}) + 1e4;
    std::vector<Tensor> got = f(x);
    const std::vector<double> var = x.to(kFloat64).var({1}, 0.0).to_vector<double>();
    const std::vector<double> mean = x.to(kFloat64).mean({1}).to_vector<double>();
    const std::vector<float> gv = got[0].to_vector<float>(), gm = got[1].to_vector<float>();
    for (size_t r = 0; r < var.size(); ++r) {
      EXPECT_NEAR(gv[r], var[r], 2e-3 * var[r]) << "row " << r;
      EXPECT_NEAR(gm[r], mean[r], 1e-6 * mean[r]) << "row " << r;
    }
  }
}

// The vector max/min lanes skip NaN for speed and a mask remembers it: a NaN anywhere in a row
// (vector lanes or the scalar tail) makes the row's max and min NaN, as in eager.
TEST(CodegenMath, MaxAndMinOfARowWithNaNAreNaN) {
  auto f = compile(
      [](const Tensor& x) {
        return std::vector<Tensor>{x.amax({1}), x.amin({1})};
      },
      inductor());
  for (int64_t at : {0, 5, 31, 32, 35}) {
    SCOPED_TRACE(at);
    Tensor x = randn({3, 36});
    x.select(0, 1).narrow(0, at, 1).fill_(std::nanf(""));
    std::vector<Tensor> got = f(x);
    for (const Tensor& g : got) {
      std::vector<float> v = g.to_vector<float>();
      EXPECT_FALSE(std::isnan(v[0]));
      EXPECT_TRUE(std::isnan(v[1]));
      EXPECT_FALSE(std::isnan(v[2]));
    }
    EXPECT_EQ(got[0].select(0, 0).item<float>(), x.select(0, 0).amax().item<float>());
    EXPECT_EQ(got[1].select(0, 2).item<float>(), x.select(0, 2).amin().item<float>());
  }
  const float inf = std::numeric_limits<float>::infinity();
  Tensor all_inf = full({2, 16}, -inf);
  EXPECT_EQ(f(all_inf)[0].to_vector<float>(), (std::vector<float>{-inf, -inf}));
}

// A row divided by its own scalar, including zero, subnormal, huge, infinite and NaN divisors.
TEST(CodegenMath, DivisionByARowInvariantMatchesEager) {
  auto f = compile([](const Tensor& x, const Tensor& d) { return x / d; }, inductor());
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> divisors = {3.0f,  -7.5f, 0.0f, -0.0f, 1e-40f, -3e-39f, 1e-38f,
                                       1e38f, 3e38f, inf,  -inf,  NAN,    1e-30f,  2e30f};
  Tensor d = from_vector(divisors, std::vector<int64_t>{static_cast<int64_t>(divisors.size()), 1});
  Tensor x = randn({static_cast<int64_t>(divisors.size()), 37}) * 1e-3;
  x.select(1, 5).fill_(0.0);
  testing::expect_equal(f(x, d), x / d);
}

// Note [A row's producer shares its reductions' loop]: a row reduced where it is produced
// (softmax, and a producer whose sums also read other inputs), and a reduction that reads the
// produced values at other positions (a transpose), which must not share the loop: both as eager.
TEST(CodegenMath, ReductionsOfAProducedRowMatchEager) {
  auto f = compile(
      [](const Tensor& x, const Tensor& w) {
        Tensor e = (x - x.amax({1}, true)).exp();
        return std::vector<Tensor>{e / e.sum({1}, true), (e * w).sum({1}) + e.sum({1}),
                                   e.t().sum({1})};
      },
      inductor());
  for (int64_t n : {5, 8, 37, 64}) {
    SCOPED_TRACE(n);
    Tensor x = randn({n, n}), w = randn({n, n});
    Tensor e = (x - x.amax({1}, true)).exp();
    std::vector<Tensor> got = f(x, w);
    testing::expect_equal(got[0], e / e.sum({1}, true));
    testing::expect_equal(got[1], (e * w).sum({1}) + e.sum({1}));
    testing::expect_equal(got[2], e.t().sum({1}));
  }
}

// Note [Lane offsets]: elements repeated along the vector (each twice: pair loads; every other
// one twice: even-pair loads; three times: scalar) match eager for rows of every tail length.
TEST(CodegenMath, RepeatedElementsMatchEager) {
  for (int64_t n : {1, 3, 4, 7, 8, 13, 16}) {
    SCOPED_TRACE(n);
    auto f = compile(
        [n](const Tensor& a) {
          Tensor twice = a.unsqueeze(2).expand({3, n, 2}).reshape({3, 2 * n});
          Tensor thrice = a.unsqueeze(2).expand({3, n, 3}).reshape({3, 3 * n});
          Tensor even = a.slice(1, 0, n, 2);
          Tensor even_twice =
              even.unsqueeze(2).expand({3, even.size(1), 2}).reshape({3, 2 * even.size(1)});
          return std::vector<Tensor>{twice * 2.0, thrice + 1.0, even_twice - 1.0};
        },
        inductor());
    Tensor a = randn({3, n});
    std::vector<Tensor> got = f(a);
    Tensor even = a.slice(1, 0, n, 2);
    testing::expect_equal(got[0], a.unsqueeze(2).expand({3, n, 2}).reshape({3, 2 * n}) * 2.0);
    testing::expect_equal(got[1], a.unsqueeze(2).expand({3, n, 3}).reshape({3, 3 * n}) + 1.0);
    testing::expect_equal(
        got[2],
        even.unsqueeze(2).expand({3, even.size(1), 2}).reshape({3, 2 * even.size(1)}) - 1.0);
  }
}

// Note [Blocked vector sums]: a row of 2^20 positive values (no cancellation to hide behind)
// sums within 1e-6 of float64, relative; one accumulator chain per lane was 2.6e-6 off (the eager
// kernel's cascade: 1.2e-7).
TEST(CodegenMath, LongRowSumsStayAccurate) {
  auto f = compile([](const Tensor& x) { return x.sum({1}); }, inductor());
  for (int trial = 0; trial < 3; ++trial) {
    Tensor x = rand({2, 1 << 20});
    const std::vector<double> want = x.to(kFloat64).sum({1}).to_vector<double>();
    const std::vector<float> got = f(x).to_vector<float>();
    for (size_t r = 0; r < want.size(); ++r) EXPECT_NEAR(got[r], want[r], 1e-6 * want[r]) << r;
  }
}

// Step-2 reads (kiln_load_even) over rows whose lengths leave every tail length, and whose last
// element is the buffer's last: the loads stay in bounds (ASan checks) and match eager exactly.
TEST(CodegenMath, StrideTwoReadsMatchEager) {
  for (int64_t n : {16, 17, 30, 31, 33, 64}) {
    SCOPED_TRACE(n);
    auto f = compile(
        [n](const Tensor& x) {
          return std::vector<Tensor>{x.slice(1, 0, n, 2) * 2.0 + 1.0, x.slice(1, 1, n, 2) * 3.0};
        },
        inductor());
    Tensor x = randn({3, n});
    std::vector<Tensor> got = f(x);
    testing::expect_equal(got[0], x.slice(1, 0, n, 2) * 2.0 + 1.0);
    testing::expect_equal(got[1], x.slice(1, 1, n, 2) * 3.0);
  }
}

// maximum/minimum in the scalar tail (rows of 7: no vector lanes at all) propagate NaN from
// either side, as eager does, and pick the larger/smaller value otherwise.
TEST(CodegenMath, ScalarTailMaximumAndMinimumPropagateNaN) {
  auto f = compile(
      [](const Tensor& a, const Tensor& b) {
        return std::vector<Tensor>{maximum(a, b), minimum(a, b), a.relu()};
      },
      inductor());
  Tensor a = randn({5, 7}), b = randn({5, 7});
  a.select(0, 1).narrow(0, 3, 1).fill_(std::nanf(""));
  b.select(0, 2).narrow(0, 6, 1).fill_(std::nanf(""));
  std::vector<Tensor> got = f(a, b);
  testing::expect_equal(got[0], maximum(a, b));
  testing::expect_equal(got[1], minimum(a, b));
  testing::expect_equal(got[2], a.relu());
  EXPECT_TRUE(std::isnan(got[0].select(0, 1).select(0, 3).item<float>()));
  EXPECT_TRUE(std::isnan(got[1].select(0, 2).select(0, 6).item<float>()));
}

// Note [One value per expression]: each float primitive with a vector form gives the same bits
// in a vector lane as in scalar code. Every slice of y holds its own max: the comparison and the
// max compute y separately, in vector lanes or in a reduction's scalar tail (the reduced dim has
// a dynamic size, of 3 to 37).
TEST(CodegenMath, EveryPrimitiveGivesTheSameBitsInVectorLanesAndScalarCode) {
  using Fn = Tensor (*)(const Tensor&);
  const std::vector<std::pair<const char*, Fn>> unary = {
      {"exp", [](const Tensor& x) { return exp(x); }},
      {"exp2", [](const Tensor& x) { return exp2(x); }},
      {"expm1", [](const Tensor& x) { return expm1(x); }},
      {"log", [](const Tensor& x) { return log(x.abs() + 0.5); }},
      {"log2", [](const Tensor& x) { return log2(x.abs() + 0.5); }},
      {"log10", [](const Tensor& x) { return log10(x.abs() + 0.5); }},
      {"log1p", [](const Tensor& x) { return log1p(x.abs()); }},
      {"sqrt", [](const Tensor& x) { return sqrt(x.abs()); }},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x.abs() + 0.5); }},
      {"reciprocal", [](const Tensor& x) { return reciprocal(x + 10); }},
      {"sin", [](const Tensor& x) { return sin(x * 20); }},
      {"cos", [](const Tensor& x) { return cos(x * 20); }},
      {"tan", [](const Tensor& x) { return tan(x); }},
      {"asin", [](const Tensor& x) { return asin(tanh(x)); }},
      {"acos", [](const Tensor& x) { return acos(tanh(x)); }},
      {"atan", [](const Tensor& x) { return atan(x); }},
      {"sinh", [](const Tensor& x) { return sinh(x); }},
      {"cosh", [](const Tensor& x) { return cosh(x); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }},
      {"erf", [](const Tensor& x) { return erf(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"pow", [](const Tensor& x) { return pow(x.abs() + 0.5, x); }},
      {"atan2", [](const Tensor& x) { return atan2(x, x.flip({0})); }},
      {"hypot", [](const Tensor& x) { return hypot(x, x.flip({0})); }},
      {"div by a constant", [](const Tensor& x) { return x / 7.0; }},
      {"div by a column sum", [](const Tensor& x) { return x / (x.abs().sum({0}, true) + 1); }},
  };
  manual_seed(3);
  for (const auto& [name, fn] : unary)
    for (int64_t dim : {0, 1}) {
      SCOPED_TRACE(fmt::format("{} over dim {}", name, dim));
      CompileOptions options = inductor();
      options.dynamic = true;
      auto f = compile(
          [fn, dim](const Tensor& t) {
            Tensor y = fn(t);
            return (y == y.amax({dim}, true)).any(dim);
          },
          options);
      for (int64_t rows : {3, 9})
        for (int64_t cols : {13, 37}) {
          const Tensor x = randn({rows, cols}) * 2;
          EXPECT_TRUE(f(x).all().item<bool>()) << rows << "x" << cols << ": a slice has no max";
        }
    }
}

}  // namespace
}  // namespace kiln
