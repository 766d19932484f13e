// C++ code generation (DESIGN.md section 5, codegen/cpp): one translation unit per graph with an
// `extern "C"` function per kernel (Note [Kernel ABI] in src/runtime/program.h), and the Program
// that tells the runtime how to run them with the extern calls in between.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "src/lower/graph_lowering.h"
#include "src/runtime/program.h"
#include "src/sched/scheduler.h"

namespace kiln::codegen {

struct CodegenOptions {
  bool vectorize = true;  // AVX2 vector loops with scalar tails
  // Elements of work below which a kernel runs serially. Higher than the eager kernels' grain
  // (32768): threads wait passively (OMP_WAIT_POLICY=PASSIVE, so that libgomp and OpenBLAS do
  // not spin against each other on 2 cores), and waking them costs more than a pass over 32K
  // elements; a fused kernel also does more per element. Measured on the MLP training step:
  // 9 -> 6 parallel regions per step, compiled step 1.0-1.1 -> 0.8-1.0 ms.
  int64_t parallel_threshold = 131072;
  // Pointwise elements per parallel work item: a multiple of 8, so every vector loop starts at
  // a multiple of 8 (Note [Lane offsets] in printer.cpp).
  int64_t chunk = 4096;
  // Put before every kernel name: the bodies of a higher-order op are generated into the same
  // translation unit as the graph around them (Note [Higher-order ops in a program] in
  // src/runtime/program.h).
  std::string kernel_prefix;
};

struct GeneratedCode {
  std::string source;
  std::string kernels;       // the source after the prelude (what KILN_LOGS=output_code prints)
  runtime::Program program;  // source_hash left empty (the runtime fills it)
  std::string loop_ir;       // readable loop IR, for logs and the structured trace
};

// Generates the code of one subgraph of a higher-order op (its kernels named with the options'
// prefix), kernels and Program only (no prelude): what the pipeline runs from `decompose` to
// `codegen` for a whole graph. NotImplementedError when the body cannot be compiled.
using BodyGenerator =
    std::function<GeneratedCode(const graph::Graph& body, const CodegenOptions& options)>;

// `bodies` compiles the subgraphs of higher-order calls; without it such a graph raises
// NotImplementedError.
GeneratedCode generate(const lower::GraphLowering& lowering, const sched::Schedule& schedule,
                       const CodegenOptions& options, const BodyGenerator& bodies = nullptr);

}  // namespace kiln::codegen
