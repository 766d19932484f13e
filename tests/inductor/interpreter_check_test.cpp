// Generated kernels against the reference interpreter handler: each graph is lowered, compiled
// and run, and every computed buffer is also evaluated element by element by the interpreter
// (src/lower/handlers/interpreter_handler.h); the graph outputs must agree (Note [Compiled
// tolerances] in tests/capture/compare.h).
#include <gtest/gtest.h>

#include <map>

#include "kiln/kiln.h"
#include "src/codegen/cpp/codegen.h"
#include "src/graph/graph.h"
#include "src/lower/graph_lowering.h"
#include "src/lower/handlers/interpreter_handler.h"
#include "src/runtime/compiler.h"
#include "src/runtime/executor.h"
#include "src/sched/scheduler.h"
#include "tests/capture/compare.h"

namespace kiln {
namespace {

// Runs `text` compiled and interpreted on `inputs`; compares every output.
void check(const std::string& text, const std::vector<Tensor>& inputs, bool vectorize = true) {
  graph::Graph g = graph::parse_graph(text);
  lower::GraphLowering lowering(g);
  lowering.run();
  sched::Schedule schedule = sched::schedule(lowering);
  codegen::CodegenOptions options;
  options.vectorize = vectorize;
  codegen::GeneratedCode code = codegen::generate(lowering, schedule, options);
  runtime::CompilerOptions copts = runtime::default_compiler_options();
  copts.vectorize = vectorize;
  copts.flags.push_back("-fwrapv");
  auto lib = runtime::compile_and_load(code.source, copts);
  code.program.source_hash = lib->hash();
  runtime::Executor exec(code.program, lib);
  const std::vector<Tensor> compiled = exec.run(inputs);

  // The interpreter, buffer by buffer in execution order.
  std::map<std::string, Tensor, std::less<>> values;
  for (size_t i = 0; i < inputs.size(); ++i) values["arg" + std::to_string(i)] = inputs[i];
  std::unordered_map<sym::ExprPtr, int64_t> symbols;
  for (const lower::SymbolSource& s : lowering.symbol_sources())
    symbols[s.symbol] = s.is_stride ? inputs[s.input].stride(s.dim) : inputs[s.input].size(s.dim);
  auto lookup = [&](std::string_view name) {
    auto it = values.find(name);
    return it == values.end() ? Tensor() : it->second;
  };
  for (const auto& b : lowering.buffers()) {
    ASSERT_NE(b->kind(), lower::Buffer::Kind::Extern)
        << "check() takes graphs without extern calls";
    if (b->kind() != lower::Buffer::Kind::Computed) continue;
    values[b->name()] =
        lower::evaluate(static_cast<const lower::ComputedBuffer&>(*b), lookup, symbols);
  }
  ASSERT_EQ(compiled.size(), lowering.outputs().size());
  for (size_t i = 0; i < compiled.size(); ++i) {
    const lower::StridedView& v = lowering.outputs()[i];
    std::vector<int64_t> sizes, strides;
    for (auto e : v.sizes)
      sizes.push_back(*sym::evaluate(
          e, [&](sym::ExprPtr s) -> std::optional<int64_t> { return symbols.at(s); }));
    for (auto e : v.strides)
      strides.push_back(*sym::evaluate(
          e, [&](sym::ExprPtr s) -> std::optional<int64_t> { return symbols.at(s); }));
    const int64_t offset = *sym::evaluate(
        v.offset, [&](sym::ExprPtr s) -> std::optional<int64_t> { return symbols.at(s); });
    Tensor interpreted = values.at(v.buffer->name()).as_strided(sizes, strides, offset);
    SCOPED_TRACE("output " + std::to_string(i));
    testing::expect_equal(compiled[i], interpreted);
  }
}

TEST(InterpreterCheck, PointwiseFloat) {
  const std::string g = R"(
%0 : f32[37, 19] = placeholder("a")
%1 : f32[19] = placeholder("b")
%2 : f32[37, 19] = mul(%0, %1)
%3 : f32[37, 19] = tanh(%2)
%4 : f32[37, 19] = sigmoid(%3)
%5 : f32[37, 19] = maximum(%4, %0)
%6 : f32[37, 19] = where.ScalarOther(%5, %5, 0.5)
return (%5)
)";
  Tensor a = randn({37, 19}), b = randn({19});
  check(g, {a, b});
  check(g, {a, b}, false);
}

TEST(InterpreterCheck, IntegerAndUnsignedOps) {
  const std::string g = R"(
%0 : u8[9, 13] = placeholder("a")
%1 : u8[9, 13] = placeholder("b")
%2 : u8[9, 13] = sub(%0, %1)
%3 : u8[9, 13] = mul(%2, %1)
%4 : u8[9, 13] = bitwise_right_shift(%3, %1)
%5 : i64[9] = sum(%4, [1], False, None)
%6 : u8[9, 13] = remainder(%0, %1)
return (%5, %6)
)";
  Tensor a = randint(0, 256, {9, 13}).to(kUInt8), b = randint(1, 9, {9, 13}).to(kUInt8);
  check(g, {a, b});
}

TEST(InterpreterCheck, ReductionsWithEpilogues) {
  const std::string g = R"(
%0 : f32[6, 50] = placeholder("x")
%1 : f32[6, 1] = amax(%0, [1], True)
%2 : f32[6, 50] = sub(%0, %1)
%3 : f32[6, 50] = exp(%2)
%4 : f32[6, 1] = sum(%3, [1], True, None)
%5 : f32[6, 50] = div(%3, %4)
%6 : i64[6] = argmax(%0, 1, False)
%7 : f32[6] = var(%0, [1], 1.0, False)
return (%5, %6, %7)
)";
  check(g, {randn({6, 50})});
}

TEST(InterpreterCheck, SymbolicSizesAndViews) {
  const std::string g = R"(
%0 : f64[s0, s1] = placeholder("x")
%1 : f64[s1, s0]{1, s1} = transpose(%0, 0, 1)
%2 : f64[s1, s0] = exp(%1)
%3 : f64[s1] = sum(%2, [1], False, None)
return (%3)
)";
  check(g, {randn({5, 11}, TensorOptions(kFloat64))});
  check(g, {randn({16, 3}, TensorOptions(kFloat64))});
}

TEST(InterpreterCheck, ReducedFloatsRoundAtTheStore) {
  const std::string g = R"(
%0 : f16[40] = placeholder("a")
%1 : bf16[40] = placeholder("b")
%2 : f32[40] = _to_copy(%1, float32)
%3 : f32[40] = mul(%0, %2)
%4 : f16[40] = _to_copy(%3, float16)
return (%4)
)";
  check(g, {randn({40}).to(kFloat16), randn({40}).to(kBFloat16)});
}

}  // namespace
}  // namespace kiln
