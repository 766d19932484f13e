// Eager higher-order ops: cond, while_loop, map, scan, associative_scan
// (include/kiln/control_flow.h).
//
// Each op runs its bodies as plain C++ and checks the contract a compiler will need to keep the
// control flow in one graph (see the header): the same number of outputs with the same dtypes and
// (for carries) sizes, no mutation of the values a body receives, no alias of them returned.
// Which implementation runs is decided per dispatch key: Note [The dispatch keys of a
// higher-order op].
#include "kiln/control_flow.h"

#include <string>

#include "kiln/error.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/shape.h"
#include "src/core/shape.h"
#include "src/core/tracing_hooks.h"
#include "src/dispatch/dispatcher.h"
#include "src/sym/expr.h"

namespace kiln {
namespace {

// The version of each input's storage before a body runs, to name an input the body mutated.
std::vector<uint32_t> versions_of(const std::vector<Tensor>& inputs) {
  std::vector<uint32_t> versions;
  versions.reserve(inputs.size());
  for (const Tensor& t : inputs) versions.push_back(t.defined() ? t.version() : 0);
  return versions;
}

std::string metadata_str(const Tensor& t) {
  return fmt::format("{} {}", dtype_name(t.dtype()), shape_str(t.sym_sizes()));
}

// Checks what a body returned: every output defined, no input mutated (a version counter moved:
// in place ops, out= and copy_ bump it, on the input or a view sharing its storage) and no output
// aliasing an input (a compiled body's outputs are fresh buffers; an alias would make the compiled
// and eager programs disagree about later in-place writes).
void check_body_result(std::string_view op, std::string_view body,
                       const std::vector<Tensor>& inputs, const std::vector<uint32_t>& before,
                       const std::vector<Tensor>& outputs, std::string_view input_kind) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    KILN_CHECK(!inputs[i].defined() || inputs[i].version() == before[i], ValueError,
               "{}: {} mutated its {} {} ({}) in place; a body may not mutate the values it "
               "receives: compute a new tensor (e.g. x.add(1) instead of x.add_(1)) and return it",
               op, body, input_kind, i, metadata_str(inputs[i]));
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    KILN_CHECK(outputs[o].defined(), ValueError,
               "{}: {} returned an undefined tensor as output {}; return a tensor for every output",
               op, body, o);
    for (size_t i = 0; i < inputs.size(); ++i) {
      KILN_CHECK(!inputs[i].defined() || !outputs[o].is_alias_of(inputs[i]), ValueError,
                 "{}: {} returned output {} ({}) that aliases its {} {}; a body may not return "
                 "an input or a view of one: return x.clone() instead",
                 op, body, o, metadata_str(outputs[o]), input_kind, i);
    }
  }
}

// Runs a body and checks its result (check_body_result).
template <typename Fn, typename... Args>
std::vector<Tensor> run_body(std::string_view op, std::string_view body,
                             const std::vector<Tensor>& inputs, std::string_view input_kind,
                             const Fn& fn, const Args&... args) {
  KILN_CHECK(static_cast<bool>(fn), ValueError, "{}: {} is empty; pass a callable", op, body);
  const std::vector<uint32_t> before = versions_of(inputs);
  std::vector<Tensor> outputs = fn(args...);
  check_body_result(op, body, inputs, before, outputs, input_kind);
  return outputs;
}

// A loop's next carries replace its current ones, so each keeps its dtype and sizes.
void check_same_carries(std::string_view op, std::string_view body,
                        const std::vector<Tensor>& carried, const std::vector<Tensor>& next) {
  KILN_CHECK(next.size() == carried.size(), ValueError,
             "{}: {} returned {} carries for {} it received; return one tensor per carry", op, body,
             next.size(), carried.size());
  for (size_t i = 0; i < carried.size(); ++i) {
    KILN_CHECK(next[i].dtype() == carried[i].dtype() &&
                   shapes_equal(next[i].sym_sizes(), carried[i].sym_sizes()),
               ShapeError,
               "{}: {} returned carry {} as {} but received it as {}; a carry keeps its dtype and "
               "sizes (cast or reshape it back before returning it)",
               op, body, i, metadata_str(next[i]), metadata_str(carried[i]));
  }
}

