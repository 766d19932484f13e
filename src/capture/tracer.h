// The tracer: runs the user's function on fake tensors with the Trace dispatch key, recording
// one graph per segment (Note [Trace tree]) and the guards that make reusing it safe.
//
// Note [Fake tensors]
// A fake tensor is a Meta tensor (metadata, no data) whose sizes may be symbolic. While a trace
// runs, the Trace key is in this thread's include set, so every op, on fake or real tensors,
// reaches Tracer::handle_op: it maps each tensor argument to its graph value (lifting real
// tensors it has not seen: module parameters and buffers by their dotted source, other captured
// tensors as constants), runs the op's meta function on the fakes, and records a node. Real
// tensors are never touched while tracing: an in-place update of a buffer is recorded on the
// buffer's fake twin and happens when the graph runs.
#pragma once

#include <memory>
#include <source_location>
#include <unordered_map>
#include <vector>

#include "src/capture/segment.h"
#include "src/sym/shape_env.h"

namespace kiln::capture {

struct TraceRequest {
  const std::function<std::vector<Tensor>(const std::vector<ArgValue>&)>* body = nullptr;
  const std::vector<ArgValue>* args = nullptr;
  const CompileOptions* options = nullptr;
  std::string function_name;
  // Per tensor argument, which dims get a symbol (the shape policy decided by the caller).
  std::vector<std::vector<bool>> dynamic_dims;
  // A new branch of an existing entry: the path already run for this call, with its outputs
  // (Note [Trace tree]). Empty for a new entry.
  std::vector<Segment*> replay_path;
  std::vector<std::vector<Tensor>> replay_outputs;
  // The replayed entry's guards, whose sizes the replay's input sizes follow (Note [Replaying the
  // cached symbols] in src/capture/tracer.cpp). Null for a new entry.
  const GuardSet* replay_guards = nullptr;
  // CompileOptions::verify on a cache hit: replay_path is the whole path this call ran, and each
  // replayed segment must match its cached one (Note [Verify mode]); VerifyError otherwise.
  bool verify_replay = false;
};

struct TraceResult {
  std::unique_ptr<Segment> root;  // the new entry's first segment (or the new branch's first)
  std::string branch_key;         // a new branch: the break value it hangs under
  GuardSet guards;                // entry guards (the first segment's)
  SymbolTable symbols;
  std::vector<Tensor> results;  // this call's results
  int graphs = 0, breaks = 0;
  std::vector<std::string> graph_texts;    // every new segment's graph, printed
  std::vector<std::string> break_reasons;  // "file:line: reason" of each graph break
  std::vector<std::string> shape_guards;   // every shape-env guard, printed with its origin
  std::vector<std::string> symbols_text;   // "s0 = 8 (arg0.size(0))" per symbol created
  int ops = 0, nodes = 0, placeholders = 0;
  double trace_seconds = 0, backend_seconds = 0, guard_seconds = 0;
};

// Traces once. Throws GraphBreakError for a break under fullgraph.
TraceResult trace(const TraceRequest& request);

// The exact value of a real tensor as a branch key (dtype, shape, bytes): a materialized value.
std::string value_key_of(const Tensor& real);
// Gathers a segment's inputs for a call: arguments, slots, constants, and earlier outputs.
std::vector<Tensor> gather_inputs(const Segment& segment, const std::vector<ArgValue>& args,
                                  const std::vector<std::vector<Tensor>>& outputs_by_depth);
// Raises ValueError naming the check's line when a segment's kiln::check() fails for this call.
void check_runtime_asserts(const Segment& segment,
                           const std::vector<std::vector<Tensor>>& outputs_by_depth,
                           const SymbolTable& symbols, const std::vector<int64_t>& symbol_values);
// Runs a segment's effects (Note [Effects]).
void run_effects(const Segment& segment);
// Runs the backward() of a Backward break (Note [Backward in a compiled function]).
void run_backward(const BreakPoint& brk, const std::vector<std::vector<Tensor>>& outputs_by_depth);
// The value that picks a break's next segment ("true", "3", "1.5"...).
std::string branch_key(const BreakPoint& brk,
                       const std::vector<std::vector<Tensor>>& outputs_by_depth,
                       const SymbolTable& symbols, const std::vector<int64_t>& symbol_values);

}  // namespace kiln::capture
