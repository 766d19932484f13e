// The differential fuzzer (issue 5, "Correctness"): a fixed-seed batch of random programs must
// run compiled exactly as eager, within Note [Fuzzer numerics]'s tolerances; and the generator,
// comparer and minimizer themselves are checked here.
//
// Environment: KILN_FUZZ_BACKEND (default kDefaultFuzzBackend), KILN_FUZZ_COUNT (programs in
// the batch, default 500), KILN_FUZZ_SEED (default 20261201), KILN_FUZZ_PROGRAMS_PER_COMPILE
// (programs compiled together as one function, default 8), KILN_FUZZ_SPECIAL=0 (no NaN/inf
// inputs), KILN_FUZZ_GRAD_COUNT (programs of the gradient batch, default 120).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <set>

#include "kiln/compile.h"
#include "src/capture/backend.h"
#include "src/dispatch/dispatcher.h"
#include "tests/fuzz/fuzz_runner.h"

namespace kiln::fuzz {
namespace {

constexpr uint64_t kBatchSeed = 20261201;
constexpr int64_t kBatchCount = 500;

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::stoll(v) : fallback;
}

std::vector<Program> generated(uint64_t seed, int64_t count) {
  std::vector<Program> programs;
  for (int64_t i = 0; i < count; ++i) programs.push_back(generate(seed, i));
  return programs;
}

TEST(FuzzBatch, CompiledMatchesEagerOnAFixedSeedBatch) {
  RunOptions options;
  options.backend = backend_from_environment();
  const uint64_t seed = static_cast<uint64_t>(env_int("KILN_FUZZ_SEED", kBatchSeed));
  const int64_t count = env_int("KILN_FUZZ_COUNT", kBatchCount);
  options.generator.special_values = env_int("KILN_FUZZ_SPECIAL", 1) != 0;
  options.programs_per_compile =
      static_cast<int>(env_int("KILN_FUZZ_PROGRAMS_PER_COMPILE", options.programs_per_compile));
  const BatchResult r = run_batch(seed, 0, count, options);
  std::cout << "fuzz: " << r.programs << " programs (" << r.steps << " steps), backend "
            << options.backend << ", seed " << seed << ": " << r.failures.size() << " failures in "
            << r.seconds << " s\n";
  EXPECT_EQ(r.programs, count);
  for (const std::string& f : r.failures) ADD_FAILURE() << f;
}

// Gradients through the compiled backward (AOT autograd) against eager autograd's, on a smaller
// fixed batch (each program compiles alone, forward and backward), without NaN/inf inputs.
TEST(FuzzBatch, CompiledGradientsMatchEagerOnAFixedSeedBatch) {
  RunOptions options;
  options.backend = backend_from_environment();
  options.grad = true;
  options.generator.special_values = false;
  const int64_t count = env_int("KILN_FUZZ_GRAD_COUNT", 120);
  const BatchResult r = run_batch(kBatchSeed + 1, 0, count, options);
  std::cout << "fuzz gradients: " << r.programs << " programs, " << r.gradient_checks
            << " with gradients compared: " << r.failures.size() << " failures in " << r.seconds
            << " s\n";
  EXPECT_EQ(r.programs, count);
  // Most programs have a floating input and output: the check must not skip itself into green.
  EXPECT_GT(r.gradient_checks, count / 3);
  for (const std::string& f : r.failures) ADD_FAILURE() << f;
}

// ---- the generator ----

TEST(FuzzGenerator, IsDeterministicPerSeedAndIndex) {
  EXPECT_EQ(generate(7, 3).to_text(), generate(7, 3).to_text());
  EXPECT_NE(generate(7, 3).to_text(), generate(7, 4).to_text());
  EXPECT_NE(generate(7, 3).to_text(), generate(8, 3).to_text());
  // Inputs are rebuilt from the description: equal values, independent storage.
  const Program p = generate(7, 3);
  const std::vector<Tensor> a = make_inputs(p), b = make_inputs(p);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(compare_value(a[i], b[i], ValueInfo{.exact = true}), "");
    if (a[i].numel() > 0) {
      EXPECT_NE(a[i].data_ptr(), b[i].data_ptr());
    }
  }
}