void check_predicate(std::string_view op, std::string_view what, const Tensor& pred) {
  KILN_CHECK(pred.defined(), ValueError, "{}: {} is an undefined tensor; pass a bool tensor", op,
             what);
  bool one_element = true;
  for (SymInt s : pred.sym_sizes()) one_element &= same(s, 1);
  KILN_CHECK(pred.dtype() == ScalarType::Bool && one_element, ValueError,
             "{}: {} must be a bool tensor with one element, got {}; compare to get one "
             "(e.g. x.sum() > 0)",
             op, what, metadata_str(pred));
}

bool predicate_value(std::string_view op, std::string_view what, const Tensor& pred) {
  check_predicate(op, what, pred);
  return pred.item<bool>();
}

// How map and scan name the repeated body calls in messages: "output ... for slice 1".
struct RepeatedCall {
  std::string_view output, preposition, unit;
};

// Every call of a map or scan body returns what its first call returned: as many tensors, with
// the same dtypes and sizes (they are stacked).
void check_like_the_first(std::string_view op, std::string_view body, RepeatedCall call,
                          int64_t index, const std::vector<Tensor>& out,
                          const std::vector<Tensor>& first) {
  KILN_CHECK(out.size() == first.size(), ValueError,
             "{}: {} returned {} {}s {} {} {} but {} {} {} 0", op, body, out.size(), call.output,
             call.preposition, call.unit, index, first.size(), call.preposition, call.unit);
  for (size_t o = 0; o < out.size(); ++o) {
    KILN_CHECK(out[o].dtype() == first[o].dtype() &&
                   shapes_equal(out[o].sym_sizes(), first[o].sym_sizes()),
               ShapeError,
               "{}: {} returned {} {} as {} {} {} {} but as {} {} {} 0; every {}'s outputs need "
               "the same dtypes and sizes",
               op, body, call.output, o, metadata_str(out[o]), call.preposition, call.unit, index,
               metadata_str(first[o]), call.preposition, call.unit, call.unit);
  }
}

// Output o of each call, stacked along `dim`, for each o.
std::vector<Tensor> stack_outputs(const std::vector<std::vector<Tensor>>& per_call, int64_t dim) {
  std::vector<Tensor> stacked;
  for (size_t o = 0; o < per_call.front().size(); ++o) {
    std::vector<Tensor> column;
    for (const auto& outs : per_call) column.push_back(outs[o]);
    stacked.push_back(stack(column, dim));
  }
  return stacked;
}

void check_defined(std::string_view op, std::string_view what, const std::vector<Tensor>& ts) {
  for (size_t i = 0; i < ts.size(); ++i) {
    KILN_CHECK(ts[i].defined(), ValueError, "{}: {} {} is an undefined tensor", op, what, i);
  }
}

// `t` with its dim `from` moved to position `to`, the others in order (a view).
Tensor move_dim(const Tensor& t, int64_t from, int64_t to) {
  std::vector<int64_t> order;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (d != from) order.push_back(d);
  order.insert(order.begin() + to, from);
  return t.permute(order);
}

// Note [The dispatch keys of a higher-order op]
// PyTorch's higher-order ops register one implementation per dispatch key. Kiln's take C++
// callables, which no graph node can hold, so they do not go through the dispatcher; each op
// picks its implementation here, explicitly, in this order (HigherOrderKey):
//  - Trace: a trace is running (current_tracing_hooks()). The bodies are traced into subgraphs
//    of ONE node (TracingHooks::trace_cond/trace_while_loop/trace_scan). What the other keys do
//    to a traced node happens to the graph later: functionalization has nothing to do (a body
//    may not mutate, checked while tracing), AOT autograd's Record key differentiates the node
//    into a node of the same kind (src/aot/higher_order_autograd.cpp), Meta is the graph's meta
//    inference (src/graph/higher_order.cpp), and the backend is the interpreter or generated code.
//  - Meta: the predicate, or for loops a carry or scanned tensor, is a Meta tensor: there is no
//    data to decide a branch or a trip count with, so the result is computed from metadata alone:
//    cond runs BOTH branches (they must agree: count, dtypes and sizes), while_loop and scan/map
//    run their body once (the contract makes one call's metadata every call's).
//  - Autograd: has no code of its own, on purpose: outside a trace the bodies' ops record their
//    own backward nodes as the Backend implementation runs them, so the gradient is that of the
//    unrolled program (what PyTorch's eager cond/scan differentiate to); compiled HOPs get an
//    explicit backward node from AOT autograd instead.
//  - Backend (CPU): runs the bodies as the C++ control flow the op names.
enum class HigherOrderKey { Trace, Meta, Backend };

