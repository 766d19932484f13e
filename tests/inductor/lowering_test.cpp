// The loop IR, the scheduler's fusion decisions and the generated source, from graphs written as
// text (src/graph's format), without compiling anything.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "src/aot/functionalize.h"
#include "src/codegen/cpp/codegen.h"
#include "src/graph/graph.h"
#include "src/lower/graph_lowering.h"
#include "src/lower/handlers/dependency_handler.h"
#include "src/lower/handlers/value_range_handler.h"
#include "src/lower/index_simplify.h"
#include "src/sched/scheduler.h"

namespace kiln {
namespace {

using lower::GraphLowering;

struct Lowered {
  graph::Graph graph;
  std::unique_ptr<GraphLowering> lowering;
  sched::Schedule schedule;
  codegen::GeneratedCode code;
};

Lowered lower_text(const std::string& text, bool vectorize = true) {
  Lowered l{graph::parse_graph(text), nullptr, {}, {}};
  l.lowering = std::make_unique<GraphLowering>(l.graph);
  l.lowering->run();
  l.schedule = sched::schedule(*l.lowering);
  codegen::CodegenOptions o;
  o.vectorize = vectorize;
  l.code = codegen::generate(*l.lowering, l.schedule, o);
  return l;
}

int count_kernels(const Lowered& l) {
  int n = 0;
  for (const auto& s : l.schedule.steps) n += std::holds_alternative<sched::Kernel>(s);
  return n;
}

int count_computed(const Lowered& l) {
  int n = 0;
  for (const auto& b : l.lowering->buffers()) n += b->kind() == lower::Buffer::Kind::Computed;
  return n;
}

size_t occurrences(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(Lowering, PointwiseChainIsOneBufferAndOneVectorKernel) {
  // gelu(a*b+c)*d written with primitives: one loop body, no intermediate buffer.
  Lowered l = lower_text(R"(
%0 : f32[64, 128] = placeholder("a")
%1 : f32[64, 128] = placeholder("b")
%2 : f32[64, 128] = placeholder("c")
%3 : f32[64, 128] = placeholder("d")
%4 : f32[64, 128] = mul(%0, %1)
%5 : f32[64, 128] = add(%4, %2)
%6 : f32[64, 128] = erf(%5)
%7 : f32[64, 128] = mul(%5, %6)
%8 : f32[64, 128] = mul(%7, %3)
return (%8)
)");
  EXPECT_EQ(count_computed(l), 1);
  EXPECT_EQ(count_kernels(l), 1);
  EXPECT_EQ(occurrences(l.code.source, "extern \"C\" void kernel"), 1u);
  EXPECT_NE(l.code.source.find("kiln_loadu(arg0"), std::string::npos) << l.code.source;
  EXPECT_NE(l.code.kernels.find("kiln_erf("), std::string::npos) << l.code.kernels;
  EXPECT_NE(l.code.source.find("#pragma omp parallel for"), std::string::npos);
  // The scalar-only build has no vector code at all.
  Lowered s = lower_text(graph::to_string(l.graph), false);
  EXPECT_EQ(s.code.source.find("kf8"), std::string::npos);
  EXPECT_EQ(s.code.source.find("kiln_loadu"), std::string::npos);
}

// Note [Computed pieces of a cat]: the cat's where() chain evaluates every piece at every index,
// so a piece with an expensive op gets its own buffer, computed once; a cheap one stays inline.
TEST(Lowering, ACatRealizesItsExpensivePiecesOnly) {
  Lowered l = lower_text(R"(
%0 : f32[8, 4] = placeholder("a")
%1 : f32[8, 4] = placeholder("b")
%2 : f32[8, 4] = tanh(%0)
%3 : f32[8, 4] = add(%1, %1)
%4 : f32[8, 8] = cat([%2, %3], 1)
return (%4)
)");
  EXPECT_EQ(count_computed(l), 2);  // tanh(a) and the cat; add(b, b) is inlined into the cat
  Lowered cheap = lower_text(R"(
%0 : f32[8, 4] = placeholder("a")
%1 : f32[8, 4] = placeholder("b")
%2 : f32[8, 4] = mul(%0, %0)
%3 : f32[8, 4] = add(%1, %1)
%4 : f32[8, 8] = cat([%2, %3], 1)
return (%4)
)");
  EXPECT_EQ(count_computed(cheap), 1);
}

// End to end: a value two outputs of one kernel read is computed once per element.
// Note [Common statements of a fused body]
TEST(Lowering, AKernelComputesAValueItsOutputsShareOnce) {
  Lowered l = lower_text(R"(
%0 : f32[16, 64] = placeholder("a")
%1 : f32[16, 64] = sigmoid(%0)
%2 : f32[16, 64] = mul(%1, %1)
%3 : f32[16, 64] = add(%1, %0)
return (%2, %3)
)");
  ASSERT_EQ(count_kernels(l), 1) << l.code.kernels;
  // One vector body and one masked tail, each with one sigmoid.
  EXPECT_EQ(occurrences(l.code.kernels, "kiln_sigmoid("), 2u) << l.code.kernels;
}

// Note [Streaming stores in generated code]: a float32 output of 16 MiB or more that the kernel
// does not read back gets non-temporal vector stores and an sfence per work item; a smaller one,
// or one read again in the same kernel, normal stores; with a symbolic size the test is made
// when the kernel starts.
TEST(Lowering, LargeOutputsAreStoredWithNonTemporalStores) {
  const std::string big = R"(
%0 : f32[4096, 1024] = placeholder("a")
%1 : f32[4096, 1024] = exp(%0)
return (%1)
)";
  Lowered l = lower_text(big);
  EXPECT_EQ(occurrences(l.code.kernels, "kiln_stream_if(true, buf"), 1u) << l.code.kernels;
  EXPECT_EQ(occurrences(l.code.kernels, "kiln_sfence();"), 1u);
  Lowered small = lower_text(R"(
%0 : f32[64, 1024] = placeholder("a")
%1 : f32[64, 1024] = exp(%0)
return (%1)
)");
  EXPECT_EQ(small.code.kernels.find("kiln_stream_if"), std::string::npos) << small.code.kernels;
  EXPECT_EQ(small.code.kernels.find("kiln_sfence"), std::string::npos);
  Lowered symbolic = lower_text(R"(
%0 : f32[s0, 1024] = placeholder("a")
%1 : f32[s0, 1024] = exp(%0)
return (%1)
)");
  EXPECT_NE(symbolic.code.kernels.find("const bool kiln_stream_buf0 = "), std::string::npos)
      << symbolic.code.kernels;
  EXPECT_NE(symbolic.code.kernels.find("kiln_stream_if(kiln_stream_buf0, buf0"), std::string::npos);
  // The scalar-only build streams nothing.
  Lowered scalar = lower_text(big, false);
  EXPECT_EQ(scalar.code.kernels.find("kiln_stream_if"), std::string::npos);
}

// A read of every other element (a step-2 slice, a pooling window) is two vector loads and a
// shuffle (kiln_load_even), not an eight-load gather.
TEST(Lowering, StrideTwoLoadsAreTwoVectorLoadsAndAShuffle) {
  Lowered l = lower_text(R"(
%0 : f32[16, 64] = placeholder("a")
%1 : f32[16, 32]{64, 2} = slice(%0, 1, 0, 64, 2)
%2 : f32[16, 32] = neg(%1)
return (%2)
)");
  EXPECT_NE(l.code.source.find("kiln_load_even(arg0"), std::string::npos) << l.code.source;
  EXPECT_EQ(l.code.source.find("kiln_gather(arg0"), std::string::npos) << l.code.source;
}

// Note [Max pooling as a pointwise value]: relu and max_pool2d are one kernel with no extern
// call, and its 4-wide rows are one masked vector iteration (Note [Masked vector tails]).
TEST(Lowering, MaxPoolFusesWithItsProducer) {
  Lowered l = lower_text(R"(
%0 : f32[2, 4, 8, 8] = placeholder("a")
%1 : f32[2, 4, 8, 8] = relu(%0)
%2 : f32[2, 4, 4, 4] = max_pool2d(%1, [2, 2], [2, 2], [0, 0], [1, 1], False)
return (%2)
)");
  EXPECT_EQ(count_computed(l), 1) << l.code.loop_ir;
  EXPECT_EQ(l.code.loop_ir.find("ExternKernel"), std::string::npos) << l.code.loop_ir;
  EXPECT_EQ(occurrences(l.code.source, "extern \"C\" void kernel"), 1u);
  EXPECT_NE(l.code.source.find("kiln_gather_n(arg0"), std::string::npos) << l.code.source;
}

// Note [Max pooling gradient as a pointwise value]: over tiling windows, max_pool2d_backward is
// two kernels and no extern call: the windows' argmax taps, with the relu it rescans (stride-2
// vector loads of the input), then the gradient with its consumer (pair loads of the winners and
// of the pooled gradient); over overlapping windows or in ceil_mode it stays the extern kernel.
TEST(Lowering, MaxPoolBackwardOverTilingWindowsIsPointwise) {
  auto lowered = [](const std::string& window) {
    return lower_text(fmt::format(R"(
%0 : f32[2, 4, 4, 4] = placeholder("grad")
%1 : f32[2, 4, 8, 8] = placeholder("a")
%2 : f32[2, 4, 8, 8] = relu(%1)
%3 : f32[2, 4, 8, 8] = max_pool2d_backward(%0, %2, {})
%4 : f32[2, 4, 8, 8] = mul(%3, %1)
return (%4)
)",
                                  window));
  };
  Lowered tiled = lowered("[2, 2], [2, 2], [0, 0], [1, 1], False");
  EXPECT_EQ(tiled.code.loop_ir.find("ExternKernel"), std::string::npos) << tiled.code.loop_ir;
  EXPECT_EQ(count_kernels(tiled), 2) << tiled.code.loop_ir;
  EXPECT_NE(tiled.code.loop_ir.find("kernel0: [buf0] over (2, 4, 4, 4)"), std::string::npos)
      << tiled.code.loop_ir;
  EXPECT_NE(tiled.code.loop_ir.find("kernel1: [buf1, buf2] over (2, 4, 8, 8)"), std::string::npos)
      << tiled.code.loop_ir;
  EXPECT_NE(tiled.code.source.find("kiln_load_even(arg1"), std::string::npos) << tiled.code.source;
  EXPECT_NE(tiled.code.source.find("kiln_load_pairs(arg0"), std::string::npos) << tiled.code.source;
  EXPECT_NE(tiled.code.source.find("kiln_load_pairs(buf0"), std::string::npos) << tiled.code.source;
  Lowered overlapping = lowered("[3, 3], [1, 1], [1, 1], [1, 1], False");
  EXPECT_NE(overlapping.code.loop_ir.find("ExternKernel max_pool2d_backward"), std::string::npos)
      << overlapping.code.loop_ir;
  Lowered ceil_mode = lowered("[2, 2], [2, 2], [0, 0], [1, 1], True");
  EXPECT_NE(ceil_mode.code.loop_ir.find("ExternKernel max_pool2d_backward"), std::string::npos)
      << ceil_mode.code.loop_ir;
}

// Note [Lane offsets]: each element repeated twice along the last dim (expand and reshape: an
// index v // 2) is a vector load of pairs, with a masked gather for the tail; repeated three
// times (v // 3, no constant offsets from lane 0) the loop stays scalar.
TEST(Lowering, LoadsAtConstantLaneOffsetsAreVectorLoads) {
  auto repeated = [](int times) {
    return lower_text(fmt::format(R"(
%0 : f32[3, 10] = placeholder("a")
%1 : f32[3, 10, 1] = unsqueeze(%0, 2)
%2 : f32[3, 10, {0}]{{10, 1, 0}} = expand(%1, [3, 10, {0}])
%3 : f32[3, {1}] = reshape(%2, [3, {1}])
%4 : f32[3, {1}] = neg(%3)
return (%4)
)",
                                  times, 10 * times));
  };
  Lowered pairs = repeated(2);
  EXPECT_NE(pairs.code.source.find("kiln_load_pairs(arg0"), std::string::npos) << pairs.code.source;
  EXPECT_NE(pairs.code.source.find("kiln_gather_offsets_n(arg0"), std::string::npos)
      << pairs.code.source;
  Lowered triples = repeated(3);
  EXPECT_EQ(triples.code.source.find("kf8 n0_t"), std::string::npos) << triples.code.source;
}

