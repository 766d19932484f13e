// kiln::compile with the code-generating backend: compiled results equal eager ones (Note
// [Compiled tolerances] in tests/capture/compare.h) across op families, dtypes, views, symbolic
// sizes and mutation; the cache, the logs and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "kiln/compile.h"
#include "kiln/control_flow.h"
#include "kiln/kiln.h"
#include "src/trace/logs.h"
#include "src/trace/reader.h"
#include "src/trace/trace.h"
#include "tests/capture/compare.h"

namespace kiln {
namespace {

using testing::error_message;
using testing::expect_equal;

CompileOptions inductor(bool dynamic = false) {
  CompileOptions o;
  o.backend = "inductor";
  o.dynamic = dynamic;
  return o;
}

Tensor gelu_chain(const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& d) {
  return gelu(a * b + c) * d;
}

// Note [Reductions across lanes]: column reductions (a bias gradient, batch-norm statistics)
// with a tail of fewer than 8 columns, NaN in a column, and a fused prologue.
TEST(Inductor, ColumnReductionsAcrossLanesMatchEager) {
  auto fn = [](const Tensor& x, const Tensor& y) {
    // The last three share one pass (Note [Sibling reductions share their loops]).
    return std::vector<Tensor>{x.sum({0}),     (x * y).sum({0}),    x.amax({0}),
                               x.amin({0, 1}), (x + 1).sum({1, 2}), (x * y).sum({1, 2}),
                               x.amax({1, 2})};
  };
  auto f = compile(fn, inductor());
  // 139 and 200 columns: blocks of several vectors (Note [Lane blocks]), then a partial block
  // of vectors and scalars.
  for (int64_t cols : {8, 13, 3, 139, 200}) {
    Tensor x = randn({37, 5, cols}), y = randn({37, 5, cols});
    x.narrow(2, cols - 1, 1).narrow(0, 4, 1).fill_(NAN);  // NaN in the last column
    const std::vector<Tensor> got = f(x, y), want = fn(x, y);
    for (size_t i = 0; i < want.size(); ++i) expect_equal(got[i], want[i]);
  }
}

TEST(Inductor, GeluChainMatchesEager) {
  auto f = compile(gelu_chain, inductor());
  for (int64_t n : {1, 7, 8, 1000, 4099}) {
    Tensor a = randn({n}), b = randn({n}), c = randn({n}), d = randn({n});
    expect_equal(f(a, b, c, d), gelu_chain(a, b, c, d));
  }
}

TEST(Inductor, PointwiseOverEveryDtype) {
  for (ScalarType t : kAllScalarTypes) {
    SCOPED_TRACE(dtype_name(t));
    auto fn = [t](const Tensor& x, const Tensor& y) {
      Tensor r = (x == y).to(t) + x;
      if (t != kBool) r = r * y + maximum(x, y);
      return where(x < y, r, y);
    };
    auto f = compile(fn, inductor());
    Tensor x = (randn({5, 9}) * 20).to(t), y = (randn({5, 9}) * 20).to(t);
    expect_equal(f(x, y), fn(x, y));
  }
}

TEST(Inductor, UnsignedArithmeticWrapsLikeEager) {
  auto fn = [](const Tensor& x, const Tensor& y) { return (x - y) * y + (x >> 3) + x / 7; };
  auto f = compile(fn, inductor());
  for (ScalarType t : {kUInt8, kUInt16, kUInt32, kUInt64}) {
    SCOPED_TRACE(dtype_name(t));
    Tensor x = randint(0, 250, {6, 6}).to(t), y = randint(0, 250, {6, 6}).to(t);
    expect_equal(f(x, y), fn(x, y));
  }
}

// Found by kiln-fuzz (seed 41001, index 10): addcdiv's operands of another dtype are converted to
// the float16 result as the eager kernel converts them, so a uint64 2^64 - 1 is inf there and
// inf / inf gives NaN, not a finite value from float32's wider range.
TEST(Inductor, AddcdivConvertsOperandsThroughTheReducedResultDtype) {
  auto fn = [](const Tensor& self, const Tensor& t1, const Tensor& t2) {
    return addcdiv(self, t1, t2, 0.5);
  };
  auto f = compile(fn, inductor());
  const Tensor self = tensor({1.0, -2.0, 3.0, 0.5}).to(kFloat16);
  const Tensor t1 = full({}, Scalar(std::numeric_limits<uint64_t>::max()), kUInt64);
  const Tensor t2 = tensor({std::numeric_limits<double>::infinity(), 2.0, 0.0, -1.0}).to(kFloat16);
  const Tensor eager = fn(self, t1, t2);
  ASSERT_TRUE(std::isnan(eager.to_vector<double>()[0]));
  expect_equal(f(self, t1, t2), eager);
}

TEST(Inductor, ReductionsMatchEager) {
  auto fn = [](const Tensor& x) {
    return std::vector<Tensor>{x.sum({1}),      x.mean({0}, true),     x.amax({1}), x.argmax(1),
                               x.var({1}, 1.0), x.std({0}, 0.0, true), x.sum(),     x.amin({0, 1})};
  };
  auto f = compile([&](const Tensor& x) { return fn(x); }, inductor());
  for (auto shape : {std::vector<int64_t>{3, 5}, {17, 33}, {64, 1000}, {1, 9}}) {
    Tensor x = randn(shape);
    std::vector<Tensor> got = f(x), want = fn(x);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(i);
      if (i == 6) {
        // The sum of all 64000 elements is near 0 (random signs): its float32 rounding error,
        // in any order of additions, is bounded by the size of the terms, not of the result.
        const double bound = 1e-6 * x.abs().sum().item<double>();
        EXPECT_NEAR(got[i].item<double>(), want[i].item<double>(), bound);
        continue;
      }
      expect_equal(got[i], want[i]);
    }
  }
}

TEST(Inductor, SoftmaxAndLayerNormMatchEager) {
  auto fn = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    return std::vector<Tensor>{softmax(x, -1), log_softmax(x, 1), layer_norm(x, {77}, w, b, 1e-5)};
  };
  auto f = compile([&](const Tensor& x, const Tensor& w, const Tensor& b) { return fn(x, w, b); },
                   inductor());
  Tensor x = randn({33, 77}) * 3, w = randn({77}), b = randn({77});
  std::vector<Tensor> got = f(x, w, b), want = fn(x, w, b);
  for (size_t i = 0; i < got.size(); ++i) expect_equal(got[i], want[i]);
}