bool any_meta(const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts)
    if (t.defined() && t.is_meta()) return true;
  return false;
}

HigherOrderKey key_for(bool meta) {
  if (current_tracing_hooks() != nullptr) return HigherOrderKey::Trace;
  return meta ? HigherOrderKey::Meta : HigherOrderKey::Backend;
}

// cond on Meta: both branches run; their outputs must agree, since either may be the result.
std::vector<Tensor> cond_meta(const BodyFn& true_fn, const BodyFn& false_fn,
                              const std::vector<Tensor>& operands) {
  std::vector<Tensor> t = run_body("cond", "true_fn", operands, "operand", true_fn, operands);
  std::vector<Tensor> f = run_body("cond", "false_fn", operands, "operand", false_fn, operands);
  KILN_CHECK(t.size() == f.size(), ValueError,
             "cond: true_fn returned {} outputs and false_fn {}; both branches must return the "
             "same number",
             t.size(), f.size());
  for (size_t o = 0; o < t.size(); ++o) {
    KILN_CHECK(t[o].dtype() == f[o].dtype() && shapes_equal(t[o].sym_sizes(), f[o].sym_sizes()),
               ShapeError,
               "cond: on a Meta predicate either branch may be taken, so both must return the same "
               "metadata; output {} is {} from true_fn and {} from false_fn (under kiln::compile "
               "sizes may differ: the result's size becomes an unbacked symbol)",
               o, metadata_str(t[o]), metadata_str(f[o]));
  }
  return t;
}

// Meta tensors of `like`'s metadata that are not `like` itself (a result aliases nothing).
std::vector<Tensor> fresh_meta_like(const std::vector<Tensor>& like) {
  std::vector<Tensor> out;
  for (const Tensor& t : like)
    out.push_back(empty(t.sym_sizes(), TensorOptions(t.dtype()).device(Device::Meta)));
  return out;
}

// The result of stacking `n` tensors shaped as `y` along `dim`, on Meta (contiguous, as stack).
Tensor stacked_meta(const Tensor& y, SymInt n, int64_t dim) {
  SymDimVector sizes(y.sym_sizes().begin(), y.sym_sizes().end());
  sizes.insert(static_cast<size_t>(dim), n);
  return empty(SymIntArrayRef(sizes), TensorOptions(y.dtype()).device(Device::Meta));
}

}  // namespace

std::vector<Tensor> cond(bool pred, const BodyFn& true_fn, const BodyFn& false_fn,
                         const std::vector<Tensor>& operands) {
  check_defined("cond", "operand", operands);
  KILN_CHECK(true_fn && false_fn, ValueError, "cond: true_fn and false_fn must both be callables");
  // Only the branch taken runs, so only it is checked here: the other branch's outputs would cost
  // a run (and its side effects). A compiled cond traces both and checks that they agree.
  return pred ? run_body("cond", "true_fn", operands, "operand", true_fn, operands)
              : run_body("cond", "false_fn", operands, "operand", false_fn, operands);
}

std::vector<Tensor> cond(const Tensor& pred, const BodyFn& true_fn, const BodyFn& false_fn,
                         const std::vector<Tensor>& operands) {
  // Under a trace even a real predicate (a tensor captured from outside) is read when the graph
  // runs, not when it is traced: its value may change between calls.
  // See Note [The dispatch keys of a higher-order op].
  const HigherOrderKey key = key_for(pred.defined() && pred.is_meta());
  if (key == HigherOrderKey::Backend || !pred.defined())
    return cond(predicate_value("cond", "pred", pred), true_fn, false_fn, operands);
  check_predicate("cond", "pred", pred);
  check_defined("cond", "operand", operands);
  KILN_CHECK(true_fn && false_fn, ValueError, "cond: true_fn and false_fn must both be callables");
  if (key == HigherOrderKey::Meta) return cond_meta(true_fn, false_fn, operands);
  return current_tracing_hooks()->trace_cond(pred, true_fn, false_fn, operands);
}