TEST(FuzzGenerator, ProgramsRunEagerlyWithTheRecordedDtypesAndShapes) {
  for (const Program& p : generated(11, 150)) {
    ASSERT_GE(p.steps.size(), 1u) << p.to_text();
    ASSERT_LE(p.steps.size(), 12u) << p.to_text();
    const std::vector<Tensor> out = interpret(p, make_inputs(p));
    ASSERT_EQ(out.size(), p.outputs.size());
    for (size_t i = 0; i < out.size(); ++i) {
      const ValueInfo& v = p.values.at(static_cast<size_t>(p.outputs[i]));
      EXPECT_EQ(out[i].dtype(), v.dtype) << p.to_text();
      EXPECT_EQ(out[i].sizes().vec(), v.shape) << p.to_text();
    }
  }
}

TEST(FuzzGenerator, EveryFuzzedOpIsInTheOpTable) {
  const std::vector<std::string> ops = fuzzed_ops();
  for (const std::string& op : ops) EXPECT_NE(OpRegistry::instance().find(op), nullptr) << op;
  // Unary and binary ops come from the table itself.
  const std::set<std::string> set(ops.begin(), ops.end());
  for (const char* op : {"exp", "erfinv", "isfinite", "add", "add.Scalar", "bitwise_left_shift",
                         "logical_xor", "pow.Tensor_Scalar", "atan2"})
    EXPECT_TRUE(set.contains(op)) << op;
  // ... and never in-place or random ones.
  for (const char* op : {"add_", "exp_", "relu_", "rand", "dropout"})
    EXPECT_FALSE(set.contains(op)) << op;
}

TEST(FuzzGenerator, CoversOpsDtypesShapesAndLayouts) {
  const Coverage c = coverage_of(generated(kBatchSeed, kBatchCount));
  std::cout << c.summary();
  for (ScalarType t : kAllScalarTypes) {
    EXPECT_GT(c.input_dtypes.count(t) ? c.input_dtypes.at(t) : 0, 0) << dtype_name(t);
    EXPECT_GT(c.value_dtypes.count(t) ? c.value_dtypes.at(t) : 0, 0) << dtype_name(t);
  }
  for (InputLayout l : {InputLayout::Contiguous, InputLayout::Transposed, InputLayout::Strided,
                        InputLayout::Expanded})
    EXPECT_GT(c.layouts.count(l) ? c.layouts.at(l) : 0, 0) << layout_name(l);
  for (const char* op :
       {"add",         "mul",    "div",    "exp",        "tanh",    "eq",      "where",
        "_to_copy",    "sum",    "mean",   "amax",       "argmax",  "var",     "softmax",
        "log_softmax", "matmul", "linear", "layer_norm", "cat",     "permute", "transpose",
        "slice",       "select", "expand", "unsqueeze",  "reshape", "view"})
    EXPECT_GT(c.ops.count(op) ? c.ops.at(op) : 0, 0) << op;
  // Most of the ops the generator may call are called at least once in the batch.
  EXPECT_GE(static_cast<double>(c.ops.size()), 0.85 * static_cast<double>(fuzzed_ops().size()));
  EXPECT_GT(c.zero_size_values, 0);
  EXPECT_GT(c.size_one_dims, 0);
  EXPECT_GT(c.inexact_outputs, 0);
  EXPECT_GT(c.non_finite_values, 0);
  EXPECT_GE(c.max_steps, 10);
}

// ---- the comparer ----

