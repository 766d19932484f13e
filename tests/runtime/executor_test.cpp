// The executor runs hand-written Programs with a library of small hand-written kernels (compiled
// once for the whole file), so it is tested independently of the code generator.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "kiln/kiln.h"
#include "runtime_test_helpers.h"
#include "src/runtime/executor.h"
#include "src/runtime/step_profile.h"

namespace kiln::runtime {
namespace {

using ::testing::HasSubstr;

// Kernel ABI: Note [Kernel ABI] in src/runtime/program.h.
constexpr const char* kKernels = R"(
extern "C" {
// out = x + y over symbols[0] elements
void add_f32(void* const* b, const long* s) {
  const float* x = (const float*)b[0];
  const float* y = (const float*)b[1];
  float* out = (float*)b[2];
  for (long i = 0; i < s[0]; ++i) out[i] = x[i] + y[i];
}
// out = 2 * x over symbols[0] elements
void scale2_f32(void* const* b, const long* s) {
  const float* x = (const float*)b[0];
  float* out = (float*)b[1];
  for (long i = 0; i < s[0]; ++i) out[i] = 2 * x[i];
}
// x = relu(x) in place over symbols[0] elements
void relu_inplace_f32(void* const* b, const long* s) {
  float* x = (float*)b[0];
  for (long i = 0; i < s[0]; ++i) x[i] = x[i] > 0 ? x[i] : 0;
}
// out = relu(x) over symbols[0] * symbols[1] elements
void relu_2d_f32(void* const* b, const long* s) {
  const float* x = (const float*)b[0];
  float* out = (float*)b[1];
  for (long i = 0; i < s[0] * s[1]; ++i) out[i] = x[i] > 0 ? x[i] : 0;
}
// out = x over symbols[1] int64 elements
void copy_i64(void* const* b, const long* s) {
  const long* x = (const long*)b[0];
  long* out = (long*)b[1];
  for (long i = 0; i < s[1]; ++i) out[i] = x[i];
}
// out[i] = x[i * symbols[1]] for i < symbols[0] (x's stride is a symbol)
void gather_strided_f32(void* const* b, const long* s) {
  const float* x = (const float*)b[0];
  float* out = (float*)b[1];
  for (long i = 0; i < s[0]; ++i) out[i] = x[i * s[1]];
}
}
)";

std::shared_ptr<const KernelLibrary> kernels() {
  static const std::shared_ptr<const KernelLibrary> library =
      compile_and_load(kKernels, default_compiler_options());
  return library;
}

sym::ExprPtr S(const char* name) { return sym::symbol(name); }
sym::ExprPtr I(int64_t v) { return sym::integer(v); }

Layout contiguous(std::vector<sym::ExprPtr> sizes) {
  Layout layout;
  layout.strides.resize(sizes.size());
  sym::ExprPtr stride = I(1);
  for (size_t d = sizes.size(); d-- > 0;) {
    layout.strides[d] = stride;
    stride = sym::mul(stride, sizes[d]);
  }
  layout.sizes = std::move(sizes);
  return layout;
}

BufferDesc input_buffer(const char* name, int input, ScalarType dtype = kFloat32) {
  BufferDesc b;
  b.kind = BufferDesc::Kind::Input;
  b.name = name;
  b.dtype = dtype;
  b.input = input;
  return b;
}
BufferDesc intermediate(const char* name, int slot, Layout layout, ScalarType dtype = kFloat32) {
  BufferDesc b;
  b.name = name;
  b.dtype = dtype;
  b.slot = slot;
  b.layout = std::move(layout);
  return b;
}
BufferDesc extern_buffer(const char* name, Layout layout, ScalarType dtype = kFloat32) {
  BufferDesc b;
  b.kind = BufferDesc::Kind::Extern;
  b.name = name;
  b.dtype = dtype;
  b.layout = std::move(layout);
  return b;
}
SymbolSource input_size(const char* symbol, int input, int dim) {
  return {S(symbol), SymbolSource::From::InputSize, input, dim};
}

// x + y for 1-d float inputs of any (equal) size s0.
Program add_program() {
  Program p;
  p.num_inputs = 2;
  p.symbols = {S("s0")};
  p.symbol_sources = {input_size("s0", 0, 0)};
  p.buffers = {input_buffer("arg0", 0), input_buffer("arg1", 1),
               intermediate("buf0", 0, contiguous({S("s0")}))};
  p.slot_bytes = {sym::mul(I(4), S("s0"))};
  p.steps = {KernelStep{"add_f32", {0, 1, 2}}};
  p.outputs = {OutputDesc{2, contiguous({S("s0")})}};
  p.source_hash = kernels()->hash();
  return p;
}

std::vector<float> values(const Tensor& t) { return t.contiguous().to_vector<float>(); }

void expect_equal(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(std::vector<int64_t>(actual.sizes().begin(), actual.sizes().end()),
            std::vector<int64_t>(expected.sizes().begin(), expected.sizes().end()));
  const Tensor a = actual.to(kFloat64).contiguous(), e = expected.to(kFloat64).contiguous();
  EXPECT_EQ(a.to_vector<double>(), e.to_vector<double>());
}

template <typename E, typename F>
void expect_error(F&& fn, std::initializer_list<std::string_view> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    for (std::string_view part : parts) EXPECT_THAT(e.what(), HasSubstr(std::string(part)));
  }
}