namespace {

// Note [A SymBool predicate]
// cond(x.size(0) > 4, ...) under a trace with symbolic sizes would guard on the comparison and
// specialize the graph to one branch. Instead the condition becomes a 0-dim bool tensor computed
// from the sizes it compares (sym_scalar_tensor of each side, then the comparison), so the
// predicate is a graph value like any tensor predicate and the cond node decides when it runs.
Tensor int_tensor(const sym::Expr* e) {
  static const OpId id = op_id("sym_scalar_tensor");
  return dispatch::call_tensor(id, SymInt::from_expr(e), Device::CPU);
}

Tensor bool_tensor(const sym::Expr* e) {
  const std::span<const sym::Expr* const> a = e->args();
  switch (e->kind()) {
    case sym::ExprKind::True:
    case sym::ExprKind::False:
      return scalar_tensor(e->kind() == sym::ExprKind::True, kBool);
    case sym::ExprKind::Eq:
      return int_tensor(a[0]).eq(int_tensor(a[1]));
    case sym::ExprKind::Ne:
      return int_tensor(a[0]).ne(int_tensor(a[1]));
    case sym::ExprKind::Lt:
      return int_tensor(a[0]).lt(int_tensor(a[1]));
    case sym::ExprKind::Le:
      return int_tensor(a[0]).le(int_tensor(a[1]));
    case sym::ExprKind::And:
    case sym::ExprKind::Or: {
      Tensor all = bool_tensor(a[0]);
      for (size_t i = 1; i < a.size(); ++i)
        all = e->kind() == sym::ExprKind::And ? all & bool_tensor(a[i]) : all | bool_tensor(a[i]);
      return all;
    }
    case sym::ExprKind::Not:
      return bool_tensor(a[0]).logical_not();
    default:
      throw ValueError(fmt::format("cond: the predicate {} is not a condition", sym::to_string(e)));
  }
}

}  // namespace

std::vector<Tensor> cond(const SymBool& pred, const BodyFn& true_fn, const BodyFn& false_fn,
                         const std::vector<Tensor>& operands) {
  if (pred.is_symbolic() && current_tracing_hooks() != nullptr)
    return cond(bool_tensor(pred.expr()), true_fn, false_fn, operands);
  return cond(static_cast<bool>(pred), true_fn, false_fn, operands);
}

std::vector<Tensor> while_loop(const LoopConditionFn& cond_fn, const BodyFn& body_fn,
                               const std::vector<Tensor>& carried) {
  KILN_CHECK(cond_fn && body_fn, ValueError,
             "while_loop: cond_fn and body_fn must both be callables");
  KILN_CHECK(!carried.empty(), ValueError,
             "while_loop: expected at least one carried tensor (the loop has no state to update)");
  check_defined("while_loop", "carry", carried);
  // See Note [The dispatch keys of a higher-order op].
  switch (key_for(any_meta(carried))) {
    case HigherOrderKey::Trace:
      return current_tracing_hooks()->trace_while_loop(cond_fn, body_fn, carried);
    case HigherOrderKey::Meta: {
      // The trip count is unknown: check cond_fn's result and one body call, whose carries have
      // the metadata of every iteration's (and of the inputs', should the loop not run at all).
      const std::vector<uint32_t> before = versions_of(carried);
      const Tensor keep_going = cond_fn(carried);
      check_body_result("while_loop", "cond_fn", carried, before, {}, "carry");
      check_predicate("while_loop", "cond_fn's result", keep_going);
      const std::vector<Tensor> next =
          run_body("while_loop", "body_fn", carried, "carry", body_fn, carried);
      check_same_carries("while_loop", "body_fn", carried, next);
      return fresh_meta_like(carried);
    }
    case HigherOrderKey::Backend:
      break;
  }
  std::vector<Tensor> carries = carried;
  for (;;) {
    const std::vector<uint32_t> before = versions_of(carries);
    const Tensor keep_going = cond_fn(carries);
    // Only mutation is checked: a predicate that is a carry itself is not an output that escapes.
    check_body_result("while_loop", "cond_fn", carries, before, {}, "carry");
    if (!predicate_value("while_loop", "cond_fn's result", keep_going)) break;
    std::vector<Tensor> next =
        run_body("while_loop", "body_fn", carries, "carry", body_fn, carries);
    check_same_carries("while_loop", "body_fn", carries, next);
    carries = std::move(next);
  }
  // With no iteration the results are the inputs themselves, as in PyTorch's eager while_loop.
  return carries;
}

