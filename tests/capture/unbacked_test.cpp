// Unbacked symbols under kiln::compile: item<SymInt>() values (capture_scalar_outputs, Note
// [Scalar outputs in a graph] in src/ops/scalar_output.cpp) and data-dependent output sizes
// (capture_dynamic_output_shape_ops) stay in one graph; branching on them needs a fact from
// kiln::check (GuardOnDataDependentError otherwise, Note [Guarding on a data-dependent value] in
// src/capture/tracer.cpp), and the fact is checked when the graph runs.
#include <gtest/gtest.h>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "tests/capture/compare.h"

namespace kiln {
namespace {

using testing::error_of_kind;
using testing::expect_equal;

CompileOptions scalar_outputs(const std::string& backend, bool fullgraph = true) {
  CompileOptions o;
  o.backend = backend;
  o.fullgraph = fullgraph;
  o.capture_scalar_outputs = true;
  return o;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The first `count` rows of x, doubled, plus a zeros(count) column sum: the count is read from a
// tensor the function receives.
constexpr int kFirstRowsLine = __LINE__ + 1;
Tensor first_rows(const Tensor& x, const Tensor& count) {
  const SymInt n = count.item<SymInt>();
  check_is_size(n);
  check(n <= x.size(0));
  return x.narrow(0, 0, n) * 2 + zeros({n, 1}).sum();
}

class CompiledUnbacked : public ::testing::TestWithParam<std::string> {};

TEST_P(CompiledUnbacked, ItemIsASymbolOfOneGraphNotABreak) {
  auto f = compile(first_rows, scalar_outputs(GetParam()));
  const Tensor x = arange(12, kFloat32).reshape({4, 3});
  for (int64_t n : {2, 0, 4, 1, 3}) {
    const Tensor count = tensor({n});
    expect_equal(f(x, count), first_rows(x, count));
  }
  EXPECT_EQ(f.stats().graph_breaks, 0);
  EXPECT_EQ(f.stats().compiles, 1);  // a new value is no recompile
  EXPECT_TRUE(contains(f.describe(), "_local_scalar_dense")) << f.describe();
}

TEST_P(CompiledUnbacked, TheChecksFireWhenTheGraphRuns) {
  auto f = compile(first_rows, scalar_outputs(GetParam()));
  const Tensor x = arange(12, kFloat32).reshape({4, 3});
  f(x, tensor({int64_t{2}}));
  const int check_line = kFirstRowsLine + 3;  // check(n <= x.size(0)) in first_rows
  const std::string too_many = error_of_kind<ValueError>([&] { f(x, tensor({int64_t{5}})); });
  EXPECT_TRUE(contains(too_many, "kiln::check failed")) << too_many;
  EXPECT_TRUE(contains(too_many, fmt::format("u0 <= 4 at unbacked_test.cpp:{}", check_line)))
      << too_many;
  EXPECT_TRUE(contains(too_many, "u0 = 5")) << too_many;
  const std::string negative = error_of_kind<ValueError>([&] { f(x, tensor({int64_t{-1}})); });
  EXPECT_TRUE(contains(negative, fmt::format("unbacked_test.cpp:{}", check_line - 1))) << negative;
  // Eagerly the same calls raise too.
  EXPECT_THROW(first_rows(x, tensor({int64_t{5}})), ValueError);
}

TEST_P(CompiledUnbacked, BranchingOnAValueWithNoFactRaisesNamingTheLineAndTheFix) {
  auto fn = [](const Tensor& x, const Tensor& k) {
    const SymInt n = k.item<SymInt>();  // the line the error names
    if (n == -1) return x * 0;
    return x * 2;
  };
  const int line = __LINE__ - 4;
  for (bool fullgraph : {true, false}) {
    auto f = compile(fn, scalar_outputs(GetParam(), fullgraph));
    const std::string msg = error_of_kind<GuardOnDataDependentError>([&] {
      f(tensor({1.0f, 2.0f}), tensor({int64_t{3}}));
    });
    EXPECT_TRUE(contains(msg, fmt::format("unbacked_test.cpp:{}", line))) << msg;
    EXPECT_TRUE(contains(msg, "u0 == -1")) << msg;
    EXPECT_TRUE(contains(msg, "kiln::check(u0 >= 0)")) << msg;
    EXPECT_TRUE(contains(msg, "capture_scalar_outputs=false")) << msg;
  }
}

TEST_P(CompiledUnbacked, AfterACheckTheBranchIsDecidedAndTheCheckIsAsserted) {
  auto fn = [](const Tensor& x, const Tensor& k) {
    const SymInt n = k.item<SymInt>();
    check(n >= 0);
    if (n == -1) return x * 0;  // decided by the check: no guard, no error
    return x * 2;
  };
  auto f = compile(fn, scalar_outputs(GetParam()));
  const Tensor x = tensor({1.0f, -2.0f});
  for (int64_t k : {3, 0, 7}) expect_equal(f(x, tensor({k})), fn(x, tensor({k})));
  EXPECT_EQ(f.stats().compiles, 1);
  const std::string msg = error_of_kind<ValueError>([&] { f(x, tensor({int64_t{-1}})); });
  EXPECT_TRUE(contains(msg, "kiln::check failed")) << msg;
  EXPECT_TRUE(contains(msg, "u0 >= 0 at unbacked_test.cpp:")) << msg;
  EXPECT_TRUE(contains(msg, "u0 = -1")) << msg;
}

TEST_P(CompiledUnbacked, NeedingTheIntegerValueRaisesGuardOnDataDependentError) {
  auto fn = [](const Tensor& x, const Tensor& k) {
    const SymInt n = k.item<SymInt>();
    return x * static_cast<int64_t>(n);
  };
  auto f = compile(fn, scalar_outputs(GetParam(), /*fullgraph=*/false));
  const std::string msg =
      error_of_kind<GuardOnDataDependentError>([&] { f(tensor({1.0f}), tensor({int64_t{3}})); });
  EXPECT_TRUE(contains(msg, "needs the integer value of `u0`")) << msg;
}

TEST_P(CompiledUnbacked, ADtypeBoundsTheValueRange) {
  // uint8 values are in [0, 255] and bools in [0, 1]: these conditions need no check.
  auto fn = [](const Tensor& x, const Tensor& small, const Tensor& flag) {
    const SymInt n = small.item<SymInt>();
    const SymInt b = flag.item<SymInt>();
    if (n < 0 || n > 255 || b > 1) return x * 0;
    return zeros({n}).sum() + zeros({b}).sum() + x;
  };
  auto f = compile(fn, scalar_outputs(GetParam()));
  const Tensor x = tensor({1.0f, 2.0f});
  for (uint8_t v : {uint8_t{0}, uint8_t{200}}) {
    const Tensor small = full({1}, v, kUInt8), flag = full({1}, v, kUInt8).gt(0);
    expect_equal(f(x, small, flag), fn(x, small, flag));
  }
  EXPECT_EQ(f.stats().compiles, 1);
}

TEST_P(CompiledUnbacked, ToVectorGivesOneSymbolPerElement) {
  auto fn = [](const Tensor& shape) {
    const std::vector<SymInt> sizes = shape.to_vector<SymInt>();
    for (SymInt s : sizes) check_is_size(s);
    return ones({sizes[0], sizes[1]}).cumsum(1);
  };
  auto f = compile(fn, scalar_outputs(GetParam()));
  for (const Tensor& shape : {tensor({int64_t{2}, int64_t{3}}), tensor({int64_t{0}, int64_t{4}}),
                              tensor({int64_t{5}, int64_t{1}})})
    expect_equal(f(shape), fn(shape));
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_EQ(f.stats().graph_breaks, 0);
}

TEST_P(CompiledUnbacked, AValueUsedAfterAGraphBreakIsDefinedThereAgain) {
  auto fn = [](const Tensor& x, const Tensor& k) {
    const SymInt n = k.item<SymInt>();
    check_is_size(n);
    const double scale = x.sum().item<double>();  // a graph break
    return zeros({n}) + scale;
  };
  auto f = compile(fn, scalar_outputs(GetParam(), /*fullgraph=*/false));
  const Tensor x = tensor({1.0f, 2.0f});
  for (int64_t k : {3, 1, 0}) expect_equal(f(x, tensor({k})), fn(x, tensor({k})));
  EXPECT_GE(f.stats().graph_breaks, 1);
}

TEST_P(CompiledUnbacked, WithoutTheOptionItemIsAGraphBreak) {
  CompileOptions o;
  o.backend = GetParam();
  auto f = compile(first_rows, o);
  const Tensor x = arange(12, kFloat32).reshape({4, 3});
  for (int64_t n : {2, 3}) expect_equal(f(x, tensor({n})), first_rows(x, tensor({n})));
  EXPECT_GE(f.stats().graph_breaks, 1);
  EXPECT_FALSE(contains(f.describe(), "_local_scalar_dense"));
  o.fullgraph = true;
  auto strict = compile(first_rows, o);
  EXPECT_THROW(strict(x, tensor({int64_t{2}})), GraphBreakError);
}

TEST_P(CompiledUnbacked, AFloatValueIsNoSymInt) {
  auto fn = [](const Tensor& x) { return zeros({x.item<SymInt>()}); };
  auto f = compile(fn, scalar_outputs(GetParam()));
  EXPECT_THROW(f(tensor({2.0f})), DTypeError);
  EXPECT_THROW(fn(tensor({2.0f})), DTypeError);
}

TEST_P(CompiledUnbacked, NonzeroHasShapeUnbackedByRank) {
  bool symbolic_rows = false, static_rank = false;
  auto fn = [&](const Tensor& x) {
    const Tensor nz = x.nonzero();
    symbolic_rows = nz.size(0).is_symbolic();
    static_rank = same(nz.size(1), 2);
    return nz * 1;
  };
  CompileOptions o;
  o.backend = GetParam();
  o.fullgraph = true;
  auto f = compile(fn, o);
  const Tensor x = tensor({1.0f, 0.0f, 0.0f, 3.0f, 4.0f, 0.0f}).reshape({2, 3});
  const Tensor compiled = f(x);  // traces: the sizes are (u0, 2)
  EXPECT_TRUE(symbolic_rows);
  EXPECT_TRUE(static_rank);
  expect_equal(compiled, fn(x));
  EXPECT_TRUE(contains(f.describe(), "nonzero"));
}

TEST_P(CompiledUnbacked, BooleanMaskSumIsOneGraph) {
  auto fn = [](const Tensor& x) { return x.index({x > 0}).sum(); };
  CompileOptions o;
  o.backend = GetParam();
  o.fullgraph = true;
  auto f = compile(fn, o);
  for (const Tensor& x : {tensor({1.0f, -2.0f, 3.0f, 0.5f}), tensor({-1.0f, -2.0f, -3.0f, -4.0f}),
                          tensor({4.0f, 3.0f, 2.0f, 1.0f})})
    expect_equal(f(x), fn(x));
  EXPECT_EQ(f.stats().graph_breaks, 0);
  EXPECT_EQ(f.stats().graphs, 1);
  EXPECT_EQ(f.stats().compiles, 1);
}

TEST_P(CompiledUnbacked, MaskedSelectBroadcastsTheMaskInOneGraph) {
  auto fn = [](const Tensor& x, const Tensor& row_mask) {
    return x.masked_select(row_mask) * 3 + x.masked_select(x > 2).sum();
  };
  CompileOptions o;
  o.backend = GetParam();
  o.fullgraph = true;
  auto f = compile(fn, o);
  const Tensor x = arange(6, kFloat32).reshape({2, 3});
  const Tensor mask = tensor({1, 0, 1}).ne(0);  // broadcast over the rows
  expect_equal(fn(x, mask), tensor({0.0f, 6.0f, 9.0f, 15.0f}) + 12.0f);
  expect_equal(f(x, mask), fn(x, mask));
  const Tensor none = zeros({3}).ne(0);
  expect_equal(f(x, none), fn(x, none));
  EXPECT_EQ(f.stats().graph_breaks, 0);
  EXPECT_THROW(fn(x, tensor({1, 0, 1})), DTypeError);
}

TEST_P(CompiledUnbacked, UniqueAndRepeatInterleaveGiveUnbackedLengthsInOneGraph) {
  auto fn = [](const Tensor& labels, const Tensor& x, const Tensor& repeats) {
    const UniqueResult u = unique(labels);
    // Rows of x repeated as the data says, then each label's count scaled by its value.
    const Tensor rows = repeat_interleave(x, repeats, 0) * 2;
    return std::make_tuple(u.values * u.counts, u.inverse + 1, rows, rows.sum(0));
  };
  CompileOptions o;
  o.backend = GetParam();
  o.fullgraph = true;
  auto f = compile(fn, o);
  const Tensor x = arange(6, kFloat32).reshape({3, 2});
  for (const auto& [labels, repeats] : {std::pair{tensor({3, 1, 3, 3, 7}), tensor({2, 0, 1})},
                                        std::pair{tensor({4, 4, 4, 4, 4}), tensor({0, 0, 0})},
                                        std::pair{tensor({9, 8, 7, 6, 5}), tensor({1, 3, 2})}}) {
    auto got = f(labels, x, repeats);
    auto want = fn(labels, x, repeats);
    expect_equal(std::get<0>(got), std::get<0>(want));
    expect_equal(std::get<1>(got), std::get<1>(want));
    expect_equal(std::get<2>(got), std::get<2>(want));
    expect_equal(std::get<3>(got), std::get<3>(want));
  }
  EXPECT_EQ(f.stats().graph_breaks, 0);
  EXPECT_EQ(f.stats().graphs, 1);
  EXPECT_EQ(f.stats().compiles, 1);
  EXPECT_TRUE(contains(f.describe(), "unique(")) << f.describe();
  EXPECT_TRUE(contains(f.describe(), "repeat_interleave")) << f.describe();
  // A negative repeat raises when the graph runs, as eagerly.
  EXPECT_THROW(f(tensor({1, 2, 3, 4, 5}), x, tensor({1, -1, 1})), ValueError);
}

// Note [Size-oblivious reasoning]: broadcasting a data-dependent size against a 1 needs no guard
// (the data-dependent side wins whether or not it is 1), so these are one graph, even though the
// first row count asked `u0 == 1` of the broadcast.
TEST_P(CompiledUnbacked, BroadcastingAnUnbackedSizeAgainstOneNeedsNoGuard) {
  auto fn = [](const Tensor& x, const Tensor& bias) {
    const Tensor rows = x.index({x.sum(1) > 0});  // [u0, 3]
    return std::make_tuple(bias + rows, (ones({1}) * rows.sum(1)).sum());
  };
  CompileOptions o;
  o.backend = GetParam();
  o.fullgraph = true;
  auto f = compile(fn, o);
  const Tensor bias = tensor({1.0f, 2.0f, 3.0f}).reshape({1, 3});
  for (const Tensor& x : {arange(12, kFloat32).reshape({4, 3}) - 4,
                          arange(12, kFloat32).reshape({4, 3}) - 100, ones({4, 3})}) {
    auto [a, b] = f(x, bias);
    auto [ea, eb] = fn(x, bias);
    expect_equal(a, ea);
    expect_equal(b, eb);
  }
  EXPECT_EQ(f.stats().graph_breaks, 0);
  EXPECT_EQ(f.stats().compiles, 1);
}

TEST_P(CompiledUnbacked, WithoutCaptureDynamicOutputShapeOpsTheyRunEagerly) {
  auto fn = [](const Tensor& x) { return x.index({x > 0}).sum() + x.nonzero().sum(); };
  CompileOptions o;
  o.backend = GetParam();
  o.capture_dynamic_output_shape_ops = false;
  auto f = compile(fn, o);
  for (const Tensor& x : {tensor({1.0f, -2.0f, 3.0f}), tensor({-1.0f, -2.0f, -3.0f})})
    expect_equal(f(x), fn(x));
  EXPECT_EQ(f.stats().graph_breaks, 2);
  o.fullgraph = true;
  auto strict = compile(fn, o);
  EXPECT_THROW(strict(tensor({1.0f})), GraphBreakError);
}

TEST_P(CompiledUnbacked, BranchingOnANonzeroSizeUnderFullgraphIsAGuardOnDataDependentError) {
  auto fn = [](const Tensor& x) {
    if (x.nonzero().size(0) > 1) return x * 2;
    return x;
  };
  CompileOptions o;
  o.backend = GetParam();
  o.fullgraph = true;
  auto f = compile(fn, o);
  const std::string msg = error_of_kind<GuardOnDataDependentError>([&] {
    f(tensor({1.0f, 0.0f, 2.0f}));
  });
  EXPECT_TRUE(contains(msg, "fullgraph=false")) << msg;
  // Without fullgraph it is a graph break, and right for either branch.
  o.fullgraph = false;
  auto g = compile(fn, o);
  for (const Tensor& x : {tensor({1.0f, 0.0f, 2.0f}), tensor({0.0f, 0.0f, 2.0f})})
    expect_equal(g(x), fn(x));
}

// Note [A SymInt operand] (src/ops/binary_operators.cpp): `x * n` and the other arithmetic
// operators, either side, with n from item<SymInt>(): one graph, and the dtype, the values and
// the zero divisors as eagerly with the Scalar n, for floating, integer, unsigned, bool and 0-dim
// x. n is read with no fact about it, so none of this may guard on it.
std::vector<Tensor> arithmetic_with_a_value(const Tensor& x, const Tensor& count) {
  const SymInt n = count.item<SymInt>();
  return {x + n, n + x, x - n, n - x, x * n, n * x, x / n, n / x, (x * (n + 1)) / (n * n + 1)};
}

TEST_P(CompiledUnbacked, AValueIsAnArithmeticOperandInOneGraph) {
  const std::vector<Tensor> xs = {arange(6, kFloat32).reshape({2, 3}) - 2.5, arange(6, kInt32) - 3,
                                  tensor({true, false, true}), scalar_tensor(7, kInt32),
                                  arange(4, kUInt8) * 60};
  for (const Tensor& x : xs) {
    SCOPED_TRACE(dtype_name(x.dtype()));
    auto f = compile(arithmetic_with_a_value, scalar_outputs(GetParam()));
    for (int64_t n : {3, 0, -2, 1}) {
      SCOPED_TRACE(n);
      const std::vector<Tensor> got = f(x, tensor({n}));
      const std::vector<Tensor> want = arithmetic_with_a_value(x, tensor({n}));
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        SCOPED_TRACE(i);
        expect_equal(got[i], want[i]);
      }
    }
    EXPECT_EQ(f.stats().graph_breaks, 0);
    EXPECT_EQ(f.stats().compiles, 1);
    EXPECT_TRUE(contains(f.describe(), "sym_scalar_tensor")) << f.describe();
  }
}

TEST_P(CompiledUnbacked, GradientsThroughAValueOperand) {
  auto fn = [](const Tensor& x, const Tensor& count) {
    const SymInt n = count.item<SymInt>();
    return ((x * n) / (n * n + 1) - n).sum();
  };
  auto f = compile(fn, scalar_outputs(GetParam()));
  for (int64_t n : {3, -2, 0}) {
    SCOPED_TRACE(n);
    Tensor x = arange(4, kFloat32).requires_grad_(true),
           xe = arange(4, kFloat32).requires_grad_(true);
    const Tensor loss = f(x, tensor({n})), want = fn(xe, tensor({n}));
    expect_equal(loss, want);
    loss.backward();
    want.backward();
    expect_equal(x.grad(), xe.grad());
  }
  EXPECT_EQ(f.stats().compiles, 1);
}

// The mean of the positive elements: a sum divided by a data-dependent length (0 gives NaN, as
// eagerly), with no guard on the length.
TEST_P(CompiledUnbacked, ADataDependentLengthIsAnArithmeticOperand) {
  auto fn = [](const Tensor& x) {
    const Tensor positive = x.index({x > 0});
    const SymInt m = positive.size(0);
    return std::make_tuple(positive.sum() / m, m - x.sum() * m);
  };
  CompileOptions o = scalar_outputs(GetParam());
  o.capture_dynamic_output_shape_ops = true;
  auto f = compile(fn, o);
  for (const Tensor& x :
       {tensor({1.0, -2.0, 3.0}), tensor({-1.0, -2.0, -0.5}), tensor({4.0, 0.5, 2.0})}) {
    auto [mean, other] = f(x);
    auto [mean_e, other_e] = fn(x);
    expect_equal(mean, mean_e);
    expect_equal(other, other_e);
  }
  EXPECT_EQ(f.stats().graph_breaks, 0);
  EXPECT_EQ(f.stats().compiles, 1);
}

// A length used only as a number: nonzero()'s output is read by nothing but its size.
TEST_P(CompiledUnbacked, ALengthReadOnlyAsANumber) {
  auto fn = [](const Tensor& x) { return x * x.nonzero().size(0); };
  CompileOptions o = scalar_outputs(GetParam());
  o.capture_dynamic_output_shape_ops = true;
  auto f = compile(fn, o);
  for (const Tensor& x :
       {tensor({1.0, 0.0, 3.0}), tensor({0.0, 0.0, 0.0}), tensor({4.0, 5.0, 6.0})})
    expect_equal(f(x), fn(x));
  EXPECT_EQ(f.stats().graph_breaks, 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, CompiledUnbacked, ::testing::Values("eager", "inductor"));

}  // namespace
}  // namespace kiln