TEST(Lowering, ViewsNeverAllocate) {
  Lowered l = lower_text(R"(
%0 : f32[8, 16] = placeholder("a")
%1 : f32[16, 8]{1, 16} = transpose(%0, 0, 1)
%2 : f32[4, 8] = slice(%1, 0, 2, 10, 2)
%3 : f32[4, 8] = neg(%2)
return (%3)
)");
  EXPECT_EQ(count_computed(l), 1);
  // neg reads arg0 at a remapped index: row 2+2*i0 of the transpose is column 2+2*i0 of a.
  const auto& b = *l.lowering->buffers().back();
  ASSERT_EQ(b.kind(), lower::Buffer::Kind::Computed);
  EXPECT_NE(l.code.source.find("(arg0 + "), std::string::npos) << l.code.source;
  EXPECT_NE(l.code.loop_ir.find("buf"), std::string::npos);
}

TEST(Lowering, GraphOutputThatIsAViewIsAStridedViewOfItsBuffer) {
  Lowered l = lower_text(R"(
%0 : f32[8, 16] = placeholder("a")
%1 : f32[16, 8]{1, 16} = transpose(%0, 0, 1)
return (%1)
)");
  EXPECT_EQ(count_computed(l), 0);
  ASSERT_EQ(l.code.program.outputs.size(), 1u);
  const runtime::Layout& v = l.code.program.outputs[0].view;
  EXPECT_EQ(v.strides[0], sym::integer(1));
  EXPECT_EQ(v.strides[1], sym::integer(16));
}