std::vector<Tensor> map(const MapFn& fn, const std::vector<Tensor>& xs,
                        const std::vector<Tensor>& args) {
  KILN_CHECK(static_cast<bool>(fn), ValueError, "map: fn is empty; pass a callable");
  KILN_CHECK(!xs.empty(), ValueError, "map: expected at least one tensor in xs to map over");
  check_defined("map", "xs", xs);
  check_defined("map", "args", args);
  for (size_t i = 0; i < xs.size(); ++i) {
    KILN_CHECK(xs[i].dim() > 0, ShapeError,
               "map: xs {} is a 0-dim tensor ({}); map runs over the leading dim", i,
               metadata_str(xs[i]));
    KILN_CHECK(sizes_equal(xs[i].sym_sizes()[0], xs[0].sym_sizes()[0]), ShapeError,
               "map: every tensor of xs needs the same leading size; xs 0 is {} and xs {} is {}",
               metadata_str(xs[0]), i, metadata_str(xs[i]));
  }
  KILN_CHECK(static_cast<bool>(xs[0].sym_sizes()[0] > 0), ShapeError,
             "map: the leading dim of xs has size 0 ({}); map needs at least one slice (its output "
             "shapes are those of fn's results)",
             metadata_str(xs[0]));
  std::vector<Tensor> inputs = args;
  inputs.insert(inputs.end(), xs.begin(), xs.end());
  // See Note [The dispatch keys of a higher-order op].
  switch (key_for(any_meta(xs))) {
    case HigherOrderKey::Trace: {
      // A map is a scan with no carry (as in PyTorch): one subgraph, whatever the length.
      const ScanFn combine = [&](const std::vector<Tensor>&, const std::vector<Tensor>& x) {
        return std::pair{std::vector<Tensor>{}, fn(x, args)};
      };
      return current_tracing_hooks()
          ->trace_scan(combine, {}, xs, /*reverse=*/false, "map", "fn")
          .ys;
    }
    case HigherOrderKey::Meta: {
      std::vector<Tensor> slice;
      for (const Tensor& x : xs) slice.push_back(x.select(0, 0));
      std::vector<Tensor> out;
      for (const Tensor& y : run_body("map", "fn", inputs, "input", fn, slice, args))
        out.push_back(stacked_meta(y, xs[0].sym_sizes()[0], 0));
      return out;
    }
    case HigherOrderKey::Backend:
      break;
  }
  const int64_t n = xs[0].size(0);
  std::vector<std::vector<Tensor>> per_slice;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<Tensor> slice;
    for (const Tensor& x : xs) slice.push_back(x.select(0, i));
    std::vector<Tensor> out = run_body("map", "fn", inputs, "input", fn, slice, args);
    if (!per_slice.empty())
      check_like_the_first("map", "fn", {"output", "for", "slice"}, i, out, per_slice.front());
    per_slice.push_back(std::move(out));
  }
  return stack_outputs(per_slice, 0);
}