TEST(Inductor, ViewsAndBroadcasting) {
  auto fn = [](const Tensor& x, const Tensor& y) {
    Tensor t = x.transpose(0, 1);                   // (6, 4)
    Tensor s = t.slice(0, 1, 6, 2);                 // (3, 4)
    Tensor r = s.reshape({4, 3}) + y.unsqueeze(0);  // y: (3,)
    return r.exp().sum({0}) + x.select(1, -1).sum();
  };
  auto f = compile(fn, inductor());
  Tensor x = randn({4, 6}), y = randn({3});
  expect_equal(f(x, y), fn(x, y));
}

TEST(Inductor, MatmulWithEpilogue) {
  auto fn = [](const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2) {
    return (matmul(relu(linear(x, w1, b1)), w2) + x).sum({1});
  };
  auto f = compile(fn, inductor());
  Tensor x = randn({16, 32}), w1 = randn({64, 32}), b1 = randn({64}), w2 = randn({64, 32});
  expect_equal(f(x, w1, b1, w2), fn(x, w1, b1, w2));
}

TEST(Inductor, OneArtifactServesEverySizeItsGuardsAccept) {
  auto fn = [](const Tensor& x) { return (x.sigmoid() * x).sum({1}) + 1; };
  auto f = compile(fn, inductor(true));
  for (int64_t n : {5, 9, 40, 3}) {
    Tensor x = randn({n, n + 3});
    expect_equal(f(x), fn(x));
  }
  EXPECT_EQ(f.stats().compiles, 1);
}