TEST(Lowering, SoftmaxIsOneKernelWithOneOuterLoop) {
  Lowered l = lower_text(R"(
%0 : f32[32, 100] = placeholder("x")
%1 : f32[32, 1] = amax(%0, [1], True)
%2 : f32[32, 100] = sub(%0, %1)
%3 : f32[32, 100] = exp(%2)
%4 : f32[32, 1] = sum(%3, [1], True, None)
%5 : f32[32, 1] = reciprocal(%4)
%6 : f32[32, 100] = mul(%3, %5)
return (%6)
)");
  EXPECT_EQ(count_kernels(l), 1) << l.code.loop_ir;
  // Four nodes share the row loop: max, exp(x - max) into a row on the stack (Note [Local
  // buffers]), the sum of that row and the normalize reading it; max and sum are vectorized, and
  // exp is computed once per element.
  EXPECT_EQ(occurrences(l.code.kernels, "kf8 n0_vacc0 ="), 1u) << l.code.kernels;
  EXPECT_EQ(occurrences(l.code.kernels, "kf8 n2_vacc0 ="), 1u);
  EXPECT_EQ(occurrences(l.code.kernels, "kiln_exp("), 1u);
  EXPECT_EQ(occurrences(l.code.kernels, "float buf1[100]"), 1u);
  EXPECT_EQ(occurrences(l.code.kernels, "kiln_buffers[3]"), 1u);  // x, max, sum, out: no buf1
  EXPECT_NE(l.code.loop_ir.find("(kernel-local)"), std::string::npos);
  // The schedule made that decision (codegen only prints it), and the schedule's printout says so.
  EXPECT_EQ(l.schedule.local_buffers, (std::map<std::string, int64_t>{{"buf1", 100}}));
  EXPECT_NE(sched::to_string(l.schedule).find("local buf1 [100]"), std::string::npos)
      << sched::to_string(l.schedule);
  EXPECT_EQ(l.schedule.memory.slot_of.count("buf1"), 0u);
  // exp(x - max) is summed in the loop that computes it (Note [A row's producer shares its
  // reductions' loop]): no loop starts between the exp and the sum's accumulation.
  const size_t exp_at = l.code.kernels.find("kiln_exp(");
  const size_t sum_at = l.code.kernels.find("n2_vacc0 = n2_vacc0 + ", exp_at);
  ASSERT_NE(sum_at, std::string::npos) << l.code.kernels;
  EXPECT_EQ(l.code.kernels.substr(exp_at, sum_at - exp_at).find("for ("), std::string::npos)
      << l.code.kernels;
  // The normalize multiplies by the sum's reciprocal, as the eager kernel does (Note [One value
  // per expression]): computed once per row before the vector loop, and in the scalar tail.
  EXPECT_EQ(occurrences(l.code.kernels, "kiln::prim::reciprocal<float>("), 2u) << l.code.kernels;
  EXPECT_EQ(occurrences(l.code.kernels, " / "), 0u) << l.code.kernels;
}