ScanResult scan(const ScanFn& combine_fn, const std::vector<Tensor>& init,
                const std::vector<Tensor>& xs, int64_t dim, bool reverse) {
  KILN_CHECK(static_cast<bool>(combine_fn), ValueError,
             "scan: combine_fn is empty; pass a callable");
  KILN_CHECK(!xs.empty(), ValueError, "scan: expected at least one tensor in xs to scan over");
  check_defined("scan", "init", init);
  check_defined("scan", "xs", xs);
  const int64_t ndim = xs[0].dim();
  KILN_CHECK(ndim > 0, ShapeError, "scan: xs 0 is a 0-dim tensor ({}); scan runs over a dim",
             metadata_str(xs[0]));
  dim = wrap_dim("scan", dim, ndim);
  for (size_t i = 0; i < xs.size(); ++i) {
    KILN_CHECK(xs[i].dim() == ndim && sizes_equal(xs[i].sym_sizes()[static_cast<size_t>(dim)],
                                                  xs[0].sym_sizes()[static_cast<size_t>(dim)]),
               ShapeError,
               "scan: every tensor of xs needs {} dims and the same size along dim {}; xs 0 is {} "
               "and xs {} is {}",
               ndim, dim, metadata_str(xs[0]), i, metadata_str(xs[i]));
  }
  KILN_CHECK(static_cast<bool>(xs[0].sym_sizes()[static_cast<size_t>(dim)] > 0), ShapeError,
             "scan: xs have size 0 along dim {} ({}); scan needs at least one step (the shapes of "
             "its outputs are those of combine_fn's results)",
             dim, metadata_str(xs[0]));
  // See Note [The dispatch keys of a higher-order op].
  const HigherOrderKey key = key_for(any_meta(xs) || any_meta(init));
  if (key == HigherOrderKey::Meta) {
    // One step gives every step's metadata: the next carries and the stacked outputs.
    std::vector<Tensor> x;
    for (const Tensor& t : xs) x.push_back(t.select(dim, 0));
    std::vector<Tensor> inputs = init;
    inputs.insert(inputs.end(), xs.begin(), xs.end());
    const std::vector<uint32_t> before = versions_of(inputs);
    auto [next, y] = combine_fn(init, x);
    std::vector<Tensor> outputs = next;
    outputs.insert(outputs.end(), y.begin(), y.end());
    check_body_result("scan", "combine_fn", inputs, before, outputs, "input");
    check_same_carries("scan", "combine_fn", init, next);
    ScanResult result{fresh_meta_like(init), {}};
    for (const Tensor& step : y) {
      KILN_CHECK(step.dim() >= dim, ShapeError,
                 "scan: combine_fn's per-step output is {}, which has no dim {} to stack along; "
                 "return per-step outputs with at least {} dims",
                 metadata_str(step), dim, dim);
      result.ys.push_back(stacked_meta(step, xs[0].sym_sizes()[static_cast<size_t>(dim)], dim));
    }
    return result;
  }
  if (key == HigherOrderKey::Trace) {
    TracingHooks* hooks = current_tracing_hooks();
    // The scan node runs over the leading dim, as PyTorch's does: the scanned dim is moved
    // there and the stacked outputs moved back (views, no copies).
    std::vector<Tensor> leading;
    for (const Tensor& x : xs) leading.push_back(dim == 0 ? x : move_dim(x, dim, 0));
    ScanResult result = hooks->trace_scan(combine_fn, init, leading, reverse, "scan", "combine_fn");
    for (Tensor& y : result.ys) {
      KILN_CHECK(y.dim() > dim, ShapeError,
                 "scan: combine_fn's per-step output is {}, which has no dim {} to stack along; "
                 "return per-step outputs with at least {} dims",
                 metadata_str(y), dim, dim);
      if (dim != 0) y = move_dim(y, 0, dim);
    }
    return result;
  }
  const int64_t n = xs[0].size(dim);
  std::vector<Tensor> carry = init;
  std::vector<std::vector<Tensor>> per_step(static_cast<size_t>(n));
  for (int64_t step = 0; step < n; ++step) {
    const int64_t i = reverse ? n - 1 - step : step;
    std::vector<Tensor> x;
    for (const Tensor& t : xs) x.push_back(t.select(dim, i));
    std::vector<Tensor> inputs = carry;
    inputs.insert(inputs.end(), xs.begin(), xs.end());
    const std::vector<uint32_t> before = versions_of(inputs);
    auto [next, y] = combine_fn(carry, x);
    std::vector<Tensor> outputs = next;
    outputs.insert(outputs.end(), y.begin(), y.end());
    check_body_result("scan", "combine_fn", inputs, before, outputs, "input");
    check_same_carries("scan", "combine_fn", carry, next);
    if (step > 0)
      check_like_the_first("scan", "combine_fn", {"per-step output", "at", "step"}, step, y,
                           per_step[static_cast<size_t>(reverse ? n - 1 : 0)]);
    carry = std::move(next);
    per_step[static_cast<size_t>(i)] = std::move(y);
  }
  return {std::move(carry), stack_outputs(per_step, dim)};
}