TEST(Executor, OneLibraryServesEverySize) {
  const Executor executor(add_program(), kernels());
  for (int64_t n : {1, 7, 1000}) {
    const Tensor x = randn({n}), y = randn({n});
    const std::vector<Tensor> out = executor.run(std::vector<Tensor>{x, y});
    ASSERT_EQ(out.size(), 1u);
    expect_equal(out[0], x + y);
    EXPECT_EQ(out[0].storage_offset(), 0);
    // The buffer is 64-byte aligned (the caching allocator's blocks).
    EXPECT_EQ(reinterpret_cast<uintptr_t>(out[0].data_ptr()) % 64, 0u);
  }
}

TEST(Executor, BuffersSharingASlotAndOutputsOfEarlierCallsStayIntact) {
  // buf0 = x + y (slot 0), buf1 = 2 * buf0 (slot 1), buf2 = buf1 + x (slot 0 again: buf0 is dead).
  Program p = add_program();
  p.buffers.push_back(intermediate("buf1", 1, contiguous({S("s0")})));
  p.buffers.push_back(intermediate("buf2", 0, contiguous({S("s0")})));
  p.slot_bytes.push_back(sym::mul(I(4), S("s0")));
  p.steps = {KernelStep{"add_f32", {0, 1, 2}}, KernelStep{"scale2_f32", {2, 3}},
             KernelStep{"add_f32", {3, 0, 4}}};
  p.outputs = {OutputDesc{4, contiguous({S("s0")})}};
  const Executor executor(std::move(p), kernels());
  const Tensor x = randn({33}), y = randn({33});
  const Tensor first = executor.run(std::vector<Tensor>{x, y})[0];
  const Tensor expected = (x + y) * 2 + x;
  expect_equal(first, expected);
  // A second call allocates its own memory: the first call's output is unchanged.
  const Tensor second = executor.run(std::vector<Tensor>{y, x})[0];
  expect_equal(first, expected);
  expect_equal(second, (y + x) * 2 + y);
  EXPECT_NE(first.data_ptr(), second.data_ptr());
}

TEST(Executor, KernelUpdatesAnInputInPlace) {
  Program p;
  p.num_inputs = 1;
  p.symbols = {S("s0")};
  p.symbol_sources = {input_size("s0", 0, 0)};
  p.buffers = {input_buffer("arg0", 0)};
  p.steps = {KernelStep{"relu_inplace_f32", {0}}};
  p.outputs = {OutputDesc{0, contiguous({S("s0")})}};  // returns the mutated input itself
  const Executor executor(std::move(p), kernels());
  // The input is a slice: the kernel gets the address of its first element.
  const Tensor base = randn({10});
  const Tensor x = base.narrow(0, 2, 6);
  const Tensor expected = relu(x);
  const std::vector<float> before = values(base);
  const std::vector<Tensor> out = executor.run(std::vector<Tensor>{x});
  expect_equal(x, expected);
  const std::vector<float> after = values(base);
  EXPECT_EQ(after[0], before[0]);  // outside the slice: untouched
  EXPECT_EQ(after[9], before[9]);
  EXPECT_TRUE(out[0].is_alias_of(x));
  EXPECT_EQ(out[0].data_ptr(), x.data_ptr());
}

TEST(Executor, CopyStepWritesAKernelResultBackIntoAnInput) {
  Program p = add_program();
  p.steps.push_back(CopyStep{0, 2});  // x = x + y
  p.outputs = {};
  const Executor executor(std::move(p), kernels());
  const Tensor x = randn({5}), y = randn({5});
  const Tensor expected = x + y;
  const uint32_t version = x.version();
  EXPECT_TRUE(executor.run(std::vector<Tensor>{x, y}).empty());
  expect_equal(x, expected);
  EXPECT_GT(x.version(), version);
}