TEST(FuzzCompare, IntegersAndExactValuesMustBeEqual) {
  const ValueInfo exact{.exact = true};
  EXPECT_EQ(compare_value(tensor({1, 2, 3}, kUInt8), tensor({1, 2, 3}, kUInt8), exact), "");
  const std::string diff =
      compare_value(tensor({1, 2, 4}, kInt32), tensor({1, 2, 3}, kInt32), exact);
  EXPECT_NE(diff.find("element [2]: compiled 4, eager 3"), std::string::npos) << diff;
  // One float32 ulp is a mismatch for an exact value; NaN equals NaN.
  const float one_ulp = std::nextafter(1.0f, 2.0f);
  EXPECT_NE(compare_value(from_vector(std::vector<float>{one_ulp}),
                          from_vector(std::vector<float>{1.0f}), exact),
            "");
  EXPECT_EQ(compare_value(tensor({NAN, 1.0}), tensor({NAN, 1.0}), exact), "");
  EXPECT_NE(compare_value(tensor({1.0}, kFloat32), tensor({1.0}, kFloat64), exact).find("dtype"),
            std::string::npos);
  EXPECT_NE(compare_value(tensor({1.0, 2.0}), tensor({1.0, 2.0}).view({2, 1}), exact).find("shape"),
            std::string::npos);
}

TEST(FuzzCompare, InexactValuesAgreeWithinTheirBudgetAndOnNonFinitePositions) {
  const ValueInfo inexact{.exact = false, .scale = 10, .tol = 1e-4};
  // Allowed: 1e-4 * (|eager| + 10).
  EXPECT_EQ(compare_value(tensor({1.0005, -3.0}), tensor({1.0, -3.0}), inexact), "");
  const std::string diff = compare_value(tensor({1.01, -3.0}), tensor({1.0, -3.0}), inexact);
  EXPECT_NE(diff.find("element [0]"), std::string::npos) << diff;
  EXPECT_NE(compare_value(tensor({NAN}), tensor({1.0}), inexact), "");
  EXPECT_NE(compare_value(tensor({INFINITY}), tensor({-INFINITY}), inexact), "");
  EXPECT_EQ(compare_value(tensor({INFINITY, NAN}), tensor({INFINITY, NAN}), inexact), "");
  // The multi-index names the element.
  const std::string at =
      compare_value(tensor({0.0, 0.0, 0.0, 5.0}).view({2, 2}), zeros({2, 2}), inexact);
  EXPECT_NE(at.find("element [1, 1]"), std::string::npos) << at;
}

// ---- the error budgets (Note [Fuzzer numerics]) ----

// A legitimate evaluation that rounds differently from eager: every floating input in float64, so
// each intermediate is computed more precisely (as compiled code does for float16/bfloat16, and
// as fused multiply-adds and other summation orders do, less so), then each output rounded once
// to eager's dtype. The budgets of inexact outputs must accept it, or a correct backend would
// fail the fuzzer. (Not a model for programs with wide integers: eager rounds them to the float
// type of the op before computing, float64 does not; nor for NaN/inf, where the dtypes' kernels
// may legitimately differ... or not: that is for compiled-versus-eager to say, not this test.)
// The budgets are several times wider than what this evaluation needs (tol / 20 fails).
TEST(FuzzNumerics, BudgetsAcceptAHigherPrecisionEvaluation) {
  int checked = 0, compared = 0;
  std::vector<std::string> failures;
  for (int64_t i = 0; checked < 1000; ++i) {
    const Program p = generate(kBatchSeed, i);
    bool model = true;
    for (const InputSpec& in : p.inputs)
      model &= in.values != InputValues::Wide && in.values != InputValues::Special;
    if (!model) continue;
    const std::vector<Tensor> inputs = make_inputs(p);
    std::vector<Tensor> wide;
    for (const Tensor& t : inputs) wide.push_back(is_floating(t.dtype()) ? t.to(kFloat64) : t);
    const std::vector<Tensor> expected = interpret(p, inputs);
    std::vector<Tensor> precise;
    try {
      precise = interpret(p, wide);
    } catch (const std::exception&) {
      continue;  // float64 operands broke a same-dtype rule that eager's operands met
    }
    checked += 1;
    for (size_t o = 0; o < expected.size(); ++o) {
      const ValueInfo& info = p.values.at(static_cast<size_t>(p.outputs[o]));
      if (info.exact || !is_floating(info.dtype)) continue;
      compared += 1;
      const std::string diff = compare_value(precise[o].to(expected[o].dtype()), expected[o], info);
      if (!diff.empty()) failures.push_back(fmt::format("output {}: {}\n{}", o, diff, p.to_text()));
    }
  }
  EXPECT_GT(compared, 300);
  EXPECT_EQ(failures.size(), 0u) << failures.size() << " programs, the first:\n"
                                 << (failures.empty() ? "" : failures.front());
}