// A row of symbolic or large size could not live on the stack, so exp(x - max) is not realized
// for it: the sum and the normalize each compute it (Note [Realization]).
TEST(Lowering, SoftmaxOverASymbolicOrLargeRowRecomputesExp) {
  for (const std::string row : {"s0", "20000"}) {
    SCOPED_TRACE(row);
    Lowered l = lower_text(fmt::format(R"(
%0 : f32[32, {0}] = placeholder("x")
%1 : f32[32, 1] = amax(%0, [1], True)
%2 : f32[32, {0}] = sub(%0, %1)
%3 : f32[32, {0}] = exp(%2)
%4 : f32[32, 1] = sum(%3, [1], True, None)
%5 : f32[32, {0}] = div(%3, %4)
return (%5)
)",
                                       row));
    EXPECT_EQ(count_computed(l), 3) << l.code.loop_ir;
    EXPECT_EQ(count_kernels(l), 1);
    EXPECT_EQ(occurrences(l.code.kernels, "kiln_exp("), 2u) << l.code.kernels;
  }
}

// A realized value that another step reads, or that is a graph output, keeps its memory.
TEST(Lowering, ARowReadOutsideItsKernelIsNotLocal) {
  Lowered l = lower_text(R"(
%0 : f32[32, 100] = placeholder("x")
%1 : f32[32, 1] = amax(%0, [1], True)
%2 : f32[32, 100] = sub(%0, %1)
%3 : f32[32, 100] = exp(%2)
%4 : f32[32, 1] = sum(%3, [1], True, None)
%5 : f32[32, 100] = div(%3, %4)
return (%5, %3)
)");
  EXPECT_EQ(l.code.loop_ir.find("(kernel-local)"), std::string::npos) << l.code.loop_ir;
  EXPECT_EQ(occurrences(l.code.kernels, "kiln_exp("), 1u) << l.code.kernels;
  // The same row reduced over the other dim cannot live in one outer iteration either.
  Lowered t = lower_text(R"(
%0 : f32[32, 100] = placeholder("x")
%1 : f32[32, 100] = exp(%0)
%2 : f32[100] = sum(%1, [0], False, None)
%3 : f32[32, 100] = mul(%1, %0)
return (%2, %3)
)");
  EXPECT_EQ(t.code.loop_ir.find("(kernel-local)"), std::string::npos) << t.code.loop_ir;
}

TEST(Lowering, ReductionOverALeadingDimStillFusesItsConsumer) {
  // mean over dim 0 then a broadcast subtraction reads the mean at another index: two kernels.
  Lowered l = lower_text(R"(
%0 : f32[16, 10] = placeholder("x")
%1 : f32[1, 10] = sum(%0, [0], True, None)
%2 : f32[16, 10] = sub(%0, %1)
return (%2)
)");
  EXPECT_EQ(count_kernels(l), 2) << l.code.loop_ir;
  bool logged = false;
  for (const std::string& s : l.schedule.fusion_log)
    logged |= s.find("not fused") != std::string::npos;
  EXPECT_TRUE(logged);
}

TEST(Lowering, MatmulIsAnExternCallWithAFusedEpilogue) {
  Lowered l = lower_text(R"(
%0 : f32[16, 32] = placeholder("x")
%1 : f32[32, 8] = placeholder("w")
%2 : f32[8] = placeholder("b")
%3 : f32[16, 8] = mm(%0, %1)
%4 : f32[16, 8] = add(%3, %2)
%5 : f32[16, 8] = relu(%4)
return (%5)
)");
  ASSERT_EQ(l.schedule.steps.size(), 2u);
  EXPECT_TRUE(std::holds_alternative<sched::ExternCall>(l.schedule.steps[0]));
  EXPECT_TRUE(std::holds_alternative<sched::Kernel>(l.schedule.steps[1]));
  EXPECT_EQ(count_computed(l), 1);  // bias add and relu in one body
  ASSERT_TRUE(std::holds_alternative<runtime::ExternStep>(l.code.program.steps[0]));
  EXPECT_NE(std::get<runtime::ExternStep>(l.code.program.steps[0]).call.find("mm("),
            std::string::npos);
}

