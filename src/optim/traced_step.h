// Optimizer steps, zero_grad() and scheduler steps inside kiln::compile (Note [Optimizer steps
// under a trace] in traced_step.cpp); not public API.
#pragma once

#include <functional>
#include <string>

#include "kiln/optim/optimizer.h"

namespace kiln::optim {

// True when a kiln::compile trace is running on this thread: the step has then been recorded
// into the graph (SGD, Adam, AdamW with their state in place) or declared as an effect (the rest,
// and a first step that creates the state), and the caller returns without stepping.
bool step_under_trace(Optimizer& optimizer);

// True when a trace is running: `fn` has been declared as an effect (Note [Effects] in
// src/capture/segment.h): run now and on every call that reaches this point. For C++ state
// changes with no tensor ops the graph could record (zero_grad, a scheduler's step).
bool defer_to_effect(std::string what, std::function<void()> fn);

}  // namespace kiln::optim