TEST(Inductor, InPlaceUpdateOfAnInputIsVisibleToTheCaller) {
  auto fn = [](Tensor x, const Tensor& y) {
    x.add_(y);
    x.mul_(2);
    return x.sum();
  };
  auto f = compile(fn, inductor());
  Tensor x = randn({8, 8}), y = randn({8, 8});
  Tensor x_eager = x.clone();
  Tensor got = f(x, y), want = fn(x_eager, y);
  expect_equal(got, want);
  expect_equal(x, x_eager);
}

// Chains of in-place updates on inputs (functionalized, one copy-back per input) and a value
// stored into the input it reads at other elements (computed whole first, then stored).
TEST(Inductor, InPlaceChainsAndSelfReadingStoresMatchEager) {
  auto chain = [](const Tensor& p, const Tensor& g, const Tensor& buf, const Tensor& lr) {
    buf.mul_(0.9).add_(g);
    p.sub_(buf * lr);
    Tensor seen = p * 2;  // reads the updated p
    p.add_(seen.sum());
    return seen;
  };
  auto f = compile(chain, inductor());
  Tensor p = randn({16, 24}), g = randn({16, 24}), buf = randn({16, 24}), lr = full({}, 0.1);
  Tensor p_eager = p.clone(), buf_eager = buf.clone();
  expect_equal(f(p, g, buf, lr), chain(p_eager, g, buf_eager, lr));
  expect_equal(p, p_eager);
  expect_equal(buf, buf_eager);

  auto transpose_into = [](const Tensor& x) {
    x.copy_(x.t() + 1);
    return x.sum();
  };
  auto h = compile(transpose_into, inductor());
  Tensor x = randn({33, 33}), x_eager = x.clone();
  expect_equal(h(x), transpose_into(x_eager));
  expect_equal(x, x_eager);
}

TEST(Inductor, CatAndFactories) {
  auto fn = [](const Tensor& x, const Tensor& y) {
    Tensor r = arange(0, x.size(0), TensorOptions(kFloat32));
    return cat({x + r.unsqueeze(1), y * 2, full({1, 3}, 7.0)}, 0);
  };
  auto f = compile(fn, inductor());
  Tensor x = randn({4, 3}), y = randn({2, 3});
  expect_equal(f(x, y), fn(x, y));
}

// arange over a symbolic size: its Scalar end holds the symbol, which the graph text prints and
// parses back (extern calls are stored as text), and the program reads when it runs.
TEST(Inductor, ArangeOverASymbolicSize) {
  auto fn = [](const Tensor& x) {
    const Tensor r = arange(x.size(0), TensorOptions(kFloat32));
    const Tensor s = arange(2, x.size(1), TensorOptions(kInt64));
    return std::make_tuple(x + r.unsqueeze(1), s * 3);
  };
  CompileOptions o = inductor();
  o.dynamic = true;
  auto f = compile(fn, o);
  for (int64_t n : {4, 7, 3}) {
    SCOPED_TRACE(n);
    const Tensor x = randn({n, n + 2});
    auto got = f(x);
    auto want = fn(x);
    expect_equal(std::get<0>(got), std::get<0>(want));
    expect_equal(std::get<1>(got), std::get<1>(want));
  }
  EXPECT_EQ(f.stats().compiles, 1);
  // The same inside a cond's branch: the call's graph, bodies included, is stored as text.
  auto g = compile(
      [](const Tensor& x) {
        return cond(
            x.sum() > 0,
            [](const std::vector<Tensor>& v) {
              return std::vector<Tensor>{v[0] + arange(v[0].size(0), TensorOptions(kFloat32))};
            },
            [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * 2}; }, {x})[0];
      },
      o);
  for (int64_t n : {4, 6}) {
    const Tensor x = arange(static_cast<double>(n), kFloat32) - 1;
    expect_equal(g(x), x + arange(n, kFloat32));
  }
}