// relu(a @ w.t()) with a: [s0, 4], w: [3, 4]; mm runs eagerly on a transposed view of w.
Program mm_relu_program() {
  Program p;
  p.num_inputs = 2;
  p.symbols = {S("s0"), S("s1")};
  p.symbol_sources = {input_size("s0", 0, 0), input_size("s1", 1, 0)};
  Layout w_t;
  w_t.sizes = {I(4), S("s1")};
  w_t.strides = {I(1), I(4)};
  p.buffers = {input_buffer("arg0", 0), input_buffer("arg1", 1),
               extern_buffer("buf0", contiguous({S("s0"), S("s1")})),
               intermediate("buf1", 0, contiguous({S("s0"), S("s1")}))};
  p.slot_bytes = {sym::mul(I(4), sym::mul(S("s0"), S("s1")))};
  ExternStep mm_step;
  mm_step.call =
      "%0 : f32[s0, 4] = placeholder(\"arg0\")\n"
      "%1 : f32[4, s1]{1, 4} = placeholder(\"arg1\")\n"
      "%2 : f32[s0, s1] = mm(%0, %1)\n"
      "return (%2)\n";
  mm_step.args = {0, 1};
  mm_step.arg_views = {contiguous({S("s0"), I(4)}), w_t};
  mm_step.outputs = {2};
  p.steps = {mm_step, KernelStep{"relu_2d_f32", {2, 3}}};
  p.outputs = {OutputDesc{3, contiguous({S("s0"), S("s1")})}};
  p.source_hash = kernels()->hash();
  return p;
}

TEST(Executor, ExternMatmulReadsAViewOfAnInputAndFeedsAKernel) {
  Program p = mm_relu_program();
  const Executor executor(std::move(p), kernels());
  for (int64_t rows : {2, 5}) {
    const Tensor a = randn({rows, 4});
    // w is a slice with a storage offset: views count from its first element.
    const Tensor w = randn({5, 4}).narrow(0, 1, 3);
    const std::vector<Tensor> out = executor.run(std::vector<Tensor>{a, w});
    expect_equal(out[0], relu(mm(a, w.t())));
  }
}

TEST(Executor, UnbackedSizeFromAnExternStepSizesALaterSlot) {
  // nonzero(x) has a data-dependent row count u0; a kernel copies it into a slot of 8*u0 bytes.
  Program p;
  p.num_inputs = 1;
  p.symbols = {S("s0"), S("u0")};
  p.symbol_sources = {input_size("s0", 0, 0),
                      {S("u0"), SymbolSource::From::ExternOutputSize, 0, 0}};
  p.buffers = {input_buffer("arg0", 0), extern_buffer("buf0", contiguous({S("u0"), I(1)}), kInt64),
               intermediate("buf1", 0, contiguous({S("u0"), I(1)}), kInt64)};
  p.slot_bytes = {sym::mul(I(8), S("u0"))};
  ExternStep nonzero_step;
  nonzero_step.call =
      "%0 : f32[s0] = placeholder(\"arg0\")\n"
      "%1 : i64[u0, 1] = nonzero(%0)\n"
      "return (%1)\n";
  nonzero_step.args = {0};
  nonzero_step.outputs = {1};
  p.steps = {nonzero_step, KernelStep{"copy_i64", {1, 2}}};
  p.outputs = {OutputDesc{2, contiguous({S("u0"), I(1)})}};
  const Executor executor(std::move(p), kernels());
  for (const Tensor& x :
       {tensor({0.0, 1.0, 0.0, 2.0, 3.0}), tensor({5.0, 0.0, 0.0}), tensor({0.0, 0.0})}) {
    const std::vector<Tensor> out = executor.run(std::vector<Tensor>{x});
    expect_equal(out[0], x.nonzero());
  }
}

// view(x, [2*s0]): the symbolic size in the op's constant list is evaluated from the program's
// symbols (a direct op call), or, when the program does not know the symbol, by the graph
// interpreter, which binds it from the placeholder's size.
TEST(Executor, ExternCallWithASymbolicConstant) {
  for (bool program_knows_s0 : {true, false}) {
    Program p;
    p.num_inputs = 1;
    if (program_knows_s0) {
      p.symbols = {S("s0")};
      p.symbol_sources = {input_size("s0", 0, 0)};
    }
    const sym::ExprPtr n = program_knows_s0 ? sym::mul(I(2), S("s0")) : I(6);
    p.buffers = {input_buffer("arg0", 0), extern_buffer("buf0", contiguous({n}))};
    ExternStep step;
    step.call =
        "%0 : f32[s0, 2] = placeholder(\"arg0\")\n"
        "%1 : f32[2*s0] = view(%0, [2*s0])\n"
        "return (%1)\n";
    step.args = {0};
    step.outputs = {1};
    p.steps = {step};
    p.outputs = {OutputDesc{1, contiguous({n})}};
    const Executor executor(std::move(p), nullptr);
    const Tensor x = randn({3, 2});
    const std::vector<Tensor> out = executor.run(std::vector<Tensor>{x});
    expect_equal(out[0], x.reshape({6}));
    EXPECT_TRUE(out[0].is_alias_of(x)) << program_knows_s0;
  }
}