// ---- the runner: a backend that is wrong must be caught, and the report must be minimal ----

// A deliberately broken backend: eager, then element 0 of every output is off by one.
void register_off_by_one_backend() {
  static const bool registered = [] {
    capture::register_backend(
        "fuzz_off_by_one", [](const graph::Graph& g, std::span<const Tensor> ex) {
          capture::CompiledGraph eager = capture::lookup_backend("eager")(g, ex, {});
          return capture::CompiledGraph([eager](std::span<const Tensor> inputs) {
            std::vector<Tensor> out = eager(inputs);
            for (Tensor& t : out) {
              if (t.numel() == 0) continue;
              Tensor flat = t.contiguous().clone().reshape({-1});
              Tensor first = flat.narrow(0, 0, 1);
              first.copy_(t.dtype() == kBool ? first.logical_not() : first.add(1));
              t = flat.view(t.sizes());
            }
            return out;
          });
        });
    return true;
  }();
  (void)registered;
}

TEST(FuzzRunner, CatchesAWrongBackendAndReportsAMinimalReproducer) {
  register_off_by_one_backend();
  RunOptions options{.backend = "fuzz_off_by_one"};
  int caught = 0;
  for (int64_t i = 0; i < 40 && caught < 3; ++i) {
    const Program p = generate(5, i);
    const std::string mismatch = check_program(p, options);
    bool any_elements = false;
    for (const Tensor& t : interpret(p, make_inputs(p))) any_elements |= t.numel() > 0;
    if (!any_elements) continue;  // nothing to perturb
    ASSERT_NE(mismatch, "") << p.to_text();
    caught += 1;
    const Program small =
        minimize(p, [&](const Program& q) { return !check_program(q, options).empty(); });
    EXPECT_EQ(small.outputs.size(), 1u);
    EXPECT_LE(small.steps.size(), p.steps.size());
    EXPECT_NE(check_program(small, options), "");
    const std::string report = failure_report(p, mismatch, options);
    EXPECT_NE(
        report.find(fmt::format("kiln-fuzz --seed 5 --index {} --backend fuzz_off_by_one", i)),
        std::string::npos)
        << report;
    EXPECT_NE(report.find(p.to_text()), std::string::npos);
  }
  EXPECT_EQ(caught, 3);
}

TEST(FuzzRunner, ProgramsCompiledTogetherAreReportedOneByOne) {
  register_off_by_one_backend();
  RunOptions options{.backend = "fuzz_off_by_one", .minimize = false, .programs_per_compile = 4};
  int expected = 0;
  for (int64_t i = 0; i < 8; ++i) {
    const Program p = generate(5, i);
    bool any_elements = false;
    for (const Tensor& t : interpret(p, make_inputs(p))) any_elements |= t.numel() > 0;
    expected += any_elements;
  }
  const BatchResult r = run_batch(5, 0, 8, options);
  EXPECT_EQ(r.programs, 8);
  EXPECT_EQ(static_cast<int>(r.failures.size()), expected);
  for (const std::string& f : r.failures)
    EXPECT_NE(f.find("kiln-fuzz --seed 5 --index"), std::string::npos) << f;
  // The eager backend, grouped the same way, agrees.
  EXPECT_TRUE(run_batch(5, 0, 8, RunOptions{.programs_per_compile = 4}).failures.empty());
}