namespace {

std::vector<Tensor> combine_checked(const AssociativeFn& fn, const std::vector<Tensor>& a,
                                    const std::vector<Tensor>& b) {
  std::vector<Tensor> inputs = a;
  inputs.insert(inputs.end(), b.begin(), b.end());
  std::vector<Tensor> out =
      run_body("associative_scan", "combine_fn", inputs, "argument", fn, a, b);
  KILN_CHECK(out.size() == a.size(), ValueError,
             "associative_scan: combine_fn returned {} tensors for {} inputs; return one per "
             "tensor of xs",
             out.size(), a.size());
  for (size_t i = 0; i < out.size(); ++i) {
    KILN_CHECK(out[i].dtype() == a[i].dtype() && shapes_equal(out[i].sym_sizes(), a[i].sym_sizes()),
               ShapeError,
               "associative_scan: combine_fn returned output {} as {} for arguments of {}; it "
               "must act elementwise and keep dtypes",
               i, metadata_str(out[i]), metadata_str(a[i]));
  }
  return out;
}

std::vector<Tensor> slices(const std::vector<Tensor>& xs, int64_t dim, int64_t start, int64_t end,
                           int64_t step) {
  std::vector<Tensor> out;
  for (const Tensor& x : xs) out.push_back(x.slice(dim, start, end, step));
  return out;
}

// Note [A log-depth scan]
// The inclusive scan of n elements from the scans of n/2: combine neighbours (x0 x1), (x2 x3), ...
// into n/2 elements and scan them recursively; that gives every odd position's result. An even
// position 2k > 0 is then combine(odd result 2k-1, x 2k), and position 0 is x0. Each level
// calls combine_fn twice on whole strided slices, so there are O(log n) calls of O(n) elements
// each, instead of n calls of one element; the left argument always holds earlier elements, so
// the combine need not commute.
std::vector<Tensor> scan_tree(const AssociativeFn& fn, const std::vector<Tensor>& xs, int64_t dim) {
  const int64_t n = xs[0].size(dim);
  if (n < 2) {
    std::vector<Tensor> out;
    for (const Tensor& x : xs) out.push_back(x.clone());
    return out;
  }
  const std::vector<Tensor> pairs =
      combine_checked(fn, slices(xs, dim, 0, n - 1, 2), slices(xs, dim, 1, n, 2));
  const std::vector<Tensor> odd = scan_tree(fn, pairs, dim);  // results at 1, 3, 5, ...
  const int64_t odd_count = n / 2;
  const int64_t even_count = (n + 1) / 2;  // positions 0, 2, 4, ...
  std::vector<Tensor> evens;
  if (even_count > 1) {
    // Even position 2k (k >= 1) combines the result at 2k-1 (odd index k-1) with x at 2k.
    evens = combine_checked(fn, slices(odd, dim, 0, even_count - 1, 1), slices(xs, dim, 2, n, 2));
  }
  std::vector<Tensor> out;
  for (size_t i = 0; i < xs.size(); ++i) {
    Tensor even_results = xs[i].slice(dim, 0, 1, 1);
    if (even_count > 1) even_results = cat({even_results, evens[i]}, dim);
    // Interleave: stack (even k, odd k) pairs on a new dim after `dim` and merge the two dims.
    Tensor head = even_results.slice(dim, 0, odd_count, 1);
    Tensor woven = stack({head, odd[i]}, dim + 1);
    std::vector<SymInt> sizes(xs[i].sym_sizes().begin(), xs[i].sym_sizes().end());
    sizes[static_cast<size_t>(dim)] = SymInt(2 * odd_count);
    Tensor merged = woven.reshape(sizes);
    if (even_count > odd_count)
      merged = cat({merged, even_results.slice(dim, odd_count, even_count, 1)}, dim);
    out.push_back(merged);
  }
  return out;
}

}  // namespace

std::vector<Tensor> associative_scan(const AssociativeFn& combine_fn, const std::vector<Tensor>& xs,
                                     int64_t dim, bool reverse) {
  KILN_CHECK(static_cast<bool>(combine_fn), ValueError,
             "associative_scan: combine_fn is empty; pass a callable");
  KILN_CHECK(!xs.empty(), ValueError, "associative_scan: expected at least one tensor in xs");
  check_defined("associative_scan", "xs", xs);
  const int64_t ndim = xs[0].dim();
  KILN_CHECK(ndim > 0, ShapeError,
             "associative_scan: xs 0 is a 0-dim tensor ({}); the scan runs along a dim",
             metadata_str(xs[0]));
  dim = wrap_dim("associative_scan", dim, ndim);
  for (size_t i = 0; i < xs.size(); ++i) {
    KILN_CHECK(shapes_equal(xs[i].sym_sizes(), xs[0].sym_sizes()), ShapeError,
               "associative_scan: every tensor of xs needs the same sizes; xs 0 is {} and xs {} "
               "is {}",
               metadata_str(xs[0]), i, metadata_str(xs[i]));
  }
  if (!reverse) return scan_tree(combine_fn, xs, dim);
  // A reverse scan is the forward scan of the flipped sequence, flipped back; the combine's
  // arguments swap roles, as in PyTorch: the left argument holds the later elements.
  std::vector<Tensor> flipped;
  for (const Tensor& x : xs) flipped.push_back(x.flip({dim}));
  std::vector<Tensor> out = scan_tree(combine_fn, flipped, dim);
  for (Tensor& t : out) t = t.flip({dim});
  return out;
}

}  // namespace kiln
