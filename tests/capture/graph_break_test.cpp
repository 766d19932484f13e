// Graph breaks: item(), to_vector(), branching on data-dependent sizes; the trace tree and
// fullgraph errors (Note [Trace tree]).
#include <gtest/gtest.h>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "src/capture/backend.h"
#include "src/dispatch/dispatcher.h"
#include "tests/capture/compare.h"

namespace kiln {
namespace {

using testing::expect_equal;

Tensor branchy(const Tensor& x) {
  Tensor s = x.sum();
  if (s.item<double>() > 0) return (x * 2).exp();
  return x.abs() - 1;
}

TEST(GraphBreak, ItemSplitsTheGraphAndTheResultMatchesEager) {
  capture::compile_counter() = {};
  auto f = compile(branchy, {.backend = "count"});
  Tensor pos = ones({4}), pos2 = full({4}, 2.0);
  expect_equal(f(pos), branchy(pos));
  EXPECT_EQ(f.stats().graph_breaks, 1);
  EXPECT_EQ(capture::compile_counter().graphs, 2);
  // The value is guarded: the same value reuses both segments, another value traces a branch.
  expect_equal(f(pos), branchy(pos));
  EXPECT_EQ(f.stats().compiles, 1);
  expect_equal(f(pos2), branchy(pos2));
  EXPECT_EQ(f.stats().compiles, 2);
  // Only the new branch's segment was compiled: the prefix graph is shared.
  EXPECT_EQ(capture::compile_counter().graphs, 3);
  Tensor neg = full({4}, -1.0);
  expect_equal(f(neg), branchy(neg));
  EXPECT_EQ(capture::compile_counter().graphs, 4);
  EXPECT_EQ(f.stats().cache_entries, 1);
}

TEST(GraphBreak, FullgraphRaisesNamingTheUsersLine) {
  auto f = compile(
      [](const Tensor& x) {
        const double v = x.sum().item<double>();  // the line the error must name
        return x * v;
      },
      {.fullgraph = true});
  const int line = __LINE__ - 4;
  try {
    f(ones({3}));
    FAIL() << "no GraphBreakError";
  } catch (const GraphBreakError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(std::string("graph_break_test.cpp:") + std::to_string(line)),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("item()"), std::string::npos) << msg;
  }
}

TEST(GraphBreak, ValuesComputedBeforeTheBreakAreUsedAfterIt) {
  auto fn = [](const Tensor& x, const Tensor& y) {
    Tensor a = x.matmul(y);
    Tensor b = a.relu();
    const int64_t n = static_cast<int64_t>(b.sum().item<double>() > 1.0);
    return std::make_tuple(a + n, b * 3, x);
  };
  auto f = compile(fn);
  Tensor x = randn({3, 3}), y = randn({3, 3});
  auto [c1, c2, c3] = f(x, y);
  auto [e1, e2, e3] = fn(x, y);
  expect_equal(c1, e1);
  expect_equal(c2, e2);
  expect_equal(c3, e3);
}

TEST(GraphBreak, ToVectorIsABreakToo) {
  auto fn = [](const Tensor& x) {
    std::vector<int64_t> k = x.argmax(0).to_vector<int64_t>();
    return x * static_cast<double>(k[0]);
  };
  auto f = compile(fn);
  Tensor x = tensor({1.0, 5.0, 2.0});
  expect_equal(f(x), fn(x));
  EXPECT_EQ(f.stats().graph_breaks, 1);
  Tensor y = tensor({9.0, 5.0, 2.0});
  expect_equal(f(y), fn(y));
  EXPECT_EQ(f.stats().compiles, 2);
}

TEST(GraphBreak, BranchingOnADataDependentSizeBreaks) {
  auto fn = [](const Tensor& x) {
    Tensor idx = x.gt(0).nonzero();
    if (idx.size(0) > 2) return x.sum() * 2;
    return x.sum() - 1;
  };
  auto f = compile(fn);
  Tensor many = tensor({1.0, 2.0, 3.0, -1.0}), few = tensor({1.0, -2.0, -3.0, -1.0});
  expect_equal(f(many), fn(many));
  EXPECT_EQ(f.stats().graph_breaks, 1);
  expect_equal(f(few), fn(few));
  EXPECT_EQ(f.stats().compiles, 2);
  expect_equal(f(many), fn(many));
  expect_equal(f(few), fn(few));
  EXPECT_EQ(f.stats().compiles, 2);

  auto strict = compile(fn, {.fullgraph = true});
  EXPECT_THROW(strict(many), GraphBreakError);
}

// Note [Where a symbolic condition was written]: the error names the user's line, not Kiln's
// header where SymBool converts to bool.
TEST(GraphBreak, AFullgraphErrorOnASymbolicConditionNamesTheUsersLine) {
  auto fn = [](const Tensor& x) {
    if (x.nonzero().size(0) > 1) return x * 2;  // the line the error must name
    return x;
  };
  const int line = __LINE__ - 3;
  auto strict = compile(fn, {.fullgraph = true});
  try {
    strict(tensor({1.0, 0.0, 2.0}));
    FAIL() << "no error";
  } catch (const GraphBreakError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(fmt::format("graph_break_test.cpp:{}", line)), std::string::npos) << msg;
    EXPECT_EQ(msg.find("sym_int.h"), std::string::npos) << msg;
  }
}

