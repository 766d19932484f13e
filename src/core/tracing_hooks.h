// Hooks through which core tensor methods and library code reach the tracer while a kiln::compile
// trace runs on this thread (src/capture; Note [Fake tensors]): item()/tolist() on a fake tensor,
// backward() on a fake tensor, and the optimizers' traced steps (Note [Optimizer steps under a
// trace], src/optim/traced_step.cpp). Core never includes capture headers: the tracer installs
// itself here for the duration of a trace.
#pragma once

#include <functional>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>

#include "kiln/control_flow.h"
#include "kiln/tensor.h"

namespace kiln {

struct TracingHooks {
  virtual ~TracingHooks() = default;
  // The real value of fake tensor `t` (a graph break: the graph so far runs). `what` names the
  // method for messages ("item()").
  virtual Tensor materialize(const Tensor& t, const char* what,
                             const std::source_location& loc) = 0;
  // backward() on fake tensor `root` (Note [Backward in a compiled function], src/capture).
  virtual void backward(const Tensor& root, const Tensor& gradient,
                        std::optional<bool> retain_graph, bool create_graph,
                        const std::source_location& loc) = 0;
  // Note [Effects] (src/capture/segment.h): runs `effect` now with tracing paused, and again on
  // every later call that reaches this point, before the graph that follows it. For C++ state the
  // graph cannot hold: gradients set to None, hyperparameters copied into tensors, an optimizer
  // step with no traced form. `touches_traced_tensors` false promises that the effect neither
  // reads nor writes any tensor the graph so far has used (it fills fresh tensors from C++
  // state), so it needs no graph break to run first.
  virtual void effect(std::string what, std::function<void()> effect,
                      bool touches_traced_tensors = true) = 0;
  // A guard on state outside the traced function's arguments (an optimizer's hyperparameters):
  // the cache entry is reused only while `holds()` is true; `what` is the recompile reason's text.
  virtual void guard(std::string what, std::function<bool()> holds) = 0;
  // Runs `fn` once, now, with tracing paused: setup whose results later ops read as constants.
  virtual void run_untraced(const std::function<void()>& fn) = 0;
  // `param.grad()` as something the graph reads at run time (the gradient object changes from
  // call to call), not as a constant captured when traced.
  virtual const Tensor& grad_of(const Tensor& param) = 0;
  // Names `state` (an optimizer's momentum buffer of `owner`) in graphs and guards, should it
  // become a graph input: "<owner's source>.<what>" instead of "constantN" ("<what>" for an
  // undefined owner).
  virtual void name_state(const Tensor& owner, std::string what, const Tensor& state) = 0;
  // `state` is a tensor an effect fills before every run (an rng_state, Note [Random ops under a
  // trace]): created anew by every trace, and its value when traced means nothing, so verify
  // mode does not compare it between traces (Note [Verify mode] in src/capture/verify.h).
  virtual void filled_by_effect(const Tensor& state) = 0;
  // kiln::cond with a fake predicate and kiln::while_loop: each body is traced
  // into a subgraph of one higher-order node, so the branch or the trip count is decided when
  // the graph runs (Note [Higher-order ops under a trace] in src/capture/tracer.cpp). Returns
  // the node's outputs as fakes.
  virtual std::vector<Tensor> trace_cond(const Tensor& pred, const BodyFn& true_fn,
                                         const BodyFn& false_fn,
                                         const std::vector<Tensor>& operands) = 0;
  virtual std::vector<Tensor> trace_while_loop(const LoopConditionFn& cond_fn,
                                               const BodyFn& body_fn,
                                               const std::vector<Tensor>& carried) = 0;
  // kiln::scan and kiln::map under a trace: combine_fn is traced once into the subgraph of one
  // scan node over the leading dim of `xs` (the caller moves the scanned dim there); returns
  // the final carries and the per-step outputs stacked along dim 0, as fakes. `op` and `body`
  // name them in errors: "scan", "combine_fn", or "map", "fn" (a map is a scan with no carry).
  virtual ScanResult trace_scan(const ScanFn& combine_fn, const std::vector<Tensor>& init,
                                const std::vector<Tensor>& xs, bool reverse, std::string_view op,
                                std::string_view body) = 0;
  // Note [Scalar outputs in a graph] (src/ops/scalar_output.cpp): whether item<SymInt>() on a
  // fake tensor gives an unbacked symbol (CompileOptions::capture_scalar_outputs) rather than a
  // graph break, and that symbol for fake tensor `t` (one integer or bool element).
  virtual bool captures_scalar_outputs() const = 0;
  virtual SymInt scalar_symbol(const Tensor& t, const std::source_location& loc) = 0;
};

// This thread's hooks (null when no trace is running).
TracingHooks*& current_tracing_hooks();

// Where this thread last read a symbolic size with Tensor::size(): a C++ conversion operator
// (SymBool -> bool in `if (x.nonzero().size(0) > 1)`) cannot take the caller's location, so a
// fullgraph error about such a condition names this line instead (Note [Where a symbolic
// condition was written] in src/capture/tracer.cpp).
std::optional<std::source_location>& last_symbolic_size_read();

}  // namespace kiln
