// Hooks through which core tensor methods that read data (item(), tolist()) reach the tracer
// when they are called on a fake tensor (src/capture; Note [Fake tensors]). Core never includes
// capture headers: the tracer installs itself here for the duration of a trace.
#pragma once

#include <source_location>

#include "kiln/tensor.h"

namespace kiln {

struct TracingHooks {
  virtual ~TracingHooks() = default;
  // The real value of fake tensor `t` (a graph break: the graph so far runs). `what` names the
  // method for messages ("item()").
  virtual Tensor materialize(const Tensor& t, const char* what, const std::source_location& loc) = 0;
};

// This thread's hooks (null when no trace is running).
TracingHooks*& current_tracing_hooks();

}  // namespace kiln
