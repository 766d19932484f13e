// The compile cache's trace tree (DESIGN.md section 4).
//
// Note [Trace tree]
// A graph break splits one trace into segments: the graph up to the break runs, the value the
// C++ code needed (an item(), a condition on a data-dependent size) is read from its outputs, and
// tracing continues in a new graph whose inputs include the earlier graph's outputs. The break's
// value is the edge to the next segment, so a cache entry is a tree: a later call that reads a
// different value (takes the other branch) traces the function again, replays the shared prefix
// without running it twice (the prefix already ran for this call), and adds a sibling. Segments
// after the first carry their own guards: the parameters they lift and the shape guards recorded
// while they were traced.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/capture/backend.h"
#include "src/capture/guards.h"
#include "src/graph/graph.h"

namespace kiln::capture {

// Where a result of the compiled function comes from.
struct OutputRef {
  int segment = 0;  // depth along the path
  int index = 0;    // output index of that segment's graph
};

// An unbacked symbol's value is a size of a segment output, or (dim -1) the value of a 0-dim
// int64 output (item<SymInt>(), Note [Scalar outputs in a graph] in src/ops/scalar_output.cpp).
struct UnbackedBinding {
  sym::ExprPtr symbol = nullptr;
  OutputRef output;
  int dim = 0;
};
int64_t bound_value(const UnbackedBinding& binding,
                    const std::vector<std::vector<Tensor>>& outputs_by_depth);

struct BreakPoint {
  // Item: a value read from a tensor; Bool: a data-dependent condition; Eager: an op marked not
  // traceable runs eagerly in its own one-node segment (one child, key ""); Backward: backward()
  // runs through the eager engine (Note [Backward in a compiled function]; key ""); Effect: an
  // effect follows ops of the same segment, so they end first (Note [Effects]; key "").
  enum class Kind : uint8_t { Item, Bool, Eager, Backward, Effect };
  Kind kind = Kind::Item;
  OutputRef tensor;                       // Item: the tensor whose value the code read; Backward:
                                          // the root
  std::optional<OutputRef> gradient;      // Backward: the root's gradient, when one was given
  std::optional<bool> retain_graph;       // Backward
  sym::ExprPtr condition = nullptr;       // Bool: a condition over unbacked (and backed) symbols
  std::vector<UnbackedBinding> bindings;  // Bool: how to bind its unbacked symbols
  std::string reason;                     // "item() on a tensor computed in the graph"
  std::string where;                      // the user's file:line
};

// A kiln::check() on data-dependent sizes: checked after the segment that defines them runs.
struct RuntimeCheck {
  sym::ExprPtr condition = nullptr;
  std::string origin;
  std::vector<UnbackedBinding> bindings;
};

// Note [Effects]
// Some of what a traced function does is C++ state, not tensor ops: zero_grad() drops gradients,
// an optimizer copies a scheduler's momentum into a tensor, an optimizer with no traced form
// steps eagerly. Library code declares such work through TracingHooks::effect: the tracer runs it
// once (tracing paused) and records it in the current segment, and every call that runs the
// segment runs its effects first, in order, before the segment's graph. So that "before the
// graph" is also where the code did it, an effect that follows recorded ops ends the segment
// there (a break of kind Effect), unless it promises to touch no tensor the graph has used (an
// optimizer filling its fresh hyperparameter tensors). A branch retraced for a new key replays the
// prefix without running its effects again: they already ran for this call.
struct Effect {
  std::string what;  // "SGD.zero_grad()", for logs
  std::function<void()> run;
};

struct Segment {
  graph::Graph graph;
  std::vector<Effect> effects;   // run before the graph (Note [Effects])
  std::vector<InputRef> inputs;  // one per placeholder
  CompiledGraph compiled;
  CompiledGraph reference;  // CompileOptions::verify: the graph interpreter (Note [Verify mode])
  bool eager_only = false;  // a not-traceable op's segment: always the eager backend
  GuardSet guards;          // segments after the first (Note [Trace tree])
  std::vector<RuntimeCheck> runtime_checks;
  std::optional<BreakPoint> brk;  // none: the last segment of its path
  std::map<std::string, std::vector<std::unique_ptr<Segment>>> children;  // by break value
  std::vector<OutputRef> results;  // last segment: the function's results
};

}  // namespace kiln::capture