// A backend that is right on its first call and then returns the first call's outputs again:
// what a missing guard looks like. Only the later calls (Note [Later calls]) can catch it.
void register_stale_backend() {
  static const bool registered = [] {
    capture::register_backend(
        "fuzz_stale", [](const graph::Graph& g, std::span<const Tensor> inputs) {
          capture::CompiledGraph right = capture::lookup_backend("eager")(g, inputs, {});
          auto first = std::make_shared<std::optional<std::vector<Tensor>>>();
          return capture::CompiledGraph([right, first](std::span<const Tensor> in) {
            if (!first->has_value()) {
              std::vector<Tensor> out = right(in);
              std::vector<Tensor> kept;
              for (const Tensor& t : out) kept.push_back(t.defined() ? t.clone() : t);
              *first = std::move(kept);
              return out;
            }
            return **first;
          });
        });
    return true;
  }();
  (void)registered;
}

TEST(FuzzRunner, LaterCallsCatchABackendThatKeepsItsFirstAnswer) {
  register_stale_backend();
  int caught = 0, checked = 0;
  for (int64_t i = 0; i < 12; ++i) {
    const Program p = generate(5, i);
    bool any_elements = false;
    for (const Tensor& t : interpret(p, make_inputs(p))) any_elements |= t.numel() > 0;
    if (!any_elements) continue;
    checked += 1;
    EXPECT_EQ(check_program(p, RunOptions{.backend = "fuzz_stale", .later_calls = false}), "")
        << "the first call is right";
    const std::string m = check_program(p, RunOptions{.backend = "fuzz_stale"});
    caught += m.find("a later call with fresh values") != std::string::npos;
  }
  EXPECT_GT(checked, 0);
  EXPECT_EQ(caught, checked);
}

TEST(FuzzRunner, RandomStepsDrawWhatEagerDraws) {
  GeneratorOptions g;
  g.random_ops = true;
  int random_steps = 0;
  for (int64_t i = 0; i < 60; ++i)
    for (const Step& s : generate(11, i, g).steps) random_steps += s.op.starts_with("generator.");
  EXPECT_GT(random_steps, 5);
  const BatchResult r = run_batch(11, 0, 60, RunOptions{.generator = g});
  for (const std::string& f : r.failures) ADD_FAILURE() << f;
}

TEST(FuzzRunner, EagerBackendAgreesWithItselfWithSymbolicShapes) {
  RunOptions options{.backend = "eager", .dynamic = true};
  const BatchResult r = run_batch(3, 0, 100, options);
  for (const std::string& f : r.failures) ADD_FAILURE() << f;
}

// Found by this fuzzer with --dynamic (kiln-fuzz --dynamic: seed 3 index 32; seed 2 indices 106,
// 180, 326; seed 20261201 index 447): with every dim symbolic, broadcasting two sizes that are
// equal (or 1) at their hints but not provably equal, here [s0] against [(s0 + 1)//3], raises
// ShapeError instead of guarding on the hints. Fixed in src/core/shape.cpp (Note [Broadcasting
// symbolic sizes]); the compiled code reads the size-1 side at index 0.
TEST(FuzzRunner, SymbolicSizesThatBroadcastAtTheirHintsAreGuarded) {
  auto f = compile([](const Tensor& x) { return x.pow(x.slice(0, 1, std::nullopt, 3)); },
                   {.dynamic = true});
  const Tensor x = tensor({1.0, 2.0, 3.0});
  EXPECT_EQ(compare_value(f(x), x.pow(x.slice(0, 1, std::nullopt, 3)), ValueInfo{.exact = true}),
            "");
}

// Found by this fuzzer with --dynamic (kiln-fuzz --dynamic --seed 3, indices 30, 84, 89, 94; seed
// 5 indices 1 and 50): expanding [s0, s1 + 1] to [s0, 4] guards s1 == 3, but the backend saw the
// expand of a size s1 + 1 and took it for a broadcast of a size-1 dim, returning column 0 in
// every column. Fixed by Note [Replacements reach the backend] (src/capture/replacements.h).
TEST(FuzzRunner, SizesPinnedByAGuardReachTheBackendSimplified) {
  auto fn = [](const Tensor& x, const Tensor& y) { return cat({x, y}, 1).expand({-1, 4}) * 2; };
  auto f = compile(fn, {.dynamic = true});
  const Tensor x = randn({5, 1}), y = randn({5, 3});
  EXPECT_EQ(compare_value(f(x, y), fn(x, y), ValueInfo{.exact = true}), "");
}