TEST(GraphBreak, CheckAssertsADataDependentSizeInsteadOfBreaking) {
  auto fn = [](const Tensor& x) {
    Tensor idx = x.gt(0).nonzero();
    kiln::check(idx.size(0) >= 2);  // a runtime assert, not a graph break
    return idx.sum() * 1;
  };
  auto f = compile(fn, {.fullgraph = true});
  Tensor ok = tensor({1.0, 2.0, -1.0, 3.0});
  expect_equal(f(ok), fn(ok));
  EXPECT_EQ(f.stats().graph_breaks, 0);
  Tensor ok2 = tensor({1.0, 2.0, 5.0, -3.0});
  expect_equal(f(ok2), fn(ok2));
  EXPECT_EQ(f.stats().compiles, 1);
  try {
    f(tensor({1.0, -2.0, -1.0, -3.0}));
    FAIL() << "no error";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("kiln::check failed at graph_break_test.cpp:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("= 1"), std::string::npos) << msg;
  }
}

// A custom op marked not traceable: doubles a float32 tensor (eagerly only).
OpId not_traceable_double() {
  static const OpId id = [] {
    OpDef def;
    def.name = "test_not_traceable_double";
    def.schema = "test_not_traceable_double(Tensor self) -> Tensor";
    def.family = "test";
    def.dtypes = DTypeSet{kFloat32};
    def.tags = kTagNotTraceable;
    def.meta = [](OpCall& call) {
      call.set_output(0, call.tensor(0).dtype(), call.tensor(0).sym_sizes());
    };
    def.cpu = [](OpCall& call) {
      const Tensor in = call.tensor(0).contiguous();
      const float* x = in.data_ptr<float>();
      float* y = call.output(0).data_ptr<float>();
      for (int64_t i = 0; i < in.numel(); ++i) y[i] = 2 * x[i];
    };
    return OpRegistry::instance().add(std::move(def)).id;
  }();
  return id;
}

TEST(GraphBreak, OpsMarkedNotTraceableRunEagerlyBetweenGraphs) {
  auto fn = [](const Tensor& x) {
    Tensor a = x.exp();
    Tensor b = dispatch::call_tensor(not_traceable_double(), a);
    return b + a;
  };
  capture::compile_counter() = {};
  auto f = compile(fn, {.backend = "count"});
  Tensor x = randn({5});
  expect_equal(f(x), fn(x));
  EXPECT_EQ(f.stats().graph_breaks, 1);
  // The graphs before and after the op go to the backend; the op itself runs eagerly.
  EXPECT_EQ(capture::compile_counter().graphs, 2);
  Tensor y = randn({5});
  expect_equal(f(y), fn(y));
  EXPECT_EQ(f.stats().compiles, 1);
  auto strict = compile(fn, {.fullgraph = true});
  try {
    strict(x);
    FAIL() << "no GraphBreakError";
  } catch (const GraphBreakError& e) {
    EXPECT_NE(std::string(e.what()).find("op test_not_traceable_double is marked not traceable"),
              std::string::npos)
        << e.what();
  }
}

TEST(GraphBreak, InPlaceUpdatesBeforeABreakHappenOnce) {
  auto fn = [](const Tensor& acc, const Tensor& x) {
    acc.add_(x);
    if (acc.sum().item<double>() > 10) acc.zero_();
    return acc * 1;
  };
  auto f = compile(fn);
  Tensor acc_c = zeros({2}), acc_e = zeros({2});
  for (int i = 0; i < 6; ++i) {
    Tensor x = full({2}, 2.0);
    expect_equal(f(acc_c, x), fn(acc_e, x));
    expect_equal(acc_c, acc_e);
  }
}

}  // namespace
}  // namespace kiln