TEST(Executor, OutputsAreViewsWithOffsetsFromTheBuffersFirstElement) {
  Program p = add_program();
  Layout transposed;  // buf0 seen as the transpose of a [2, 3] matrix
  transposed.sizes = {I(3), I(2)};
  transposed.strides = {I(1), I(3)};
  Layout middle;  // elements 1..2 of arg0
  middle.sizes = {I(2)};
  middle.strides = {I(1)};
  middle.offset = I(1);
  p.outputs = {OutputDesc{2, transposed}, OutputDesc{0, middle}};
  const Executor executor(std::move(p), kernels());
  const Tensor base = randn({9});
  const Tensor x = base.narrow(0, 3, 6), y = randn({6});
  const std::vector<Tensor> out = executor.run(std::vector<Tensor>{x, y});
  expect_equal(out[0], (x + y).view({2, 3}).t());
  EXPECT_EQ(out[0].strides()[0], 1);
  EXPECT_EQ(out[0].strides()[1], 3);
  expect_equal(out[1], x.narrow(0, 1, 2));
  EXPECT_TRUE(out[1].is_alias_of(base));
  EXPECT_EQ(out[1].storage_offset(), 4);
}

TEST(Executor, SymbolFromAnInputStride) {
  // out[i] = x[i * stride]: x is a column of a matrix, so its stride is the row length.
  Program p;
  p.num_inputs = 1;
  p.symbols = {S("s0"), S("s1")};
  p.symbol_sources = {input_size("s0", 0, 0), {S("s1"), SymbolSource::From::InputStride, 0, 0}};
  p.buffers = {input_buffer("arg0", 0), intermediate("buf0", 0, contiguous({S("s0")}))};
  p.slot_bytes = {sym::mul(I(4), S("s0"))};
  p.steps = {KernelStep{"gather_strided_f32", {0, 1}}};
  p.outputs = {OutputDesc{1, contiguous({S("s0")})}};
  const Executor executor(std::move(p), kernels());
  for (int64_t columns : {3, 5}) {
    const Tensor m = randn({4, columns});
    const Tensor column = m.select(1, 1);
    expect_equal(executor.run(std::vector<Tensor>{column})[0], column);
  }
}