// Found by this fuzzer with --dynamic, once the backend saw the replacements: seed 3 index 71
// (masked_fill's decomposition into where would need a guard the trace never made: the node is
// kept whole, Note [Decompositions never guard]) and seed 5 programs 8..15 compiled together (a
// layer_norm of an empty [1, 0] slice whose symbolic row stride became 0: strides of empty
// tensors and size-1 dims are not compared, check_replacement in src/graph/decompose.cpp).
TEST(FuzzRunner, SymbolicProgramsWhoseDecompositionsFailedNowCompile) {
  EXPECT_EQ(check_program(generate(3, 71), RunOptions{.dynamic = true}), "");
  const BatchResult r = run_batch(5, 8, 8, RunOptions{.dynamic = true, .programs_per_compile = 8});
  for (const std::string& f : r.failures) ADD_FAILURE() << f;
}

// Found by this fuzzer with --dynamic --grad (seed 880001 index 193): the backward of a slice
// that is empty at run time pads the gradient with cat, whose lowering reads every piece at a
// clamped index; the empty piece's index 0 was outside its memory (a null pointer) and the
// kernel crashed. Fixed by Note [Empty buffers are readable] (src/runtime/executor.cpp).
TEST(FuzzRunner, AnEmptySymbolicCatPieceIsNeverReadOutsideItsMemory) {
  EXPECT_EQ(check_program(generate(880001, 193), RunOptions{.dynamic = true, .grad = true}), "");
}

// Found by this fuzzer with --dynamic --grad (seed 990102 indices 592 and 670): with symbolic
// sizes, a tangent that never arrived was passed as zeros through the whole backward graph, and
// the branch of an output the loss ignores turned 0 * inf into NaN gradients elsewhere. The
// backward is now specialized for absent tangents with symbolic sizes too (Note [Absent
// tangents], keep_absent_inputs).
TEST(FuzzRunner, AbsentTangentsWithSymbolicSizesLeaveNoNaN) {
  for (int64_t index : {592, 670})
    EXPECT_EQ(check_program(generate(990102, index), RunOptions{.dynamic = true, .grad = true}), "")
        << index;
}

// Found by this fuzzer with --dynamic --grad --random (seed 991001 index 11): layer_norm's
// backward with an inf weight gave inf where eager gives NaN; the decomposition now arranges the
// input gradient as the eager kernel does (src/lower/decomp/norm_backward.cpp).
TEST(FuzzRunner, LayerNormBackwardPutsNonFiniteValuesWhereEagerDoes) {
  GeneratorOptions g;
  g.random_ops = true;
  EXPECT_EQ(check_program(generate(991001, 11, g),
                          RunOptions{.dynamic = true, .grad = true, .generator = g}),
            "");
}

TEST(FuzzRunner, BackendComesFromTheEnvironment) {
  const char* saved = std::getenv("KILN_FUZZ_BACKEND");
  const std::string restore = saved ? saved : "";
  unsetenv("KILN_FUZZ_BACKEND");
  EXPECT_EQ(backend_from_environment(), kDefaultFuzzBackend);
  setenv("KILN_FUZZ_BACKEND", "count", 1);
  EXPECT_EQ(backend_from_environment(), "count");
  if (saved)
    setenv("KILN_FUZZ_BACKEND", restore.c_str(), 1);
  else
    unsetenv("KILN_FUZZ_BACKEND");
}

TEST(FuzzRunner, AnUnknownBackendIsReportedNotCrashed) {
  const std::string m = check_program(generate(1, 0), RunOptions{.backend = "no_such_backend"});
  EXPECT_NE(m.find("no_such_backend"), std::string::npos) << m;
}

}  // namespace
}  // namespace kiln::fuzz