TEST(Lowering, SymbolicSizesAreKernelArguments) {
  Lowered l = lower_text(R"(
%0 : f32[s0, s1] = placeholder("x")
%1 : f32[s0, s1] = sigmoid(%0)
%2 : f32[s0] = sum(%1, [1], False, None)
return (%2)
)");
  ASSERT_EQ(l.code.program.symbols.size(), 2u);
  EXPECT_EQ(l.code.program.symbol_sources[0].dim, 0);
  EXPECT_EQ(l.code.program.symbol_sources[1].dim, 1);
  EXPECT_NE(l.code.source.find("const int64_t s0 = kiln_symbols[0];"), std::string::npos);
  EXPECT_NE(l.code.source.find("const int64_t s1 = kiln_symbols[1];"), std::string::npos);
}

TEST(Lowering, InPlaceOpOnAnInputStoresIntoTheInput) {
  Lowered l = lower_text(R"(
%0 : f32[4, 5] = placeholder("x")
%1 : f32[4, 5] = placeholder("y")
%2 : f32[4, 5] = add_(%0, %1)
return (%2)
)");
  // No buffer of its own: the kernel writes arg0 (16 elements as vectors, 4 in the masked tail).
  EXPECT_NE(l.code.source.find("kiln_storeu(arg0 + "), std::string::npos) << l.code.source;
  EXPECT_NE(l.code.source.find("kiln_storeu_n(arg0 + "), std::string::npos) << l.code.source;
  EXPECT_NE(l.code.loop_ir.find("stores into arg0"), std::string::npos) << l.code.loop_ir;
  for (const runtime::BufferDesc& d : l.code.program.buffers)
    EXPECT_NE(d.kind, runtime::BufferDesc::Kind::Intermediate);
  ASSERT_EQ(l.code.program.outputs.size(), 1u);
  EXPECT_EQ(l.code.program.buffers[l.code.program.outputs[0].buffer].name, "arg0");
}

// Note [Copy-back inside the graph]: SGD's momentum update, a chain of in-place ops on two
// inputs, is one pass in which each mutated input is stored once. (Stored op by op, every
// intermediate went through memory and two kernels.)
TEST(Lowering, AChainOfInPlaceUpdatesIsOnePassWithOneStorePerInput) {
  const graph::Graph chain = graph::parse_graph(R"(
%0 : f32[64, 100] = placeholder("param")
%1 : f32[64, 100] = placeholder("grad")
%2 : f32[64, 100] = placeholder("buf")
%3 : f64[] = placeholder("lr")
%4 : f64[] = placeholder("momentum")
%5 : f32[64, 100] = mul_(%2, %4)
%6 : f32[64, 100] = add_(%5, %1, alpha=1)
%7 : f32[64, 100] = mul(%6, %3)
%8 : f32[64, 100] = sub_(%0, %7, alpha=1)
return ()
)");
  Lowered l = lower_text(graph::to_string(aot::functionalize_with_copy_back(chain)));
  EXPECT_EQ(count_kernels(l), 1) << l.code.loop_ir;
  EXPECT_NE(l.code.loop_ir.find("stores into arg0"), std::string::npos) << l.code.loop_ir;
  EXPECT_NE(l.code.loop_ir.find("stores into arg2"), std::string::npos) << l.code.loop_ir;
  // The new momentum, read by both stores, is the one value with memory of its own (written
  // and read back in the same chunk of the same loop).
  int intermediates = 0;
  for (const runtime::BufferDesc& d : l.code.program.buffers)
    intermediates += d.kind == runtime::BufferDesc::Kind::Intermediate;
  EXPECT_EQ(intermediates, 1) << l.code.loop_ir;
}

TEST(Lowering, IntermediateBuffersShareMemoryWhenLifetimesDoNotOverlap) {
  // Four reductions in a row, each over the previous one's result: buffers die one after another.
  Lowered l = lower_text(R"(
%0 : f32[64, 32, 16] = placeholder("x")
%1 : f32[32, 32] = placeholder("w")
%2 : f32[64, 32] = sum(%0, [2], False, None)
%3 : f32[64, 32] = exp(%2)
%4 : f32[64, 32] = mm(%3, %1)
%5 : f32[64] = sum(%4, [1], False, None)
%6 : f32[64] = exp(%5)
%7 : f32[64] = amax(%4, [1], False)
%8 : f32[64] = add(%6, %7)
return (%8)
)");
  std::set<int> slots;
  int intermediates = 0;
  for (const runtime::BufferDesc& d : l.code.program.buffers) {
    if (d.kind != runtime::BufferDesc::Kind::Intermediate) continue;
    ++intermediates;
    slots.insert(d.slot);
  }
  EXPECT_GE(intermediates, 2);
  EXPECT_EQ(l.code.program.slot_bytes.size(), slots.size());
  // The schedule decided the slots (Note [Buffer reuse] in src/sched/memory_plan.cpp); the
  // program carries exactly its plan, and at least two buffers share a slot.
  EXPECT_EQ(l.schedule.memory.slot_bytes.size(), l.code.program.slot_bytes.size());
  for (const runtime::BufferDesc& d : l.code.program.buffers) {
    if (d.kind == runtime::BufferDesc::Kind::Intermediate) {
      EXPECT_EQ(l.schedule.memory.slot_of.at(d.name), d.slot) << d.name;
    }
  }
  EXPECT_LT(slots.size(), static_cast<size_t>(intermediates)) << sched::to_string(l.schedule);
}