// Note [Casts the value ranges prove]: casts the ranges prove print as plain conversions, the
// others keep Kiln's semantics (NaN -> 0, wrapping); both must give eager's values.
TEST(Inductor, FloatToIntCastsMatchEagerWhetherOrNotTheRangesProveThem) {
  auto fn = [](const Tensor& x, const Tensor& f) {
    const Tensor proven = arange(-3.5, 4.5, 0.75, TensorOptions(kFloat32)).to(kInt32);
    const Tensor wrapping = arange(100.5, 1300.5, 100.0, TensorOptions(kFloat32)).to(kInt8);
    return std::make_tuple(proven + x.narrow(0, 0, 11), wrapping.to(kInt32) + x,
                           f.to(kInt16) + x.narrow(0, 0, 5).to(kInt16));
  };
  auto compiled = compile(fn, inductor());
  const Tensor x = arange(11, TensorOptions(kInt32)).to(kInt32) * 3 - 5;
  Tensor x2 = cat({x, x.narrow(0, 0, 1)}, 0);
  const Tensor f = kiln::tensor({NAN, 1e10f, -2.7f, 40000.5f, 0.5f}, kFloat32);
  auto [a, b, c] = compiled(x2, f);
  auto [ea, eb, ec] = fn(x2, f);
  expect_equal(a, ea);
  expect_equal(b, eb);
  expect_equal(c, ec);
}

TEST(Inductor, ACompilerFailureIsACompileErrorNamingTheFile) {
  const char* old = std::getenv("KILN_CXX");
  ::setenv("KILN_CXX", "false", 1);
  auto f = compile([](const Tensor& x) { return x.cos() * 3 - 0.25; }, inductor());
  const std::string msg = error_message([&] { f(randn({3})); });
  if (old)
    ::setenv("KILN_CXX", old, 1);
  else
    ::unsetenv("KILN_CXX");
  EXPECT_NE(msg.find(".cpp"), std::string::npos) << msg;
  EXPECT_NE(msg.find("false"), std::string::npos) << msg;
}

TEST(Inductor, ClangCompilesTheGeneratedCodeToo) {
  // scripts/install-deps installs clang 14; the prelude avoids what it lacks (_Float16 on x86).
  const auto dir = std::filesystem::temp_directory_path() / "kiln_inductor_clang_test";
  std::filesystem::remove_all(dir);
  const char* old_cxx = std::getenv("KILN_CXX");
  const char* old_cache = std::getenv("KILN_CACHE_DIR");
  const std::string saved_cxx = old_cxx ? old_cxx : "", saved_cache = old_cache ? old_cache : "";
  ::setenv("KILN_CXX", "clang++", 1);
  ::setenv("KILN_CACHE_DIR", dir.c_str(), 1);
  auto fn = [](const Tensor& x, const Tensor& h) {
    return std::vector<Tensor>{softmax(x * 2, 1), (h.to(kFloat32) + 1).to(kFloat16),
                               x.var({1}, 1.0)};
  };
  auto f = compile([&](const Tensor& x, const Tensor& h) { return fn(x, h); }, inductor());
  Tensor x = randn({9, 21}), h = randn({9, 21}).to(kFloat16);
  std::vector<Tensor> got = f(x, h), want = fn(x, h);
  if (old_cxx)
    ::setenv("KILN_CXX", saved_cxx.c_str(), 1);
  else
    ::unsetenv("KILN_CXX");
  if (old_cache)
    ::setenv("KILN_CACHE_DIR", saved_cache.c_str(), 1);
  else
    ::unsetenv("KILN_CACHE_DIR");
  for (size_t i = 0; i < got.size(); ++i) expect_equal(got[i], want[i]);
  std::filesystem::remove_all(dir);
}

