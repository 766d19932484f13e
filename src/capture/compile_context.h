// What a backend, and every stage of the compiler after capture, receives besides its input.
//
// Note [Compile context]
// A stage after capture needs the kiln::compile options (the partitioner, verify), the trace's
// ShapeEnv (Note [AOT autograd with symbolic sizes] in src/aot/aot_autograd.h), the compile id its
// log lines and trace artifacts are tagged with, and, in tests and tools, someone watching the
// passes. They travel in one CompileContext, passed by reference from the tracer to the backend
// and on to each pass (src/pipeline/pipeline.cpp), so a stage's inputs are visible in its
// signature rather than read from thread-locals set somewhere up the stack. The ShapeEnv lives as
// long as the trace: a stage that runs later (a backward specialized on first use) gets a copy of
// the context without it.
#pragma once

#include <string>
#include <string_view>

#include "kiln/compile.h"
#include "src/trace/trace.h"

namespace kiln::sym {
class ShapeEnv;
}

namespace kiln::capture {

// Watches the compiler's passes (tests, `kiln passes`): called after each pass with its name and
// its printed output (built only for an observer or KILN_LOGS=passes).
class PassObserver {
 public:
  virtual ~PassObserver() = default;
  // Returns true to stop the pipeline after this pass (pipeline::PipelineStopped is thrown).
  virtual bool after_pass(std::string_view pass, const std::string& output) = 0;
};

struct CompileContext {
  CompileOptions options;
  sym::ShapeEnv* shape_env = nullptr;  // the trace's; null outside a trace or after it ended
  trace::CompileId compile_id;
  PassObserver* observer = nullptr;  // not owned; null: nobody is watching
  // Which graph of the compile a pass works on ("", "forward", "backward"), for the logs.
  std::string part;
};

}  // namespace kiln::capture