// Note [Casts the value ranges prove]: arange(0.5, 8.5) is never NaN and always in int32's range,
// so its conversion is a plain C++ cast; a loaded float may be NaN or huge, so its conversion
// keeps Kiln's total semantics (kiln_f2i). Both compute the eager values.
TEST(Lowering, ValueRangesDecideWhichFloatToIntCastsNeedKilnSemantics) {
  Lowered proven = lower_text(R"(
%0 : i32[8] = placeholder("x")
%1 : f32[8] = arange(0.5, 8.5, 1.0, float32, cpu)
%2 : i32[8] = _to_copy(%1, int32)
%3 : i32[8] = add(%2, %0)
return (%3)
)");
  EXPECT_EQ(proven.code.kernels.find("kiln_f2i"), std::string::npos) << proven.code.kernels;
  EXPECT_NE(proven.code.kernels.find("(int32_t)("), std::string::npos) << proven.code.kernels;
  Lowered unproven = lower_text(R"(
%0 : f32[8] = placeholder("x")
%1 : i32[8] = _to_copy(%0, int32)
return (%1)
)");
  EXPECT_NE(unproven.code.kernels.find("kiln_f2i<int32_t>"), std::string::npos)
      << unproven.code.kernels;
  // A range past int8's: the wrap must stay Kiln's (kiln_f2i), not the UB of a C++ conversion.
  Lowered wide = lower_text(R"(
%0 : i8[8] = placeholder("x")
%1 : f32[8] = arange(100.5, 900.5, 100.0, float32, cpu)
%2 : i8[8] = _to_copy(%1, int8)
%3 : i8[8] = add(%2, %0)
return (%3)
)");
  EXPECT_NE(wide.code.kernels.find("kiln_f2i<int8_t>"), std::string::npos) << wide.code.kernels;
}

TEST(LowerValueRange, FloatToIntCastsInRange) {
  using lower::ValueInterval;
  EXPECT_TRUE(
      lower::float_cast_in_range(ValueInterval::between_float(-128.9, 127.9, kFloat32), kInt8));
  EXPECT_FALSE(
      lower::float_cast_in_range(ValueInterval::between_float(-129.0, 0, kFloat32), kInt8));
  EXPECT_FALSE(
      lower::float_cast_in_range(ValueInterval::between_float(0, 1, kFloat32, true), kInt8));
  EXPECT_TRUE(
      lower::float_cast_in_range(ValueInterval::between_float(-0.9, 1e19, kFloat64), kUInt64));
  EXPECT_FALSE(
      lower::float_cast_in_range(ValueInterval::between_float(-1.0, 1, kFloat64), kUInt64));
  EXPECT_FALSE(
      lower::float_cast_in_range(ValueInterval::between_float(0, 9.3e18, kFloat64), kInt64));
  EXPECT_FALSE(lower::float_cast_in_range(ValueInterval::between_float(0, 1, kFloat32), kBool));
}

TEST(IndexSimplify, ReshapeRoundTripsToTheFlatIndex) {
  const auto v = lower::loop_vars('i', 2);
  lower::VarRanges r{{v[0], sym::integer(6)}, {v[1], sym::integer(1024)}};
  // (i0*1024 + i1) flattened and unflattened over (6, 1024) and flattened again.
  sym::ExprPtr flat = sym::add(sym::mul(v[0], sym::integer(1024)), v[1]);
  sym::ExprPtr row = sym::floordiv(flat, sym::integer(1024));
  sym::ExprPtr col = sym::mod(flat, sym::integer(1024));
  sym::ExprPtr back = sym::add(sym::mul(row, sym::integer(1024)), col);
  EXPECT_EQ(lower::simplify_index(back, r), flat);
  EXPECT_EQ(lower::simplify_index(col, r), v[1]);
  EXPECT_EQ(*lower::linear_coefficient(flat, v[0]), sym::integer(1024));
  EXPECT_FALSE(lower::linear_coefficient(sym::floordiv(v[1], sym::integer(2)), v[1]).has_value());
}