TEST(Inductor, OutputCodeIsLoggedAndTraced) {
  const auto dir = std::filesystem::temp_directory_path() / "kiln_inductor_trace_test";
  std::filesystem::remove_all(dir);
  trace::set_directory_for_testing(dir.string());
  trace::set_logs_for_testing("output_code");
  // A fresh code cache, so this compile generates code rather than finding it.
  const char* old_cache = std::getenv("KILN_CACHE_DIR");
  const std::string saved_cache = old_cache ? old_cache : "";
  ::setenv("KILN_CACHE_DIR", (dir / "cache").c_str(), 1);
  ::testing::internal::CaptureStderr();
  auto f = compile([](const Tensor& x) { return (x * x).tanh().sum({0}); }, inductor());
  f(randn({16, 8}));
  const std::string err = ::testing::internal::GetCapturedStderr();
  trace::set_logs_for_testing(std::nullopt);
  trace::set_directory_for_testing(std::nullopt);
  if (old_cache)
    ::setenv("KILN_CACHE_DIR", saved_cache.c_str(), 1);
  else
    ::unsetenv("KILN_CACHE_DIR");
  EXPECT_NE(err.find("[kiln output_code]"), std::string::npos);
  EXPECT_NE(err.find("extern \"C\" void kernel0"), std::string::npos) << err;
  std::set<std::string> names;
  for (const std::string& file : trace::trace_files(dir.string())) {
    for (const trace::Record& r : trace::read_trace(file)) {
      if (r.kind == "artifact") names.insert(r.artifact_name());
    }
  }
  EXPECT_TRUE(names.count("inductor_output_code")) << names.size();
  EXPECT_TRUE(names.count("inductor_loop_ir"));
  EXPECT_TRUE(names.count("inductor_compile_times"));
  std::filesystem::remove_all(dir);
}