TEST(Executor, RunsFromManyThreadsAtOnce) {
  const Executor executor(add_program(), kernels());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const int64_t n = 1 + (t * 50 + i) % 17;
        std::vector<float> xs(n), ys(n);
        for (int64_t k = 0; k < n; ++k) xs[k] = float(k + t), ys[k] = float(i);
        const Tensor x = arange(n, kFloat32) + t, y = full({n}, float(i));
        const std::vector<float> got = values(executor.run(std::vector<Tensor>{x, y})[0]);
        for (int64_t k = 0; k < n; ++k) failures += got[k] != xs[k] + ys[k];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

// Note [Step profile]: an Executor built while profiling is on times each step; the report
// names the program, the kernel or the extern op with its output, and counts the calls.
TEST(Executor, StepProfileTimesEveryStep) {
  set_step_profiling(true);
  const Executor profiled(mm_relu_program(), kernels());
  set_step_profiling(false);
  const Executor unprofiled(mm_relu_program(), kernels());
  reset_step_profile();
  const std::vector<Tensor> inputs{randn({3, 4}), randn({3, 4})};
  for (int i = 0; i < 3; ++i) profiled.run(inputs);
  unprofiled.run(inputs);
  const std::string report = step_profile_report();
  const std::string program = kernels()->hash().substr(0, 8);
  EXPECT_THAT(report, HasSubstr("3 calls"));
  EXPECT_THAT(report, HasSubstr(program + " mm -> f32[s0, s1]"));
  EXPECT_THAT(report, HasSubstr(program + " relu_2d_f32"));
  EXPECT_THAT(report, HasSubstr("generated kernels"));
  EXPECT_THAT(report, ::testing::Not(HasSubstr("4 calls")));
  reset_step_profile();
  EXPECT_EQ(step_profile_report(), "");
}

TEST(Executor, StepProfileSettingIsOneOrZero) {
  EXPECT_TRUE(step_profile_setting("1"));
  EXPECT_FALSE(step_profile_setting("0"));
  EXPECT_FALSE(step_profile_setting(nullptr));
  expect_error<ValueError>([] { step_profile_setting("yes"); }, {"KILN_PROFILE='yes'", "1", "0"});
}

TEST(Executor, BadInputsAreErrorsNamingTheProblem) {
  const Executor executor(add_program(), kernels());
  expect_error<ValueError>([&] { executor.run(std::vector<Tensor>{randn({3})}); },
                           {"takes 2 inputs, got 1"});
  expect_error<DTypeError>(
      [&] {
        executor.run(std::vector<Tensor>{randn({3}), randn({3}).to(kFloat64)});
      },
      {"input 1", "arg1", "float64", "float32"});
  expect_error<ShapeError>(
      [&] {
        executor.run(std::vector<Tensor>{randn({}), randn({3})});
      },
      {"s0", "input 0"});
}

TEST(Executor, ProgramsThatDoNotFitTheLibraryOrThemselvesAreRejected) {
  Program missing = add_program();
  std::get<KernelStep>(missing.steps[0]).name = "no_such_kernel";
  expect_error<ValueError>([&] { Executor(missing, kernels()); }, {"no_such_kernel"});

  Program other_library = add_program();
  other_library.source_hash = "0123abcd";
  expect_error<ValueError>([&] { Executor(other_library, kernels()); }, {"0123abcd"});

  Program bad_index = add_program();
  std::get<KernelStep>(bad_index.steps[0]).buffers[2] = 7;
  expect_error<ValueError>([&] { Executor(bad_index, kernels()); },
                           {"step 0", "buffer 7", "3 buffers"});

  // A slot too small for its buffer is caught before a kernel writes past it.
  Program small_slot = add_program();
  small_slot.slot_bytes[0] = sym::sub(sym::mul(I(4), S("s0")), I(4));
  const Executor executor(small_slot, kernels());
  expect_error<ValueError>(
      [&] {
        executor.run(std::vector<Tensor>{randn({4}), randn({4})});
      },
      {"buf0", "needs 16 bytes", "holds 12"});

  Program bad_graph;
  bad_graph.num_inputs = 1;
  bad_graph.buffers = {input_buffer("arg0", 0), extern_buffer("buf0", contiguous({I(2)}))};
  ExternStep garbage;
  garbage.call = "%0 : f32[2] = placeholder(\"arg0\")\n%1 : f32[2] = no_such_op(%0)\nreturn (%1)\n";
  garbage.args = {0};
  garbage.outputs = {1};
  bad_graph.steps = {garbage};
  expect_error<ValueError>([&] { Executor(bad_graph, nullptr); }, {"step 0", "does not parse"});
  std::get<ExternStep>(bad_graph.steps[0]).call =
      "%0 : f32[2] = placeholder(\"arg0\")\n%1 : f32[2] = relu(%0)\n%2 : f32[2] = relu(%1)\n"
      "return (%2)\n";
  expect_error<ValueError>([&] { Executor(bad_graph, nullptr); }, {"step 0", "2 calls"});

  Program no_library = add_program();
  expect_error<ValueError>([&] { Executor(no_library, nullptr); },
                           {"add_f32", "no kernel library"});
}

TEST(Executor, ExternOutputThatDisagreesWithItsDeclaredLayoutIsAnError) {
  Program p;
  p.num_inputs = 2;
  p.symbols = {};
  p.symbol_sources = {};
  p.buffers = {input_buffer("arg0", 0), input_buffer("arg1", 1),
               extern_buffer("buf0", contiguous({I(2), I(5)}))};  // mm gives [2, 3]
  ExternStep step;
  step.call =
      "%0 : f32[2, 4] = placeholder(\"arg0\")\n"
      "%1 : f32[4, 3] = placeholder(\"arg1\")\n"
      "%2 : f32[2, 3] = mm(%0, %1)\n"
      "return (%2)\n";
  step.args = {0, 1};
  step.outputs = {2};
  p.steps = {step};
  p.outputs = {OutputDesc{2, contiguous({I(2), I(5)})}};
  const Executor executor(std::move(p), nullptr);  // no kernels: no library needed
  expect_error<ValueError>(
      [&] {
        executor.run(std::vector<Tensor>{randn({2, 4}), randn({4, 3})});
      },
      {"buf0", "sizes [2, 3]", "sizes [2, 5]"});
}

}  // namespace
}  // namespace kiln::runtime
