// CompileOptions::verify: checking a compiled call against the function it came from.
//
// Note [Verify mode]
// Guards cover what the tracer can see: tensor arguments, scalars, module trees with their
// registered attributes, what library code guards through TracingHooks::guard. A lambda's
// captures, globals and plain module members are invisible to it, and a backend can be wrong.
// Verify mode is the tool for suspecting either, and checks two things on every call:
//  - The backend: every segment also runs with the graph interpreter (the `eager` backend) on
//    copies of its inputs (copied storage by storage, so inputs that alias still alias), and its
//    outputs and its in-place updates of the inputs are compared with the compiled run's, within
//    a tolerance per dtype. A difference names the output, the node that computes it, the user's
//    line and the first differing element.
//  - The guards: every cache hit traces the function again over the path this call took,
//    replaying each segment's outputs (the tracer's replay mode of Note [Trace tree]: no graph
//    runs twice, no effect or backward() runs twice), and each segment it records must equal the
//    cached one: the same graph text, the same graph break, the same effects, and captured
//    tensors that are the same tensors (or hold the same values). A difference means the function
//    read state no guard covers and that state changed, so the cached graph is stale: the error
//    names the first differing graph line and the user's line that recorded it.
// The comparison against an independent eager run of the whole function was rejected: a second
// run would apply the function's side effects twice (an optimizer's momentum buffers, which the
// arguments do not reach, and the generator's counters). The retrace runs the function's C++ a
// second time, so C++ side effects in it (a counter, a print) happen twice per call in this mode.
// The backward graphs AOT autograd made are not compared (backward() runs through the eager
// engine after the forward); neither is a segment of an op that is not traceable (it is eager).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "src/capture/segment.h"

namespace kiln::capture {

// Runs `segment.compiled` on `inputs` and `segment.reference` on copies of them; VerifyError at
// the first output or updated input that differs. Returns the compiled run's outputs.
std::vector<Tensor> run_verified(const Segment& segment, std::span<const Tensor> inputs,
                                 const std::string& function_name, const std::string& backend,
                                 int depth);

// A segment recorded by tracing again (`now`) against the cached segment it replays; VerifyError
// at the first difference.
void check_replayed_segment(const Segment& cached, const Segment& now,
                            const std::string& function_name, int depth);

}  // namespace kiln::capture
