// What the AOT tests share: compile options for static inductor graphs, and an error's text.
#pragma once

#include <functional>
#include <string>

#include "kiln/compile.h"
#include "kiln/error.h"

namespace kiln::testing {

// The inductor backend with static shapes, and the given partitioner.
inline CompileOptions aot_options(const std::string& partitioner = "min_cut") {
  CompileOptions o;
  o.backend = "inductor";
  o.dynamic = false;
  o.partitioner = partitioner;
  return o;
}

// The message of the kiln::Error `f` raises, or "(no error)".
inline std::string error_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace kiln::testing