// Note [Dividing a sum by a multiple of its stride]: a reshape of a transposed (2048, 1024) view,
// as a bias gradient reads it, is the flat index again.
TEST(IndexSimplify, DivisionBySomeMultipleOfTheStrideDropsTheSmallPart) {
  const auto v = lower::loop_vars('i', 2);
  lower::VarRanges r{{v[0], sym::integer(1024)}, {v[1], sym::integer(2048)}};
  sym::ExprPtr flat = sym::add(v[0], sym::mul(sym::integer(1024), v[1]));
  sym::ExprPtr index = sym::add(
      sym::add(v[0], sym::mul(sym::integer(131072), sym::floordiv(flat, sym::integer(131072)))),
      sym::mul(sym::integer(1024), sym::mod(v[1], sym::integer(128))));
  EXPECT_EQ(lower::simplify_index(index, r), flat)
      << sym::to_string(lower::simplify_index(index, r));
  EXPECT_EQ(lower::simplify_index(sym::floordiv(flat, sym::integer(131072)), r),
            sym::floordiv(v[1], sym::integer(128)));
  EXPECT_EQ(lower::simplify_index(sym::mod(flat, sym::integer(131072)), r),
            sym::add(v[0], sym::mul(sym::integer(1024), sym::mod(v[1], sym::integer(128)))));
  // The small part may reach the stride: no rewrite (i0 < 2048 carries into the quotient).
  lower::VarRanges wide{{v[0], sym::integer(2048)}, {v[1], sym::integer(2048)}};
  sym::ExprPtr q = sym::floordiv(flat, sym::integer(131072));
  EXPECT_EQ(lower::simplify_index(q, wide), q);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// Note [Merging loops] for reduction loops: batch-norm statistics over (N, H, W) of an NCHW
// tensor walk H*W contiguous elements as one loop.
TEST(Lowering, ContiguousReductionLoopsMerge) {
  Lowered l = lower_text(R"(
%0 : f32[4, 3, 5, 7] = placeholder("a")
%1 : f32[3] = sum(%0, [0, 2, 3], False, None)
return (%1)
)");
  EXPECT_NE(l.code.source.find("q1 < 35LL"), std::string::npos) << l.code.source;
  EXPECT_EQ(l.code.source.find("r2 < 7LL"), std::string::npos) << l.code.source;
}

// Note [Reductions across lanes]: a sum over the rows of (rows, cols) runs 8 output columns per
// vector, with unit-stride loads and no gather.
TEST(Lowering, ColumnSumsAccumulateAcrossLanes) {
  Lowered l = lower_text(R"(
%0 : f32[64, 100] = placeholder("a")
%1 : f32[100] = sum(%0, [0], False, None)
return (%1)
)");
  EXPECT_NE(l.code.kernels.find("kiln_block"), std::string::npos) << l.code.kernels;
  EXPECT_EQ(l.code.kernels.find("kiln_gather"), std::string::npos) << l.code.kernels;
  EXPECT_EQ(l.code.kernels.find("kiln_hsum"), std::string::npos) << l.code.kernels;
}

// Note [Lane blocks]: wide outputs accumulate several vectors of lanes per pass over the rows,
// shared among the kernel's nodes; the last partial block runs vectors, then scalars.
TEST(Lowering, WideColumnSumsAccumulateBlocksOfVectors) {
  Lowered one = lower_text(R"(
%0 : f32[32, 1024] = placeholder("a")
%1 : f32[1024] = sum(%0, [0], False, None)
return (%1)
)");
  EXPECT_NE(one.code.kernels.find("kiln_block * 64"), std::string::npos) << one.code.kernels;
  EXPECT_NE(one.code.kernels.find("kiln_lane7"), std::string::npos) << one.code.kernels;
  Lowered two = lower_text(R"(
%0 : f32[32, 1024] = placeholder("a")
%1 : f32[32, 1024] = placeholder("b")
%2 : f32[1024] = sum(%0, [0], False, None)
%3 : f32[32, 1024] = mul(%0, %1)
%4 : f32[1024] = sum(%3, [0], False, None)
return (%2, %4)
)");
  EXPECT_EQ(count_kernels(two), 1) << two.code.kernels;
  EXPECT_NE(two.code.kernels.find("kiln_lane3"), std::string::npos) << two.code.kernels;
  EXPECT_EQ(two.code.kernels.find("kiln_lane4"), std::string::npos) << two.code.kernels;
  // 100 columns make one vector per block: 12 blocks of 8 lanes and a scalar tail.
  Lowered narrow = lower_text(R"(
%0 : f32[64, 100] = placeholder("a")
%1 : f32[100] = sum(%0, [0], False, None)
return (%1)
)");
  EXPECT_EQ(narrow.code.kernels.find("kiln_lane1"), std::string::npos) << narrow.code.kernels;
}

// Note [Realization]: a graph output that another node also reads is stored where it is
// computed, and the reduction reads it: the add's inputs are loaded once, not twice.
TEST(Lowering, AnOutputReadByOtherNodesIsComputedOnce) {
  Lowered l = lower_text(R"(
%0 : f32[16, 256] = placeholder("a")
%1 : f32[16, 256] = placeholder("b")
%2 : f32[16, 256] = add(%0, %1)
%3 : f32[16] = sum(%2, [1], False, None)
%4 : f32[16, 256] = mul(%2, 2)
return (%2, %3, %4)
)");
  size_t vector_loads_of_b = 0;  // b is the kernel's arg1
  for (size_t at = l.code.kernels.find("kiln_loadu(arg1"); at != std::string::npos;
       at = l.code.kernels.find("kiln_loadu(arg1", at + 1))
    ++vector_loads_of_b;
  EXPECT_EQ(vector_loads_of_b, 1u) << l.code.kernels;
}

// Sibling column sums (a layer norm's weight and bias gradients) share one pass over the rows
// across lanes, also when they read through a reshape (whose // and % the loop ranges simplify).
TEST(Lowering, SiblingColumnSumsThroughAReshapeShareOneLaneKernel) {
  Lowered l = lower_text(R"(
%0 : f32[4, 16, 100] = placeholder("a")
%1 : f32[4, 16, 100] = placeholder("b")
%2 : f32[64, 100] = view(%0, [64, 100])
%3 : f32[100] = sum(%2, [0], False, None)
%4 : f32[4, 16, 100] = mul(%0, %1)
%5 : f32[64, 100] = view(%4, [64, 100])
%6 : f32[100] = sum(%5, [0], False, None)
return (%3, %6)
)");
  EXPECT_NE(l.code.kernels.find("kiln_block"), std::string::npos) << l.code.kernels;
  EXPECT_EQ(l.code.kernels.find("kiln_gather"), std::string::npos) << l.code.kernels;
  EXPECT_EQ(l.code.kernels.find("kernel1"), std::string::npos) << l.code.kernels;
  // 6400 elements read: below the OpenMP threshold; the pragma counts reads, not outputs.
  EXPECT_NE(l.code.kernels.find("if (6400LL >= 131072)"), std::string::npos) << l.code.kernels;
}

// Note [Sibling reductions share their loops]: a batch norm backward's per-channel sums of g
// and of g * x over (N, H, W) read the data once, in one loop nest updating both accumulators.
TEST(Lowering, SiblingReductionsOverTheSameLoopsArePassedOnce) {
  Lowered l = lower_text(R"(
%0 : f32[8, 3, 5, 7] = placeholder("g")
%1 : f32[8, 3, 5, 7] = placeholder("x")
%2 : f32[3] = sum(%0, [0, 2, 3], False, None)
%3 : f32[8, 3, 5, 7] = mul(%0, %1)
%4 : f32[3] = sum(%3, [0, 2, 3], False, None)
return (%2, %4)
)");
  EXPECT_EQ(count_kernels(l), 1) << l.code.kernels;
  size_t loops = 0;
  for (size_t at = l.code.kernels.find("for (int64_t q0"); at != std::string::npos;
       at = l.code.kernels.find("for (int64_t q0", at + 1))
    ++loops;
  EXPECT_EQ(loops, 1u) << l.code.kernels;
  // The schedule decided it (codegen prints it): both sums (and the product between them, which
  // the second reads at the element it writes) are one loop nest with the (N, H, W) loops merged
  // to (N, H*W).
  const auto& kernel = std::get<sched::Kernel>(l.schedule.steps.front());
  ASSERT_EQ(kernel.groups.size(), 1u) << sched::to_string(l.schedule);
  EXPECT_EQ(kernel.groups[0].end - kernel.groups[0].first, kernel.nodes.size());
  EXPECT_EQ(kernel.groups[0].reduction_loops, (sched::LoopGroups{{0}, {1, 2}}));
  EXPECT_NE(sched::to_string(l.schedule).find("one loop nest"), std::string::npos);
}

TEST(Lowering, ContiguousLoopsMergeIntoOneVectorLoop) {
  Lowered l = lower_text(R"(
%0 : f32[4, 3, 5, 7] = placeholder("a")
%1 : f32[4, 3, 5, 7] = placeholder("b")
%2 : f32[4, 3, 5, 7] = add(%0, %1)
return (%2)
)");
  EXPECT_NE(l.code.source.find("kiln_chunk < 420LL"), std::string::npos) << l.code.source;
  EXPECT_EQ(std::get<sched::Kernel>(l.schedule.steps.front()).outer_loops,
            (sched::LoopGroups{{0, 1, 2, 3}}));
  // A bias broadcast along the last dim only merges the leading dims.
  Lowered b = lower_text(R"(
%0 : f32[4, 3, 7] = placeholder("a")
%1 : f32[7] = placeholder("bias")
%2 : f32[4, 3, 7] = add(%0, %1)
return (%2)
)");
  EXPECT_NE(b.code.source.find("i0 < 12LL"), std::string::npos) << b.code.source;
  EXPECT_EQ(std::get<sched::Kernel>(b.schedule.steps.front()).outer_loops,
            (sched::LoopGroups{{0, 1}, {2}}));
}

// Note [Power of one half]: an exponent of 0.5 is sqrt however the constant is boxed; a parsed
// graph holds a double (kiln-fuzz --dynamic seed 20261217 index 441: pow(-inf, 0.5) was inf).
TEST(Lowering, PowerOfOneHalfIsASquareRootForAParsedExponent) {
  const Lowered half = lower_text(R"(
%0 : f64[5] = placeholder("x")
%1 : f64[5] = pow.Tensor_Scalar(%0, 0.5)
%2 : f64[5] = pow.Tensor_Scalar(%0, -0.5)
return (%1, %2)
)",
                                  false);
  EXPECT_EQ(occurrences(half.code.source, "prim::pow<"), 0u) << half.code.source;
  EXPECT_GE(occurrences(half.code.source, "prim::sqrt<"), 1u) << half.code.source;
  EXPECT_GE(occurrences(half.code.source, "prim::rsqrt<"), 1u) << half.code.source;
}

}  // namespace
}  // namespace kiln
