// C++ code generation (DESIGN.md section 5, codegen/cpp): one translation unit per graph with an
// `extern "C"` function per kernel (Note [Kernel ABI] in src/runtime/program.h), and the Program
// that tells the runtime how to run them with the extern calls in between.
#pragma once

#include <string>
#include <vector>

#include "src/lower/graph_lowering.h"
#include "src/runtime/program.h"
#include "src/sched/scheduler.h"

namespace kiln::codegen {

struct CodegenOptions {
  bool vectorize = true;               // AVX2 vector loops with scalar tails
  int64_t parallel_threshold = 32768;  // elements of work below which a kernel runs serially
  int64_t chunk = 4096;                // pointwise elements per parallel work item
};

struct GeneratedCode {
  std::string source;
  std::string kernels;       // the source after the prelude (what KILN_LOGS=output_code prints)
  runtime::Program program;  // source_hash left empty (the runtime fills it)
  std::string loop_ir;       // readable loop IR, for logs and the structured trace
};

GeneratedCode generate(const lower::GraphLowering& lowering, const sched::Schedule& schedule,
                       const CodegenOptions& options);

}  // namespace kiln::codegen