TEST(Inductor, ASecondCompileOfTheSameGraphHitsTheGraphCache) {
  const auto dir = std::filesystem::temp_directory_path() / "kiln_inductor_graph_cache_test";
  std::filesystem::remove_all(dir);
  const char* old_cache = std::getenv("KILN_CACHE_DIR");
  const std::string saved_cache = old_cache ? old_cache : "";
  ::setenv("KILN_CACHE_DIR", (dir / "cache").c_str(), 1);
  trace::set_directory_for_testing((dir / "trace").string());
  auto fn = [](const Tensor& x) { return (x + 1).log1p().amax({0}); };
  Tensor x = randn({4, 6}).abs();
  auto f1 = compile(fn, inductor());
  expect_equal(f1(x), fn(x));
  auto f2 = compile(fn, inductor());  // a new function object: traced again, same graph
  expect_equal(f2(x), fn(x));
  trace::set_directory_for_testing(std::nullopt);
  if (old_cache)
    ::setenv("KILN_CACHE_DIR", saved_cache.c_str(), 1);
  else
    ::unsetenv("KILN_CACHE_DIR");
  int misses = 0, hits = 0;
  for (const std::string& file : trace::trace_files((dir / "trace").string())) {
    for (const trace::Record& r : trace::read_trace(file)) {
      if (r.kind != "artifact") continue;
      if (r.artifact_name() == "inductor_compile_times") ++misses;
      if (r.artifact_name() == "inductor_cache") ++hits;
    }
  }
  EXPECT_EQ(misses, 1);
  EXPECT_EQ(hits, 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// How many graphs fell back to eager, and how many got generated code, while `body` ran.
struct BackendOutcomes {
  int fallbacks = 0, generated = 0;
};
template <typename F>
BackendOutcomes backend_outcomes(const std::string& name, F&& body) {
  const auto dir = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(dir);
  trace::set_directory_for_testing(dir.string());
  body();
  trace::set_directory_for_testing(std::nullopt);
  BackendOutcomes o;
  for (const std::string& file : trace::trace_files(dir.string())) {
    for (const trace::Record& r : trace::read_trace(file)) {
      if (r.kind != "artifact") continue;
      o.fallbacks += r.artifact_name() == "inductor_fallback";
      o.generated +=
          r.artifact_name() == "inductor_output_code" || r.artifact_name() == "inductor_cache";
    }
  }
  std::filesystem::remove_all(dir);
  return o;
}

TEST(Inductor, AnOpWithoutAGeneratedFormRunsAsAnExternCall) {
  // erfinv has no generated form; the graph around it still compiles (no eager fallback).
  const BackendOutcomes o = backend_outcomes("kiln_inductor_erfinv_test", [] {
    auto fn = [](const Tensor& x) { return (x * 0.5).erfinv() + 1; };
    auto f = compile(fn, inductor());
    Tensor x = rand({5, 7}) * 1.8 - 0.9;
    testing::expect_equal(f(x), fn(x));
  });
  EXPECT_EQ(o.fallbacks, 0);
  EXPECT_EQ(o.generated, 1);
}

// x[:, -3:] and x[-1:] on symbolic sizes: the start counts from the end and is clamped at 0
// (PyTorch's rule), so a dim shorter than the slice gives all of it. The graph compiles; it used
// to run eagerly (found by kiln-fuzz --dynamic, seed 3, index 71).
TEST(Inductor, NegativeSliceStartsOnSymbolicSizesCompile) {
  const BackendOutcomes o = backend_outcomes("kiln_inductor_negative_slice_test", [] {
    auto fn = [](const Tensor& x) {
      return std::vector<Tensor>{x.slice(1, -3, std::nullopt) * 2,
                                 x.slice(1, -7, std::nullopt, 2).sum({1}), x.slice(0, -5, 4) + 1,
                                 x.slice(0, -1, std::nullopt)};
    };
    auto f = compile(fn, inductor(true));
    for (int64_t n : {10, 12, 23, 4, 9}) {
      SCOPED_TRACE(n);
      Tensor x = randn({n, n - 2});
      std::vector<Tensor> got = f(x), want = fn(x);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) testing::expect_equal(got[i], want[i]);
    }
  });
  EXPECT_EQ(o.fallbacks, 0);
  EXPECT_GE(o.generated, 1);
}

// Note [Exact comparisons]: an integer Scalar outside the tensor's dtype is not wrapped into it
// (uint8 >= -2 is true everywhere, as in eager); found by the fuzzer (seed 11, index 209).
TEST(Inductor, ComparisonsWithOutOfRangeScalarsMatchEager) {
  auto fn = [](const Tensor& x) {
    return std::vector<Tensor>{x >= -2, x<1000, x == 300, x != -1, x> 5000000000LL, x <= -129};
  };
  auto f = compile([&](const Tensor& x) { return fn(x); }, inductor());
  for (ScalarType t : {kUInt8, kInt8, kUInt16, kInt32, kUInt64}) {
    SCOPED_TRACE(dtype_name(t));
    Tensor x = randint(0, 100, {4, 9}).to(t);
    std::vector<Tensor> got = f(x), want = fn(x);
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(i);
      expect_equal(got[i], want[i]);
    }
  }
}

// Floor division follows the eager kernel (through fmod, as PyTorch): -3 // inf is -1
// and 3 // -inf is -1, not floor(-3 / inf) = -0; found by the fuzzer (seed 7, index 488).
TEST(Inductor, FloorDivisionOfFloatsMatchesEager) {
  const double inf = std::numeric_limits<double>::infinity();
  for (ScalarType t : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(t));
    auto fn = [](const Tensor& a, const Tensor& b) { return a.div(b, "floor"); };
    auto f = compile(fn, inductor());
    Tensor a = tensor({-3.0, 3.0, -3.0, 3.0, 0.0, -0.0, 7.5, -7.5, 1e-30, 5.0}).to(t);
    Tensor b = tensor({inf, -inf, -inf, inf, 2.0, 2.0, 2.5, 2.5, -1e30, 0.0}).to(t);
    Tensor got = f(a, b), want = fn(a, b);
    const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
    for (size_t i = 0; i < g.size(); ++i) {
      EXPECT_EQ(g[i], w[i]) << i;
      EXPECT_EQ(std::signbit(g[i]), std::signbit(w[i])) << i;
    }
  }
}

}  // namespace
}  // namespace kiln
