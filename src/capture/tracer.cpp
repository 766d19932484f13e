#include "src/capture/tracer.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <unordered_set>

#include "kiln/autograd.h"
#include "src/capture/replacements.h"
#include "src/capture/verify.h"
#include "src/core/shape.h"
#include "src/core/tensor_factory.h"
#include "src/core/tracing_hooks.h"
#include "src/dispatch/dispatcher.h"
#include "src/graph/graph.h"
#include "src/graph/higher_order.h"
#include "src/graph/recorder.h"

namespace kiln::capture {
namespace {

std::string location_str(const std::source_location& loc) {
  return fmt::format("{}:{}", loc.file_name(), loc.line());
}

class Tracer;
thread_local Tracer* g_current_tracer = nullptr;
std::vector<Tensor> run_paused(const Segment& segment, const std::vector<Tensor>& inputs,
                               const TraceRequest& req, int depth);
// Backends compile with tracing paused: what they run (meta functions, eager ops) must not be
// recorded into the graph they are compiling.
CompiledGraph compile_paused(const Backend& backend, const graph::Graph& graph,
                             std::span<const Tensor> inputs, const CompileContext& context);

class Tracer final : public TracingHooks {
 public:
  explicit Tracer(const TraceRequest& req)
      : req_(req),
        env_(sym::ShapeEnvOptions{
            .specialize_zero_one = req.options->specialize_zero_one,
            // Note [Replaying the cached symbols]
            .duck_shape = req.options->duck_shape && req.replay_guards == nullptr}) {}

  TraceResult run();
  void handle_op(const OpDef& op, Stack& args, Stack& outputs);
  void record_op(const OpDef& op, Stack& args, Stack& outputs);
  Tensor materialize(const Tensor& t, const char* what, const std::source_location& loc) override;
  void backward(const Tensor& root, const Tensor& gradient, std::optional<bool> retain_graph,
                bool create_graph, const std::source_location& loc) override;
  void effect(std::string what, std::function<void()> effect, bool touches_traced_tensors) override;
  void guard(std::string what, std::function<bool()> holds) override;
  void run_untraced(const std::function<void()>& fn) override;
  const Tensor& grad_of(const Tensor& param) override;
  void name_state(const Tensor& owner, std::string what, const Tensor& state) override;
  void filled_by_effect(const Tensor& state) override { filled_by_effect_[state.impl()] = state; }
  bool data_dependent(sym::ExprPtr condition, const std::source_location& loc);
  [[noreturn]] void data_dependent_int(sym::ExprPtr value, const std::source_location& loc);
  bool captures_scalar_outputs() const override { return req_.options->capture_scalar_outputs; }
  SymInt scalar_symbol(const Tensor& t, const std::source_location& loc) override;
  std::vector<Tensor> trace_cond(const Tensor& pred, const BodyFn& true_fn, const BodyFn& false_fn,
                                 const std::vector<Tensor>& operands) override;
  std::vector<Tensor> trace_while_loop(const LoopConditionFn& cond_fn, const BodyFn& body_fn,
                                       const std::vector<Tensor>& carried) override;
  ScanResult trace_scan(const ScanFn& combine_fn, const std::vector<Tensor>& init,
                        const std::vector<Tensor>& xs, bool reverse, std::string_view op,
                        std::string_view body_name) override;

 private:
  // A body being traced into a subgraph (Note [Higher-order ops under a trace]).
  struct BodyScope {
    std::string op, name;  // "cond", "true_fn"
    graph::Graph graph;
    // fake -> value in `graph`; swapped with values_ while the body is the innermost scope.
    std::unordered_map<const TensorImpl*, graph::Value*> values;
    std::vector<Tensor> captured;  // tensors of enclosing scopes the body read, in input order
    // item<SymInt>() symbols read inside the body -> their _local_scalar_dense nodes in `graph`
    // (Note [Values read inside a body]).
    std::unordered_map<sym::ExprPtr, graph::Node*> symbols;
    // Data-dependent sizes of the body's ops' outputs (a boolean mask's true count).
    std::unordered_set<sym::ExprPtr> sizes;
    bool owns(sym::ExprPtr s) const { return symbols.contains(s) || sizes.contains(s); }
    // Unbacked symbols of enclosing scopes the body uses, lifted into it.
    std::unordered_set<sym::ExprPtr> lifted_symbols;
  };
  // Enters `body` (it becomes the innermost scope) or, with enter false, leaves the innermost
  // scope `body` for the enclosing one, until destroyed. The body's values trade places with
  // values_, so value_of and record_op always work on the innermost scope's map.
  class ScopeSwitch {
   public:
    ScopeSwitch(Tracer& tracer, BodyScope& body, bool enter)
        : tracer_(tracer), body_(body), enter_(enter) {
      flip(enter_);
    }
    ~ScopeSwitch() { flip(!enter_); }
    ScopeSwitch(const ScopeSwitch&) = delete;
    ScopeSwitch& operator=(const ScopeSwitch&) = delete;

   private:
    void flip(bool push) {
      if (push) {
        tracer_.bodies_.push_back(&body_);
      } else {
        tracer_.bodies_.pop_back();
      }
      std::swap(tracer_.values_, body_.values);
    }
    Tracer& tracer_;
    BodyScope& body_;
    bool enter_;
  };
  struct TracedBody {
    std::shared_ptr<graph::Graph> graph;
    std::vector<Tensor> captured;
    std::vector<Tensor> results;  // the body's results, as fakes of the body
  };
  // Traces `fn` on fresh fakes of `inputs` (contiguous ones when `contiguous_inputs`), with the
  // tensors `captured` already lifted (in that order) as inputs after them.
  TracedBody trace_body(std::string_view op, std::string_view name, std::string_view input_kind,
                        const std::vector<Tensor>& inputs, bool contiguous_inputs,
                        const std::vector<Tensor>& captured, const BodyFn& fn,
                        bool clone_inputs_returned);
  // What a body receives: a placeholder named `name` ("carry0"), `what` in messages ("carry 0"),
  // with `meta`, over a fake storage of `storage_bytes`.
  struct BodyInput {
    std::string name, what;
    graph::TensorMeta meta;
    size_t storage_bytes = 0;
  };
  TracedBody trace_body(std::string_view op, std::string_view name,
                        const std::vector<BodyInput>& inputs, const std::vector<Tensor>& captured,
                        const BodyFn& fn, bool clone_inputs_returned);
  graph::Value* body_value_of(const Tensor& t);
  // The sizes of cond output `output` from both branches' (Note [Branches of different sizes]).
  SymDimVector cond_output_sizes(const Tensor& a, const Tensor& b, size_t output);
  graph::Graph& current_graph() { return bodies_.empty() ? seg_->graph : bodies_.back()->graph; }
  // Inside a body, what would be a graph break raises instead (a body is one subgraph).
  void no_break_in_body(std::string_view what) const;
  // New fakes for the outputs of a higher-order node.
  std::vector<Tensor> node_outputs(const std::vector<graph::Value*>& values);

  bool replaying() const { return depth_ < static_cast<int>(req_.replay_path.size()); }
  GuardSet& guards() {
    if (replaying()) return scratch_guards_;
    if (depth_ == 0) return result_.guards;
    return seg_->guards;
  }
  void start_inputs();
  // `cached`: the guard the replayed entry has for this argument (Note [Replaying the cached
  // symbols]); null for a new entry.
  Tensor make_fake(const Tensor& real, const std::string& source, const std::vector<bool>* dynamic,
                   TensorGuard& guard, const TensorGuard* cached = nullptr);
  graph::Value* value_of(const Tensor& t);
  Tensor fake_of(const Tensor& t);
  graph::Value* lift(const InputRef& ref, const Tensor& fake);
  graph::TensorMeta meta_of(const Tensor& fake) const;
  void finish_segment(std::optional<BreakPoint> brk, std::vector<Tensor> needed);
  // Moves the shape guards recorded since the last call into the entry's guards.
  void take_shape_guards();
  void start_segment(const std::string& key);
  [[noreturn]] void graph_break_error(const std::string& reason, const std::source_location& loc);
  // Note [Guarding on a data-dependent value]: raises GuardOnDataDependentError when `e` uses an
  // item<SymInt>() symbol, or any unbacked symbol under fullgraph; `what` is "branches on" or
  // "needs the integer value of".
  void refuse_data_dependent_guard(sym::ExprPtr e, std::string_view what,
                                   const std::source_location& loc);
  // Note [Scalar outputs in a graph]: the item<SymInt>() symbols that `args` use and that no node
  // of the current segment defines get a `_local_scalar_dense` node here, on the earlier
  // segment's output that holds the value.
  void define_scalar_symbols_used_by(const Stack& args);
  // Gives each _local_scalar_dense node of this segment the value range of its symbol and the
  // kiln::check facts that made it (Note [Scalar outputs in a graph]).
  void record_scalar_ranges(const std::unordered_map<sym::ExprPtr, graph::Node*>& defined);
  // Note [Values read inside a body]: raises when `args` use a symbol read inside a body that
  // has been traced already (a C++ reference that carried the SymInt out of the body).
  void refuse_symbols_of_closed_bodies(const OpDef& op, const Stack& args) const;
  // The unbacked symbols of enclosing scopes that `args` use become the innermost body's: the
  // tensor that defines each is lifted as a closure (Note [Values read inside a body]).
  void lift_symbols_into_body(const Stack& args);
  // A symbol of `sizes` read inside a body (any, or `body`'s own), if any.
  std::optional<sym::ExprPtr> body_symbol_in(SymIntArrayRef sizes,
                                             const BodyScope* body = nullptr) const;
  std::vector<int64_t> symbol_hints() const;
  // The parameter whose gradient `real` is, with the parameter's source, if any (Note [Backward
  // in a compiled function]).
  std::optional<std::pair<Tensor, std::string>> grad_owner_of(const Tensor& real);
  // A traced fake that Meta tensor `t` aliases with the same metadata (`t` is its detach()).
  std::optional<Tensor> alias_source(const Tensor& t) const;
  bool segment_has_ops() const;
  // The source of real tensor `real` as a graph input of this segment (lifting it if needed).
  std::string lifted_source(const Tensor& real);

  const TraceRequest& req_;
  sym::ShapeEnv env_;
  TraceResult result_;
  GuardSet scratch_guards_;
  Segment* seg_ = nullptr;
  std::vector<Tensor> fake_args_;  // per argument: its fake (undefined for non-tensors)
  int depth_ = 0;
  std::vector<std::vector<Tensor>> outputs_by_depth_;
  std::unique_ptr<Segment> replay_scratch_;

  std::unordered_map<const TensorImpl*, graph::Value*> values_;  // fake -> value, this segment
  std::unordered_map<const TensorImpl*, OutputRef> prior_;       // fake -> earlier output
  std::unordered_map<const TensorImpl*, InputRef> inputs_;       // fake -> where it comes from
  std::unordered_map<const TensorImpl*, Tensor> twins_;          // real -> its fake
  std::unordered_map<const TensorImpl*, std::pair<std::string, const Tensor*>> slots_;
  // u -> (fake, dim): u is fake.size(dim), or with dim -1 the value of 0-dim fake (item<SymInt>())
  std::unordered_map<sym::ExprPtr, std::pair<Tensor, int>> unbacked_defs_;
  std::unordered_map<sym::ExprPtr, std::string> scalar_origins_;  // item<SymInt>() u -> file:line
  // item<SymInt>() symbol -> the _local_scalar_dense node of this segment that defines it
  std::unordered_map<sym::ExprPtr, graph::Node*> scalars_defined_here_;
  // Symbols read inside a body -> "item<SymInt>() at <line> in <body> of <op>"; the ones of
  // bodies already traced are in closed_body_symbols_ too (Note [Values read inside a body]).
  std::unordered_map<sym::ExprPtr, std::string> body_symbols_;
  std::unordered_set<sym::ExprPtr> closed_body_symbols_;
  std::unordered_set<size_t> asserts_checked_in_bodies_;  // indices into runtime_asserts()
  std::vector<Tensor> keep_;  // every mapped fake stays alive, so impl pointers stay unique
  // Parameters passed to grad_of, with their sources; and the real gradients lifted as Grad
  // inputs, kept alive so that their impl pointers stay unique while the trace runs.
  std::vector<std::pair<Tensor, std::string>> grad_owners_;
  std::vector<Tensor> keep_reals_;
  // name_state: real tensor -> its name (kept alive by the map).
  std::unordered_map<const TensorImpl*, std::pair<Tensor, std::string>> state_names_;
  std::unordered_map<const TensorImpl*, Tensor> filled_by_effect_;  // kept alive by the map
  size_t shape_guard_mark_ = 0;
  size_t runtime_assert_mark_ = 0;
  int constants_ = 0;
  bool in_eager_segment_ = false;
  std::vector<BodyScope*> bodies_;  // innermost last
  std::chrono::steady_clock::time_point trace_start_ = std::chrono::steady_clock::now();
};

graph::TensorMeta Tracer::meta_of(const Tensor& fake) const {
  graph::TensorMeta m;
  m.dtype = fake.dtype();
  m.sizes = SymDimVector(fake.sym_sizes().begin(), fake.sym_sizes().end());
  m.strides = SymDimVector(fake.sym_strides().begin(), fake.sym_strides().end());
  m.offset = fake.impl()->sym_offset();
  m.wrapped_number = fake.impl()->is_wrapped_number();
  return m;
}

// Note [Replaying the cached symbols]
// Duck sizing gives input sizes with equal values one symbol. An entry traced with x of [3, 4]
// has x : [s0, s1], and serves a call with [5, 5]: no guard says s0 != s1. Tracing that call
// again (a new branch under the entry, or verify mode's retrace: Note [Trace tree], Note [Verify
// mode]) replays the entry's segments and must record the same graphs, so its sizes get the
// entry's symbols, not duck sizing's [s0, s0]: the ShapeEnv of a replay does no duck sizing, a
// size the entry bound gets a fresh symbol (created in the same order, so with the same name),
// one the entry shared takes the symbol it shared, and a static one stays its value.
Tensor Tracer::make_fake(const Tensor& real, const std::string& source,
                         const std::vector<bool>* dynamic, TensorGuard& guard,
                         const TensorGuard* cached) {
  guard.dtype = real.dtype();
  guard.requires_grad = real.requires_grad();
  const int64_t nd = real.dim();
  SymDimVector sizes(nd);
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t hint = real.sizes()[d];
    const bool dyn = dynamic != nullptr && (*dynamic)[d];
    const TensorGuard::Dim* was = cached != nullptr && static_cast<size_t>(d) < cached->sizes.size()
                                      ? &cached->sizes[d]
                                      : nullptr;
    if (was != nullptr && was->kind == TensorGuard::Dim::Kind::Static) {
      sizes[d] = SymInt(hint);
    } else if (was != nullptr && was->kind == TensorGuard::Dim::Kind::Same) {
      sizes[d] = SymInt::from_expr(result_.symbols.symbols.at(static_cast<size_t>(was->value)));
    } else {
      sizes[d] = env_.create_size_symbol(hint, fmt::format("{}.size({})", source, d), dyn);
    }
    TensorGuard::Dim dim;
    if (!sizes[d].is_symbolic()) {
      dim = {TensorGuard::Dim::Kind::Static, hint};
    } else {
      int index = result_.symbols.index_of(sizes[d].expr());
      if (index < 0) {
        index = result_.symbols.add(sizes[d].expr(), fmt::format("{}.size({})", source, d));
        dim = {TensorGuard::Dim::Kind::Bind, index};
      } else {
        dim = {TensorGuard::Dim::Kind::Same, index};
      }
    }
    guard.sizes.push_back(dim);
  }
  SymDimVector strides;
  if (real.is_contiguous()) {
    guard.contiguous = true;
    strides = contiguous_strides(SymIntArrayRef(sizes));
  } else {
    guard.contiguous = false;
    guard.strides = SmallVector<int64_t, 5>(real.strides().begin(), real.strides().end());
    strides = SymDimVector(real.strides().begin(), real.strides().end());
  }
  auto storage = make_intrusive<StorageImpl>(real.impl()->storage()->nbytes(), Device::Meta);
  Tensor fake(make_intrusive<TensorImpl>(std::move(storage), real.dtype(), std::move(sizes),
                                         std::move(strides), SymInt(0)));
  // A wrapped number (the 2.5 of `2.5 - t`) promotes as a Scalar: its twin must too, or the
  // traced dtype would be the 0-dim tensor's (float64 where eager gives float32).
  fake.impl()->set_wrapped_number(real.impl()->is_wrapped_number());
  keep_.push_back(fake);
  return fake;
}

// The tree of module argument `arg` as traced (Note [Module guards]).
ModuleGuard module_guard(int arg, const std::string& source, const nn::Module& root) {
  ModuleGuard g{.arg = arg, .source = source};
  std::vector<std::string> path{source};
  root.visit_modules([&](const std::string& name, int depth, const nn::Module& m) {
    path.resize(static_cast<size_t>(depth) + 1);
    if (depth > 0) path[depth] = path[depth - 1] + "." + name;
    ModuleGuard::Entry e{.id = m.id(),
                         .version = m.version(),
                         .training = m.is_training(),
                         .path = path[depth],
                         .type = m.name()};
    for (const auto& [attr_name, value] : m.attributes()) e.attributes.push_back(value);
    g.tree.push_back(std::move(e));
  });
  return g;
}

graph::Value* Tracer::lift(const InputRef& ref, const Tensor& fake) {
  graph::Value* v = seg_->graph.add_placeholder(ref.source, meta_of(fake));
  seg_->inputs.push_back(ref);
  values_[fake.impl()] = v;
  return v;
}

void Tracer::start_inputs() {
  const std::vector<ArgValue>& args = *req_.args;
  int module_count = 0;
  for (const ArgValue& a : args) module_count += std::holds_alternative<nn::Module*>(a) ? 1 : 0;
  int module_index = 0, tensor_index = 0;
  result_.guards.grad_mode = GradMode::is_enabled();
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgValue& a = args[i];
    if (const Tensor* t = std::get_if<Tensor>(&a)) {
      if (!t->defined()) {  // None: passed on as it is, and guarded to stay None
        result_.guards.undefined_tensors.push_back(static_cast<int>(i));
        fake_args_.push_back(Tensor());
        ++tensor_index;
        continue;
      }
      KILN_CHECK(t->device() != Device::Meta, ValueError,
                 "{}: argument {} is a Meta tensor; compiled functions take CPU tensors",
                 req_.function_name, i);
      const std::string source = fmt::format("arg{}", i);
      TensorGuard guard;
      guard.where =
          InputRef{.kind = InputRef::Kind::Arg, .index = static_cast<int>(i), .source = source};
      const size_t guard_index = result_.guards.tensors.size();
      const TensorGuard* cached =
          req_.replay_guards != nullptr && guard_index < req_.replay_guards->tensors.size()
              ? &req_.replay_guards->tensors[guard_index]
              : nullptr;
      Tensor fake = make_fake(*t, source, &req_.dynamic_dims[tensor_index++], guard, cached);
      inputs_[fake.impl()] = guard.where;
      lift(guard.where, fake);
      result_.guards.tensors.push_back(std::move(guard));
      fake_args_.push_back(fake);
    } else if (nn::Module* const* m = std::get_if<nn::Module*>(&a)) {
      const std::string prefix =
          module_count == 1 ? std::string("model") : fmt::format("model{}", module_index);
      ++module_index;
      for (auto& [name, slot] : (*m)->named_tensor_slots())
        slots_[slot->impl()] = {prefix + "." + name, slot};
      result_.guards.modules.push_back(module_guard(static_cast<int>(i), prefix, **m));
      fake_args_.push_back(Tensor());
    } else {
      result_.guards.scalars.push_back({static_cast<int>(i), a});
      fake_args_.push_back(Tensor());
    }
  }
}

Tensor Tracer::fake_of(const Tensor& t) {
  auto it = twins_.find(t.impl());
  return it != twins_.end() ? it->second : t;
}

graph::Value* Tracer::value_of(const Tensor& t) {
  if (!bodies_.empty()) return body_value_of(t);
  const Tensor fake = fake_of(t);
  const TensorImpl* impl = fake.impl();
  if (auto it = values_.find(impl); it != values_.end()) return it->second;
  if (auto it = prior_.find(impl); it != prior_.end()) {
    InputRef ref{.kind = InputRef::Kind::Prior,
                 .index = it->second.index,
                 .segment = it->second.segment,
                 .source = fmt::format("segment{}[{}]", it->second.segment, it->second.index)};
    return lift(ref, fake);
  }
  if (auto it = inputs_.find(impl); it != inputs_.end()) return lift(it->second, fake);
  if (t.device() == Device::Meta) {
    // detach() of a fake makes an alias without an op (it only drops autograd): the same value.
    if (std::optional<Tensor> source = alias_source(t)) {
      twins_[t.impl()] = *source;
      keep_.push_back(t);
      return value_of(*source);
    }
  }
  KILN_CHECK(t.device() != Device::Meta, ValueError,
             "{}: a Meta tensor ({} {}) that this trace did not create was used (a fake tensor "
             "that escaped an earlier trace?); compiled functions must not keep tensors across "
             "calls",
             req_.function_name, dtype_name(t.dtype()), shape_str(t.sym_sizes()));
  // A real tensor seen for the first time: a module parameter/buffer, or a captured constant.
  InputRef ref;
  TensorGuard guard;
  if (auto slot = slots_.find(t.impl()); slot != slots_.end()) {
    ref = InputRef{
        .kind = InputRef::Kind::Slot, .slot = slot->second.second, .source = slot->second.first};
    guard.identity = t;
  } else if (auto owner = grad_owner_of(t)) {
    ref = InputRef{
        .kind = InputRef::Kind::Grad, .constant = owner->first, .source = owner->second + ".grad"};
    keep_reals_.push_back(t);
  } else {
    const auto named = state_names_.find(t.impl());
    ref = InputRef{.kind = InputRef::Kind::Constant,
                   .constant = t,
                   .source = named != state_names_.end() ? named->second.second
                                                         : fmt::format("constant{}", constants_++),
                   .filled_by_effect = filled_by_effect_.contains(t.impl())};
  }
  guard.where = ref;
  Tensor twin = make_fake(t, ref.source, nullptr, guard);  // parameters are static
  if (ref.kind == InputRef::Kind::Slot || ref.kind == InputRef::Kind::Grad)
    guards().tensors.push_back(std::move(guard));
  twins_[t.impl()] = twin;
  inputs_[twin.impl()] = ref;
  return lift(ref, twin);
}

std::optional<Tensor> Tracer::alias_source(const Tensor& t) const {
  auto same_dims = [](SymIntArrayRef a, SymIntArrayRef b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](SymInt x, SymInt y) { return same(x, y); });
  };
  for (const Tensor& fake : keep_) {
    if (fake.impl() == t.impl() || fake.impl()->storage().get() != t.impl()->storage().get())
      continue;
    if (fake.dtype() == t.dtype() && same_dims(fake.sym_sizes(), t.sym_sizes()) &&
        same_dims(fake.sym_strides(), t.sym_strides()) &&
        same(fake.impl()->sym_offset(), t.impl()->sym_offset()) &&
        (values_.contains(fake.impl()) || prior_.contains(fake.impl()) ||
         inputs_.contains(fake.impl())))
      return fake;
  }
  return std::nullopt;
}

std::optional<std::pair<Tensor, std::string>> Tracer::grad_owner_of(const Tensor& real) {
  auto is_grad_of = [&](const Tensor& param) {
    return param.defined() && param.grad().defined() && param.grad().impl() == real.impl();
  };
  for (const auto& [impl, slot] : slots_)
    if (is_grad_of(*slot.second)) return std::make_pair(*slot.second, slot.first);
  for (const auto& [param, source] : grad_owners_)
    if (is_grad_of(param)) return std::make_pair(param, source);
  return std::nullopt;
}

bool Tracer::segment_has_ops() const {
  for (const graph::Node* node : seg_->graph.nodes())
    if (node->kind() == graph::NodeKind::Call) return true;
  return false;
}

// Note [Writes through self-overlapping views]
// An in-place op whose target has elements that share memory (base.unfold(1, 3, 1), an
// as_strided with overlapping strides, an expand) updates that memory once per element in eager
// code, each element reading what the last one wrote (as PyTorch's kernels do). A graph is
// functional: it computes every element from the old values and writes the result back, once
// per memory location. So such an op runs eagerly in a segment of its own, as an op marked not
// traceable does. The test is the usual sufficient one for no overlap (dims sorted by stride,
// each stride past the extent of the smaller ones); a layout it cannot prove free of overlap, or
// a size-0/1-dependent one with symbolic sizes (a stride-0 dim of symbolic size), counts as
// overlapping: the eager run is always right.
bool may_overlap_itself(const Tensor& t) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (|stride|, size) of dims with size > 1
  for (int64_t d = 0; d < t.dim(); ++d) {
    const SymInt size = t.sym_sizes()[d], stride = t.sym_strides()[d];
    const int64_t n = size.is_symbolic() ? size.hint() : size.raw();
    const int64_t st = stride.is_symbolic() ? stride.hint() : stride.raw();
    if (size.is_symbolic() && st == 0) return true;
    if (n > 1) dims.emplace_back(std::abs(st), n);
  }
  std::sort(dims.begin(), dims.end());
  int64_t extent = 0;  // the largest offset the dims so far reach
  for (const auto& [stride, size] : dims) {
    if (stride <= extent) return true;
    extent += stride * (size - 1);
  }
  return false;
}

// Ops whose output shape depends on the data: those tagged so (nonzero), and indexing with a
// bool mask (the mask's true count is a size of the result).
bool has_data_dependent_shape(const OpDef& op, const Stack& args) {
  if (op.has_tag(kTagDynamicOutput)) return true;
  if (op.name != "index" || args.size() < 2 || !args[1].is_tensor_list()) return false;
  for (const Tensor& index : args[1].tensor_list())
    if (index.defined() && index.dtype() == kBool) return true;
  return false;
}

// An op marked not traceable (kTagNotTraceable) ends the current graph and runs eagerly in a
// one-node segment of its own; tracing continues in a new graph after it (Note [Trace tree]).
// So does an in-place op on a target that may overlap itself (Note [Writes through
// self-overlapping views]).
void Tracer::handle_op(const OpDef& op, Stack& args, Stack& outputs) {
  const bool overlapping_write = !in_eager_segment_ && op.has_tag(kTagInplace) && !args.empty() &&
                                 args[0].is_tensor() && args[0].tensor().defined() &&
                                 may_overlap_itself(fake_of(args[0].tensor()));
  const bool eager_dynamic_shape =
      !req_.options->capture_dynamic_output_shape_ops && has_data_dependent_shape(op, args);
  if ((!op.has_tag(kTagNotTraceable) && !overlapping_write && !eager_dynamic_shape) ||
      in_eager_segment_) {
    KILN_CHECK(bodies_.empty() || !op.has_tag(kTagDynamicOutput), NotImplementedError,
               "{}: {} calls {}, whose output shape depends on data; a body with a "
               "data-dependent shape is not supported yet: call it outside the {}",
               bodies_.empty() ? "" : bodies_.back()->op,
               bodies_.empty() ? "" : bodies_.back()->name, op.name,
               bodies_.empty() ? "" : bodies_.back()->op);
    record_op(op, args, outputs);
    return;
  }
  const std::string reason =
      overlapping_write
          ? fmt::format("op {} writes through a view whose elements share memory", op.name)
      : eager_dynamic_shape ? fmt::format(
                                  "op {} has a data-dependent output shape and "
                                  "capture_dynamic_output_shape_ops is false",
                                  op.name)
                            : fmt::format("op {} is marked not traceable", op.name);
  no_break_in_body(reason);
  if (req_.options->fullgraph)
    throw GraphBreakError(fmt::format(
        "{}: graph break while compiling with fullgraph=true: {}. Call it outside the compiled "
        "function or compile with fullgraph=false",
        req_.function_name, reason));
  std::vector<Tensor> tensor_args;
  for (const IValue& v : args) {
    if (v.is_tensor() && v.tensor().defined()) tensor_args.push_back(v.tensor());
    if (v.is_tensor_list())
      for (const Tensor& t : v.tensor_list())
        if (t.defined()) tensor_args.push_back(t);
  }
  finish_segment(BreakPoint{.kind = BreakPoint::Kind::Eager, .reason = reason}, tensor_args);
  start_segment("");
  in_eager_segment_ = true;
  record_op(op, args, outputs);
  std::vector<Tensor> results;
  for (const IValue& out : outputs) results.push_back(out.tensor());
  seg_->eager_only = true;
  finish_segment(BreakPoint{.kind = BreakPoint::Kind::Eager, .reason = reason}, results);
  in_eager_segment_ = false;
  result_.breaks += 1;
  result_.break_reasons.push_back(reason);
  start_segment("");
}

void Tracer::record_op(const OpDef& op, Stack& args, Stack& outputs) {
  if (!closed_body_symbols_.empty()) refuse_symbols_of_closed_bodies(op, args);
  if (!bodies_.empty() && !op.has_tag(kTagDefinesSymbol)) lift_symbols_into_body(args);
  if (!scalar_origins_.empty() && bodies_.empty() && !op.has_tag(kTagDefinesSymbol))
    define_scalar_symbols_used_by(args);
  // Note [Recording an op into a graph]: real tensors get their fake twins, so the meta function
  // never sees (or bumps the version of) a real tensor; the node goes into the current segment.
  struct Client : graph::RecordingClient {
    Tracer& tracer;
    explicit Client(Tracer& t) : tracer(t) {}
    graph::Value* value_of(const Tensor& t, std::string_view) override {
      return tracer.value_of(t);
    }
    Tensor meta_twin(const Tensor& t) override { return tracer.fake_of(t); }
    graph::TensorMeta meta_of_output(const Tensor& out) override { return tracer.meta_of(out); }
    graph::Graph& graph() override { return tracer.current_graph(); }
  } client(*this);
  std::vector<graph::Value*> values = graph::record_call(op, args, outputs, client, "compile");
  // Note [Grad mode of a node]: a mode other than the one the call started in (the entry guard)
  // is recorded on the node, so a NoGradGuard inside the function holds when the graph runs.
  if (GradMode::is_enabled() != *result_.guards.grad_mode && !values.empty())
    values[0]->producer()->set_grad_mode(GradMode::is_enabled() ? graph::Node::GradMode::Enabled
                                                                : graph::Node::GradMode::Disabled);
  for (size_t j = 0; j < outputs.size(); ++j) {
    const Tensor& fake = outputs[j].tensor();
    values_[fake.impl()] = values[j];
    keep_.push_back(fake);
    // Sizes that are fresh unbacked symbols are defined by this output (nonzero's length).
    for (int64_t d = 0; d < fake.dim(); ++d) {
      const SymInt s = fake.sym_sizes()[d];
      if (!s.is_symbolic() || !s.expr()->is_symbol()) continue;
      const sym::SymbolInfo* info = env_.info(s.expr());
      if (info == nullptr || !info->unbacked || unbacked_defs_.contains(s.expr())) continue;
      unbacked_defs_[s.expr()] = {fake, static_cast<int>(d)};
      if (!bodies_.empty()) {  // Note [Values read inside a body]: the body's own
        BodyScope& body = *bodies_.back();
        body.sizes.insert(s.expr());
        body_symbols_[s.expr()] =
            fmt::format("the size {} of {}'s output in {} of {}", d, op.name, body.name, body.op);
      }
    }
  }
}

// Note [Where a symbolic condition was written]
// `if (x.nonzero().size(0) > 1)` decides a SymBool in its conversion to bool, which cannot take
// the caller's std::source_location: the location it has is Kiln's own header. The line that
// read the symbolic size (Tensor::size takes the caller's location) is the user's code that
// wrote the condition, or close to it, so errors name that line instead.
std::source_location user_location(const std::source_location& loc) {
  const std::string_view file = loc.file_name();
  if (file.find("include/kiln/") == std::string_view::npos) return loc;
  return last_symbolic_size_read().value_or(loc);
}

void Tracer::graph_break_error(const std::string& reason, const std::source_location& where) {
  const std::source_location loc = user_location(where);
  const bool moved = loc.file_name() != where.file_name() || loc.line() != where.line();
  throw GraphBreakError(fmt::format(
      "{}: graph break at {} ({}{}) while compiling with fullgraph=true: {}. Move the "
      "data-dependent code out of the compiled function, use kiln::check() to assert facts "
      "about the value, or compile with fullgraph=false to split the graph there",
      req_.function_name, location_str(loc), moved ? "where the size was read; " : "",
      loc.function_name(), reason));
}

// Note [Checks in dead code]
// Eager code runs every op, so an integer division by zero or an index out of bounds raises even
// when the result is never used. A graph computes only what its outputs need, and would skip
// such an op silently. So the result of an op that checks its values (integer division and
// remainder, ops that read or write at tensor indices) becomes an output of its segment when no
// other output depends on it (nothing reads it, or only ops that are dead themselves): the graph
// computes it, and the check runs (Note [Runtime errors in generated code]).
bool raises_on_values(const graph::Node& node) {
  // A body may hold such a check (or raise in its loop condition): kept like one.
  if (node.op_def().has_tag(kTagHigherOrder)) return true;
  const std::string& name = node.op_def().name;
  const std::string base = name.substr(0, name.find('.'));
  if (base == "div" || base == "div_" || base == "remainder" || base == "remainder_" ||
      base == "floor_divide" || base == "floor_divide_" || base == "fmod" || base == "fmod_") {
    for (const graph::Value* in : node.inputs())
      if (is_integral(in->meta().dtype) && in->meta().dtype != kBool) return true;
    return false;
  }
  for (const char* prefix : {"index", "gather", "scatter", "take", "embedding"})
    if (base.starts_with(prefix)) return true;
  return false;
}

// Note [Checks in dead code]: the checking ops that no output of the segment depends on,
// directly or through other ops (a division whose result is only sliced and dropped). Walked
// from the last node back, so a dead check that feeds a later kept one is computed through it
// and is not returned itself.
std::vector<graph::Value*> unread_checks(const graph::Graph& graph,
                                         const std::vector<graph::Value*>& outputs) {
  std::unordered_set<const graph::Node*> live;
  std::vector<const graph::Node*> work;
  auto keep = [&](const graph::Node* n) {
    if (n != nullptr && live.insert(n).second) work.push_back(n);
  };
  auto propagate = [&] {
    while (!work.empty()) {
      const graph::Node* n = work.back();
      work.pop_back();
      for (const graph::Value* in : n->inputs()) keep(in->producer());
    }
  };
  for (const graph::Value* v : outputs) keep(v->producer());
  const std::vector<graph::Node*> calls = graph.calls();
  for (const graph::Node* n : calls)
    if (n->has_side_effects()) keep(n);
  propagate();
  std::vector<graph::Value*> kept;
  for (auto it = calls.rbegin(); it != calls.rend(); ++it) {
    const graph::Node* n = *it;
    if (live.contains(n) || !raises_on_values(*n) || n->outputs().empty()) continue;
    kept.push_back(n->output(0));
    keep(n);
    propagate();
  }
  std::reverse(kept.begin(), kept.end());
  return kept;
}

std::vector<int64_t> Tracer::symbol_hints() const {
  std::vector<int64_t> hints;
  for (sym::ExprPtr s : result_.symbols.symbols) hints.push_back(env_.hint(s).value_or(0));
  return hints;
}

void Tracer::finish_segment(std::optional<BreakPoint> brk, std::vector<Tensor> needed) {
  // kiln::check() calls recorded in this segment: the tensors whose sizes define their unbacked
  // symbols become outputs, so the checks can read them when the segment has run.
  const auto& asserts = env_.runtime_asserts();
  std::vector<std::pair<size_t, std::vector<std::pair<sym::ExprPtr, std::pair<Tensor, int>>>>>
      checks;
  for (size_t i = runtime_assert_mark_; i < asserts.size(); ++i) {
    // A fact on one symbol read inside a body is checked where the body binds it (its
    // _local_scalar_dense node's range); Note [Values read inside a body].
    if (asserts_checked_in_bodies_.contains(i)) continue;
    const std::vector<sym::ExprPtr> uses = sym::free_symbols(asserts[i].condition);
    for (sym::ExprPtr s : uses)
      KILN_CHECK(!body_symbols_.contains(s), ValueError,
                 "{}: kiln::check({}) at {} uses {}, the value of {}, outside that body; a value "
                 "read inside a body is known only while it runs. Check it inside the body",
                 req_.function_name, sym::to_string(asserts[i].condition), asserts[i].origin,
                 s->name(), body_symbols_.at(s));
    std::vector<std::pair<sym::ExprPtr, std::pair<Tensor, int>>> defs;
    for (sym::ExprPtr s : uses) {
      auto it = unbacked_defs_.find(s);
      if (it == unbacked_defs_.end()) continue;
      needed.push_back(it->second.first);
      defs.emplace_back(s, it->second);
    }
    checks.emplace_back(i, std::move(defs));
  }
  runtime_assert_mark_ = asserts.size();
  // item<SymInt>() values of this segment: a later segment that uses the symbol defines it again
  // from the output (define_scalar_symbols_used_by).
  if (brk)
    for (const auto& [s, node] : scalars_defined_here_)
      needed.push_back(unbacked_defs_.at(s).first);
  record_scalar_ranges(scalars_defined_here_);
  // Outputs: what the code still holds (Note [Trace tree]) plus what the break reads.
  std::vector<graph::Value*> outs;
  std::vector<const TensorImpl*> out_fakes;
  std::set<graph::Value*> seen;
  auto add = [&](const TensorImpl* impl, graph::Value* v) {
    if (seen.insert(v).second) {
      outs.push_back(v);
      out_fakes.push_back(impl);
    }
  };
  for (const Tensor& t : needed) add(fake_of(t).impl(), value_of(t));
  if (brk) {
    std::vector<std::pair<int, const TensorImpl*>> live;
    for (const auto& [impl, v] : values_) {
      // keep_ holds one reference; more means the user's code holds the tensor. The fake twin
      // of a real tensor (a parameter or buffer updated in place, BatchNorm's running mean) is
      // not one: the update reaches the real tensor, which later segments read again.
      if (v->producer() != nullptr && v->producer()->kind() == graph::NodeKind::Call &&
          impl->use_count() > 1 && !inputs_.contains(impl))
        live.emplace_back(v->id(), impl);
    }
    std::sort(live.begin(), live.end());
    for (const auto& [id, impl] : live) add(impl, values_[impl]);
  }
  for (graph::Value* v : unread_checks(seg_->graph, outs)) {
    auto it = std::find_if(values_.begin(), values_.end(),
                           [&](const auto& entry) { return entry.second == v; });
    if (it != values_.end()) add(it->first, v);
  }
  seg_->graph.set_outputs(outs);
  for (size_t j = 0; j < out_fakes.size(); ++j)
    prior_[out_fakes[j]] = OutputRef{depth_, static_cast<int>(j)};
  // Shape guards and runtime asserts recorded while this segment was traced.
  take_shape_guards();
  for (const auto& [i, defs] : checks) {
    RuntimeCheck check{asserts[i].condition, asserts[i].origin, {}};
    for (const auto& [symbol, def] : defs)
      check.bindings.push_back({symbol, prior_.at(fake_of(def.first).impl()), def.second});
    seg_->runtime_checks.push_back(std::move(check));
  }
  seg_->brk = std::move(brk);

  if (replaying()) {
    const Segment& old = *req_.replay_path[depth_];
    if (req_.verify_replay)  // it reads real tensors: untraced
      run_untraced([&] { check_replayed_segment(old, *seg_, req_.function_name, depth_); });
    KILN_CHECK(graph::to_string(old.graph) == graph::to_string(seg_->graph), Error,
               "{}: tracing the function again (for a new branch) recorded a different graph "
               "before the graph break at depth {}; compiled functions must trace "
               "deterministically",
               req_.function_name, depth_);
    outputs_by_depth_.push_back(req_.replay_outputs[depth_]);
    return;
  }
  std::vector<Tensor> inputs = gather_inputs(*seg_, *req_.args, outputs_by_depth_);
  const auto backend_start = std::chrono::steady_clock::now();
  {
    // Note [Compile context]. Note [AOT autograd with symbolic sizes] (src/aot/aot_autograd.h):
    // the backend may trace on over the graph's symbols, and the guards it adds hold for this
    // entry too.
    const CompileContext context{
        .options = *req_.options, .shape_env = &env_, .compile_id = trace::current_compile_id()};
    // Note [Replacements reach the backend]
    const graph::Graph simplified = simplified_for_backend(seg_->graph, env_);
    seg_->compiled =
        compile_paused(lookup_backend(seg_->eager_only ? "eager" : req_.options->backend),
                       simplified, inputs, context);
    if (req_.options->verify && !seg_->eager_only)  // Note [Verify mode]
      seg_->reference = compile_paused(lookup_backend("eager"), simplified, inputs, context);
  }
  take_shape_guards();
  result_.backend_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - backend_start).count();
  result_.graphs += 1;
  result_.graph_texts.push_back(graph::to_string(seg_->graph));
  for (const graph::Node* node : seg_->graph.nodes()) {
    result_.nodes += 1;
    if (node->kind() == graph::NodeKind::Call) result_.ops += 1;
    if (node->kind() == graph::NodeKind::Placeholder) result_.placeholders += 1;
  }
  outputs_by_depth_.push_back(run_paused(*seg_, inputs, req_, depth_));
  check_runtime_asserts(*seg_, outputs_by_depth_, result_.symbols, symbol_hints());
}

void Tracer::take_shape_guards() {
  const auto& shape_guards = env_.guards();
  for (size_t i = shape_guard_mark_; i < shape_guards.size(); ++i)
    guards().shape_guards.push_back({shape_guards[i].condition, shape_guards[i].origin});
  shape_guard_mark_ = shape_guards.size();
}

void Tracer::start_segment(const std::string& key) {
  Segment* parent = replaying() ? req_.replay_path[depth_] : seg_;
  ++depth_;
  values_.clear();
  scalars_defined_here_.clear();
  auto next = std::make_unique<Segment>();
  Segment* raw = next.get();
  if (replaying()) {
    replay_scratch_ = std::move(next);
  } else if (depth_ == static_cast<int>(req_.replay_path.size())) {
    result_.root = std::move(next);  // the caller links a new branch under branch_key
    result_.branch_key = key;
  } else {
    parent->children[key].push_back(std::move(next));
  }
  seg_ = raw;
}

Tensor Tracer::materialize(const Tensor& t, const char* what, const std::source_location& loc) {
  const std::string reason = fmt::format("{} reads the value of a tensor", what);
  no_break_in_body(fmt::format("{} at {}", reason, location_str(loc)));
  if (req_.options->fullgraph) graph_break_error(reason, loc);
  finish_segment(
      BreakPoint{.kind = BreakPoint::Kind::Item, .reason = reason, .where = location_str(loc)},
      {t});
  const OutputRef ref = prior_.at(fake_of(t).impl());
  seg_->brk->tensor = ref;
  Tensor real = outputs_by_depth_[ref.segment][ref.index];
  result_.breaks += 1;
  result_.break_reasons.push_back(fmt::format("{}: {}", location_str(loc), reason));
  start_segment(value_key_of(real));
  return real;
}

bool Tracer::data_dependent(sym::ExprPtr condition, const std::source_location& loc) {
  const std::string reason =
      fmt::format("the condition {} depends on data (a size or value the graph computes)",
                  sym::to_string(condition));
  refuse_data_dependent_guard(condition, "branches on", loc);
  no_break_in_body(fmt::format("{} at {}", reason, location_str(user_location(loc))));
  std::vector<Tensor> needed;
  std::vector<std::pair<sym::ExprPtr, std::pair<Tensor, int>>> defs;
  for (sym::ExprPtr s : sym::free_symbols(condition)) {
    const sym::SymbolInfo* info = env_.info(s);
    if (info == nullptr || !info->unbacked) continue;
    auto it = unbacked_defs_.find(s);
    KILN_CHECK(it != unbacked_defs_.end(), NotImplementedError,
               "{}: the condition {} at {} uses {}, which no traced tensor's size defines; a "
               "graph break cannot materialize it",
               req_.function_name, sym::to_string(condition), location_str(loc), sym::to_string(s));
    needed.push_back(it->second.first);
    defs.emplace_back(s, it->second);
  }
  finish_segment(BreakPoint{.kind = BreakPoint::Kind::Bool,
                            .condition = condition,
                            .reason = reason,
                            .where = location_str(user_location(loc))},
                 needed);
  for (const auto& [symbol, def] : defs)
    seg_->brk->bindings.push_back({symbol, prior_.at(fake_of(def.first).impl()), def.second});
  const std::string key =
      branch_key(*seg_->brk, outputs_by_depth_, result_.symbols, symbol_hints());
  result_.breaks += 1;
  result_.break_reasons.push_back(fmt::format("{}: {}", location_str(user_location(loc)), reason));
  start_segment(key);
  return key == "true";
}

// Note [Guarding on a data-dependent value]
// C++ code that branches on an expression over unbacked symbols (`if (n == -1)`, n from
// item<SymInt>() or a nonzero() size), or needs it as an integer, asks for a value the trace does
// not have. For a size from nonzero() Kiln can end the graph there, read the size from the
// output and trace on in a branch per value (Note [Trace tree]). An item<SymInt>() value was
// asked for so that the graph would not end (capture_scalar_outputs), and fullgraph forbids
// ending it: both raise GuardOnDataDependentError instead, as PyTorch does, naming the
// expression, the user's line and the fixes: a kiln::check / check_is_size before the branch,
// whose value range decides the condition while tracing and is asserted when the graph runs; or
// the graph break.
void Tracer::refuse_data_dependent_guard(sym::ExprPtr e, std::string_view what,
                                         const std::source_location& where) {
  std::string uses, scalar;
  for (sym::ExprPtr s : sym::free_symbols(e)) {
    const sym::SymbolInfo* info = env_.info(s);
    if (info == nullptr || !info->unbacked) continue;
    auto origin = scalar_origins_.find(s);
    const std::string from = origin != scalar_origins_.end()
                                 ? fmt::format("item<SymInt>() at {}", origin->second)
                                 : info->source;
    uses += fmt::format("{}{} ({})", uses.empty() ? "" : ", ", s->name(), from);
    if (origin != scalar_origins_.end() && scalar.empty()) scalar = s->name();
  }
  if (scalar.empty() && !req_.options->fullgraph) return;
  const std::source_location loc = user_location(where);
  const bool moved = loc.file_name() != where.file_name() || loc.line() != where.line();
  const std::string symbol = scalar.empty() ? uses.substr(0, uses.find(' ')) : scalar;
  throw GuardOnDataDependentError(fmt::format(
      "{}: GuardOnDataDependentError: the code at {} ({}{}) {} `{}`, which depends on {}: values "
      "known only when the graph runs. Assert what the code needs before it, e.g. "
      "kiln::check({} >= 0) or kiln::check_is_size({}): the fact decides the condition while "
      "tracing and is checked when the graph runs; or {}",
      req_.function_name, location_str(loc), moved ? "where the value was read; " : "",
      loc.function_name(), what, sym::to_string(e), uses, symbol, symbol,
      scalar.empty() ? "compile with fullgraph=false to split the graph there"
                     : "compile with capture_scalar_outputs=false, so that item() ends the graph "
                       "there (a graph break) and the code reads the value"));
}

void Tracer::data_dependent_int(sym::ExprPtr value, const std::source_location& loc) {
  refuse_data_dependent_guard(value, "needs the integer value of", loc);
  const sym::ExprPtr v = env_.simplify(value);
  throw sym::DataDependentError(
      v, sym::origin_of(loc),
      fmt::format("{}: the data-dependent value `{}` at {} is needed as an integer; it is known "
                  "only when the graph runs: keep it a SymInt, or read the tensor it comes from",
                  req_.function_name, sym::to_string(v), location_str(user_location(loc))));
}

// Calls f(symbol) for each free symbol of the SymInt and SymInt-list arguments of `args` (and
// of the tensor arguments' sizes, with `tensor_sizes`).
template <typename F>
void for_each_symbol_of(const Stack& args, F&& f, bool tensor_sizes = false) {
  auto visit = [&](SymInt v) {
    if (!v.is_symbolic()) return;
    for (sym::ExprPtr s : sym::free_symbols(v.expr())) f(s);
  };
  for (const IValue& a : args) {
    if (a.is_int()) visit(a.to_sym_int());
    if (a.is_int_list())
      for (SymInt v : a.sym_int_list()) visit(v);
    if (tensor_sizes && a.is_tensor() && a.tensor().defined())
      for (SymInt v : a.tensor().sym_sizes()) visit(v);
  }
}

// `_local_scalar_dense(t, symbol)` with no range yet (record_scalar_ranges sets it).
Stack scalar_definition_args(const Tensor& t, SymInt symbol) {
  return Stack{IValue(t), IValue(symbol), IValue(SymDimVector{}), IValue(SymDimVector{}),
               IValue(std::string())};
}

// Note [Scalar outputs in a graph] (src/ops/scalar_output.cpp).
SymInt Tracer::scalar_symbol(const Tensor& t, const std::source_location& loc) {
  const Tensor fake = fake_of(t);
  KILN_CHECK(fake.sym_numel() == 1, ValueError,
             "item<SymInt>(): a tensor with {} elements (shape {}) cannot be converted to a "
             "scalar; only one-element tensors can",
             fake.sym_numel(), shape_str(fake.sym_sizes()));
  sym::ValueRange range = sym::ValueRange::unbounded();
  visit_dtype(t.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      range = sym::ValueRange::between(0, 1);
    } else if constexpr (std::is_integral_v<T> && sizeof(T) < sizeof(int64_t)) {
      range =
          sym::ValueRange::between(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
    } else if constexpr (std::is_unsigned_v<T>) {
      range = sym::ValueRange::at_least(0);
    }
  });
  const std::string origin = location_str(loc);
  const SymInt u = env_.create_unbacked_symbol(fmt::format("item() at {}", origin), range);
  static const OpId id = OpRegistry::instance().id("_local_scalar_dense");
  Stack args = scalar_definition_args(t, u);
  const Tensor value = dispatch::call_for_tensors(id, args).at(0);
  unbacked_defs_[u.expr()] = {fake_of(value), -1};
  scalar_origins_[u.expr()] = origin;
  if (bodies_.empty()) {
    scalars_defined_here_[u.expr()] = value_of(value)->producer();
  } else {
    BodyScope& body = *bodies_.back();
    body.symbols[u.expr()] = value_of(value)->producer();
    body_symbols_[u.expr()] =
        fmt::format("item<SymInt>() at {} in {} of {}", origin, body.name, body.op);
  }
  last_symbolic_size_read() = loc;  // Note [Where a symbolic condition was written]
  return u;
}

void Tracer::record_scalar_ranges(const std::unordered_map<sym::ExprPtr, graph::Node*>& defined) {
  for (const auto& [s, node] : defined) {
    const sym::SymbolInfo* info = env_.info(s);
    if (info == nullptr) continue;
    std::string checks;
    for (const sym::RuntimeAssert& a : env_.runtime_asserts()) {
      const std::vector<sym::ExprPtr> uses = sym::free_symbols(a.condition);
      if (uses.size() == 1 && uses[0] == s)
        checks += fmt::format("{}{} at {}", checks.empty() ? "" : "; ", sym::to_string(a.condition),
                              a.origin);
    }
    auto bound = [](int64_t v, int64_t infinite) {
      return IValue(v == infinite ? SymDimVector{} : SymDimVector{v});
    };
    node->set_arg(2, graph::Arg::constant(bound(info->range.lower, sym::ValueRange::kNegInf)));
    node->set_arg(3, graph::Arg::constant(bound(info->range.upper, sym::ValueRange::kPosInf)));
    node->set_arg(4, graph::Arg::constant(IValue(checks)));
  }
}

void Tracer::define_scalar_symbols_used_by(const Stack& args) {
  std::vector<sym::ExprPtr> symbols;
  for_each_symbol_of(args, [&](sym::ExprPtr s) {
    if (scalar_origins_.contains(s) && !scalars_defined_here_.contains(s) &&
        std::find(symbols.begin(), symbols.end(), s) == symbols.end())
      symbols.push_back(s);
  });
  static const OpId id = OpRegistry::instance().id("_local_scalar_dense");
  for (sym::ExprPtr s : symbols) {
    Stack call = scalar_definition_args(unbacked_defs_.at(s).first, SymInt::from_expr(s));
    const Tensor value = dispatch::call_for_tensors(id, call).at(0);
    scalars_defined_here_[s] = value_of(value)->producer();
  }
}

// Note [Values read inside a body]
// item<SymInt>() inside a body (a cond branch, a loop or scan body) records its
// `_local_scalar_dense` node in the body's subgraph: the symbol is bound each time the body runs,
// so a loop body reads a new value on every iteration (the interpreter and the generated code
// bind a body's symbols afresh per run). The symbol belongs to that body alone:
// - kiln::check facts on it alone become its node's value range, checked where it is bound; a
//   fact that relates it to other symbols has no place to be checked and raises (a segment checks
//   its facts after it runs, when the body's value is gone). So does a fact inside a body about
//   a value of the enclosing graph: eagerly it holds only if the body runs (the branch taken, a
//   loop that iterates), so it cannot be a fact of the whole graph.
// - A data-dependent size of an op inside the body (a boolean mask's true count) is the body's
//   own in the same way: bound from the output on every run (Note [A node that defines a size]
//   in src/graph/graph.cpp), not to size a loop or scan result, not to be used outside, and with
//   no kiln::check about it (nothing checks it per run). Ops tagged as data-dependent (nonzero,
//   unique) still raise inside a body.
// - A value of an enclosing scope (an item<SymInt>() or a nonzero() length read outside) that a
//   body uses is lifted like a closure: the tensor that holds it becomes a body input, and the
//   body reads the value again from it (lift_symbols_into_body).
// - A result of a cond branch with a size over it gets a fresh symbol of the node (Note [Branches
//   of different sizes]); a loop, scan or map body's result may not have such a size (it must
//   keep its sizes from run to run), nor may anything outside the body use the symbol (a SymInt
//   carried out by a C++ reference): both raise, naming the value and where it was read.
std::optional<sym::ExprPtr> Tracer::body_symbol_in(SymIntArrayRef sizes,
                                                   const BodyScope* body) const {
  for (SymInt size : sizes) {
    if (!size.is_symbolic()) continue;
    for (sym::ExprPtr s : sym::free_symbols(size.expr()))
      if (body != nullptr ? body->owns(s) : body_symbols_.contains(s)) return s;
  }
  return std::nullopt;
}

void Tracer::lift_symbols_into_body(const Stack& args) {
  BodyScope& body = *bodies_.back();
  std::vector<sym::ExprPtr> symbols;
  for_each_symbol_of(args, [&](sym::ExprPtr s) {
    const sym::SymbolInfo* info = env_.info(s);
    if (info == nullptr || !info->unbacked || body.owns(s) || body.lifted_symbols.contains(s) ||
        !unbacked_defs_.contains(s))
      return;
    body.lifted_symbols.insert(s);
    symbols.push_back(s);
  });
  static const OpId id = OpRegistry::instance().id("_local_scalar_dense");
  for (sym::ExprPtr s : symbols) {
    const auto& [tensor, dim] = unbacked_defs_.at(s);
    if (dim >= 0) {
      value_of(tensor);  // a placeholder sized by s binds it
      continue;
    }
    // A value: the body reads it again from the lifted 0-dim tensor that holds it.
    Stack call = scalar_definition_args(tensor, SymInt::from_expr(s));
    dispatch::call_for_tensors(id, call);
  }
}

void Tracer::refuse_symbols_of_closed_bodies(const OpDef& op, const Stack& args) const {
  for_each_symbol_of(
      args,
      [&](sym::ExprPtr s) {
        KILN_CHECK(!closed_body_symbols_.contains(s), ValueError,
                   "{}: {} uses {}, the value of {}, outside that body; a value read inside a "
                   "body is known only while it runs. Return it from the body as a tensor "
                   "(e.g. the tensor it was read from) and read it again outside",
                   req_.function_name, op.name, s->name(), body_symbols_.at(s));
      },
      /*tensor_sizes=*/true);
}

// Note [Higher-order ops under a trace]
// kiln::cond with a fake predicate, kiln::while_loop, kiln::scan and kiln::map do not run their
// bodies inline: a cond or while_loop would need the predicate's value (a graph break), and an
// unrolled scan would be a graph that grows with its length and recompiles for every length. Each
// body runs once on fresh fakes of what it receives, in a BodyScope: the ops it calls are recorded
// into the scope's own graph, which becomes a subgraph of one cond / while_loop / scan node in the
// enclosing graph (Note [Subgraphs of a higher-order op] in src/graph/graph.h). A tensor of an
// enclosing scope that a body reads (a closure, a parameter) is lifted: a placeholder of the body,
// and an operand (cond) or additional input (while_loop) of the node, valued in the enclosing scope
// (lifted there in turn when that is a body too: nesting works scope by scope). Bodies of one node
// take the same inputs: the second body starts with the first's captures, and the first gets the
// second's extra ones as unused inputs. What would split a graph (item(), an op that runs only
// eagerly, an effect, backward()) raises inside a body, naming the op and the body; so do a write
// to what a body receives and a result that is (a view of) it, which the eager ops refuse too.
graph::Value* Tracer::body_value_of(const Tensor& t) {
  BodyScope& body = *bodies_.back();
  if (auto it = values_.find(fake_of(t).impl()); it != values_.end()) return it->second;
  if (t.device() == Device::Meta) {
    // detach() of a body's fake: the same value (as in value_of).
    if (std::optional<Tensor> source = alias_source(t);
        source && values_.contains(source->impl())) {
      twins_[t.impl()] = *source;
      keep_.push_back(t);
      return values_.at(source->impl());
    }
  }
  // A tensor of an enclosing scope: its value there, then a new input of this body.
  graph::Value* outer = nullptr;
  {
    const ScopeSwitch leave(*this, body, /*enter=*/false);
    outer = value_of(t);
  }
  const Tensor fake = fake_of(t);
  graph::Value* v =
      body.graph.add_placeholder(fmt::format("closure{}", body.captured.size()), outer->meta());
  body.captured.push_back(t);
  values_[fake.impl()] = v;
  return v;
}

void Tracer::no_break_in_body(std::string_view what) const {
  if (bodies_.empty()) return;
  const BodyScope& body = *bodies_.back();
  throw ValueError(fmt::format(
      "{}: {}: {} inside {} of {}; a body is traced once into a subgraph and cannot split the "
      "graph there. Move it out of the body, or compute it with tensor ops (e.g. where())",
      req_.function_name, body.op, what, body.name, body.op));
}

Tracer::TracedBody Tracer::trace_body(std::string_view op, std::string_view name,
                                      std::string_view input_kind,
                                      const std::vector<Tensor>& inputs, bool contiguous_inputs,
                                      const std::vector<Tensor>& captured, const BodyFn& fn,
                                      bool clone_inputs_returned) {
  std::vector<BodyInput> body_inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor outer = fake_of(inputs[i]);
    graph::TensorMeta meta = meta_of(outer);
    if (contiguous_inputs) meta = graph::TensorMeta::contiguous(meta.dtype, meta.sizes);
    body_inputs.push_back({.name = fmt::format("{}{}", input_kind, i),
                           .what = fmt::format("{} {}", input_kind, i),
                           .meta = std::move(meta),
                           .storage_bytes = outer.impl()->storage()->nbytes()});
  }
  return trace_body(op, name, body_inputs, captured, fn, clone_inputs_returned);
}

Tracer::TracedBody Tracer::trace_body(std::string_view op, std::string_view name,
                                      const std::vector<BodyInput>& inputs,
                                      const std::vector<Tensor>& captured, const BodyFn& fn,
                                      bool clone_inputs_returned) {
  BodyScope body{.op = std::string(op), .name = std::string(name)};
  const size_t asserts_before = env_.runtime_asserts().size();
  std::vector<Tensor> fakes;
  for (const BodyInput& input : inputs) {
    const graph::TensorMeta& meta = input.meta;
    auto storage = make_intrusive<StorageImpl>(input.storage_bytes, Device::Meta);
    Tensor fake(make_intrusive<TensorImpl>(std::move(storage), meta.dtype, SymDimVector(meta.sizes),
                                           SymDimVector(meta.strides), meta.offset));
    keep_.push_back(fake);
    body.values[fake.impl()] = body.graph.add_placeholder(input.name, meta);
    fakes.push_back(std::move(fake));
  }
  for (const Tensor& c : captured) {
    // Already valued in the enclosing scope (the other body lifted it).
    const Tensor fake = fake_of(c);
    graph::Value* outer = value_of(c);
    body.values[fake.impl()] =
        body.graph.add_placeholder(fmt::format("closure{}", body.captured.size()), outer->meta());
    body.captured.push_back(c);
  }
  std::vector<Tensor> results;
  std::vector<graph::Value*> outs;
  {
    const ScopeSwitch enter(*this, body, /*enter=*/true);
    results = fn(fakes);
    for (size_t i = 0; i < results.size(); ++i) {
      KILN_CHECK(results[i].defined(), ValueError,
                 "{}: {} returned an undefined tensor as output {}; return a tensor for every "
                 "output",
                 op, name, i);
      graph::Value* v = value_of(results[i]);
      if (clone_inputs_returned && graph::input_viewed_by(v) != nullptr) {
        results[i] = results[i].clone();
        v = value_of(results[i]);
      }
      outs.push_back(v);
    }
  }
  body.graph.set_outputs(outs);
  // Note [Values read inside a body]
  const auto& asserts = env_.runtime_asserts();
  for (size_t i = asserts_before; i < asserts.size(); ++i) {
    if (asserts_checked_in_bodies_.contains(i)) continue;  // a nested body's
    const std::vector<sym::ExprPtr> uses = sym::free_symbols(asserts[i].condition);
    bool mine = false;
    for (sym::ExprPtr u : uses) {
      const sym::SymbolInfo* info = env_.info(u);
      mine |= body.owns(u);
      KILN_CHECK(!body.sizes.contains(u), NotImplementedError,
                 "{}: {}: kiln::check({}) at {} inside {} bounds {}, {}; a body checks facts only "
                 "about values it reads with item<SymInt>(). Check it outside the {}",
                 req_.function_name, op, sym::to_string(asserts[i].condition), asserts[i].origin,
                 name, u->name(), body_symbols_.at(u), op);
      // A fact about a value of the enclosing graph would hold for the whole graph, taken
      // branch or not, loop run or not: eagerly it is checked only when the body runs.
      KILN_CHECK(body.owns(u) || info == nullptr || !info->unbacked, NotImplementedError,
                 "{}: {}: kiln::check({}) at {} inside {} bounds {}, which was not read inside "
                 "this body (a value of the enclosing graph); a fact inside a body may bound only "
                 "values the body reads. Check it before the {}",
                 req_.function_name, op, sym::to_string(asserts[i].condition), asserts[i].origin,
                 name, u->name(), op);
    }
    if (!mine) continue;
    KILN_CHECK(uses.size() == 1 && env_.statically_known(asserts[i].condition) == true,
               NotImplementedError,
               "{}: {}: kiln::check({}) at {} inside {} is not a bound on one value read inside "
               "the body; the body checks only such bounds when it runs (u >= a, u <= b, u == c). "
               "Check the other sizes outside the body, or compare the value with a constant",
               req_.function_name, op, sym::to_string(asserts[i].condition), asserts[i].origin,
               name);
    asserts_checked_in_bodies_.insert(i);
  }
  record_scalar_ranges(body.symbols);
  for (const auto& [symbol, node] : body.symbols) closed_body_symbols_.insert(symbol);
  closed_body_symbols_.insert(body.sizes.begin(), body.sizes.end());
  if (op != "cond") {
    for (size_t o = 0; o < results.size(); ++o) {
      const std::optional<sym::ExprPtr> u = body_symbol_in(results[o].sym_sizes(), &body);
      KILN_CHECK(!u.has_value(), ShapeError,
                 "{}: {} returned output {} with sizes {}, which depend on {} ({}): a value known "
                 "only inside one run of the body. Results of a {} body keep their sizes from "
                 "run to run; return a tensor of a fixed size (pad it, or mask it with where())",
                 op, name, o, shape_str(results[o].sym_sizes()), sym::to_string(*u),
                 body_symbols_.at(*u), op);
    }
  }
  auto what_input = [&](const graph::Value* placeholder) {
    const auto placeholders = body.graph.placeholders();
    const size_t k = static_cast<size_t>(
        std::find(placeholders.begin(), placeholders.end(), placeholder) - placeholders.begin());
    if (k < inputs.size()) return inputs[k].what;
    return fmt::format("closed-over tensor {}", k - inputs.size());
  };
  const auto [writer, written] = graph::first_write_to_an_input(body.graph);
  KILN_CHECK(writer == nullptr, ValueError,
             "{}: {} mutated its {} ({}) in place with {}; a body may not mutate the values it "
             "receives or closes over: compute a new tensor (e.g. x.add(1) instead of x.add_(1)) "
             "and return it",
             op, name, what_input(written), graph::to_string(written->meta()),
             writer->op_def().name);
  for (size_t o = 0; o < outs.size(); ++o) {
    const graph::Value* input = graph::input_viewed_by(outs[o]);
    KILN_CHECK(input == nullptr, ValueError,
               "{}: {} returned output {} ({}) that aliases its {}; a body may not return an "
               "input or a view of one: return x.clone() instead",
               op, name, o, graph::to_string(outs[o]->meta()), what_input(input));
  }
  return {std::make_shared<graph::Graph>(std::move(body.graph)), std::move(body.captured),
          std::move(results)};
}

std::vector<Tensor> Tracer::node_outputs(const std::vector<graph::Value*>& values) {
  std::vector<Tensor> fakes;
  for (graph::Value* v : values) {
    Tensor fake = empty_tensor(SymIntArrayRef(v->meta().sizes), v->meta().dtype, Device::Meta);
    keep_.push_back(fake);
    values_[fake.impl()] = v;
    fakes.push_back(std::move(fake));
  }
  return fakes;
}

namespace {

std::string metas_text(const std::vector<Tensor>& ts, size_t i) {
  return fmt::format("{} {}", dtype_name(ts[i].dtype()), shape_str(ts[i].sym_sizes()));
}

// Symbolic sizes compare under the ShapeEnv: equal ones (s1 where a guard made s1 == 4) are
// made structurally equal by the replacements before the graph reaches a backend.
bool same_dtype_and_sizes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && shapes_equal(a.sym_sizes(), b.sym_sizes());
}

// Appends to `body` an unused input for each tensor of `captured` past its own captures.
void add_unused_captures(graph::Graph& body, size_t own, const std::vector<Tensor>& captured,
                         const std::vector<graph::TensorMeta>& metas) {
  for (size_t k = own; k < captured.size(); ++k)
    body.add_placeholder(fmt::format("closure{}", k), metas[k]);
}

}  // namespace

// Note [Branches of different sizes]
// The two branches of a cond may return an output with different sizes (as PyTorch allows since
// 2.6): where a size is not the same in both (nor known equal without a guard), the node's output
// gets a fresh unbacked symbol, bounded by the two sizes when both are integers. The node binds it
// when it runs, from the output of the branch taken (the interpreter, and the executor through
// SymbolSource::From::ExternOutputSize), and later ops compute with it like any data-dependent
// size. A body placeholder or output that meets an unbacked size of the node's takes whatever
// size the run gives it (graph::verify_higher_order).
SymDimVector Tracer::cond_output_sizes(const Tensor& a, const Tensor& b, size_t output) {
  SymDimVector sizes;
  for (int64_t d = 0; d < a.dim(); ++d) {
    const SymInt x = a.sym_sizes()[static_cast<size_t>(d)];
    const SymInt y = b.sym_sizes()[static_cast<size_t>(d)];
    // A size read inside a branch is that branch's alone (Note [Values read inside a body]):
    // the node's output gets a symbol of its own.
    const bool local = body_symbol_in(SymIntArrayRef(&x, 1)).has_value() ||
                       body_symbol_in(SymIntArrayRef(&y, 1)).has_value();
    const bool equal =
        !local && (same(x, y) || ((x.is_symbolic() || y.is_symbolic()) &&
                                  env_.statically_known(sym::eq(x.expr(), y.expr())) == true));
    if (equal) {
      sizes.push_back(x);
      continue;
    }
    const sym::ValueRange range =
        x.is_concrete() && y.is_concrete()
            ? sym::ValueRange::between(std::min(x.raw(), y.raw()), std::max(x.raw(), y.raw()))
            : sym::ValueRange::at_least(0);
    sizes.push_back(env_.create_unbacked_symbol(
        fmt::format("size {} of cond output {} ({} or {})", d, output, x, y), range));
  }
  return sizes;
}

std::vector<Tensor> Tracer::trace_cond(const Tensor& pred, const BodyFn& true_fn,
                                       const BodyFn& false_fn,
                                       const std::vector<Tensor>& operands) {
  TracedBody on_true =
      trace_body("cond", "true_fn", "operand", operands, false, {}, true_fn, false);
  TracedBody on_false =
      trace_body("cond", "false_fn", "operand", operands, false, on_true.captured, false_fn, false);
  const std::vector<Tensor>& a = on_true.results;
  const std::vector<Tensor>& b = on_false.results;
  KILN_CHECK(a.size() == b.size(), ValueError,
             "cond: true_fn returned {} outputs but false_fn {}; both branches return the same "
             "number of tensors",
             a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    KILN_CHECK(a[i].dtype() == b[i].dtype() && a[i].dim() == b[i].dim(), ShapeError,
               "cond: true_fn returned output {} as {} but false_fn as {}; both branches return "
               "the same dtypes and numbers of dims (their sizes may differ)",
               i, metas_text(a, i), metas_text(b, i));
  std::vector<graph::Value*> args;
  for (const Tensor& t : operands) args.push_back(value_of(t));
  std::vector<graph::TensorMeta> capture_metas;
  for (const Tensor& t : on_false.captured) {
    args.push_back(value_of(t));
    capture_metas.push_back(args.back()->meta());
  }
  add_unused_captures(*on_true.graph, on_true.captured.size(), on_false.captured, capture_metas);
  std::vector<graph::TensorMeta> metas;
  for (size_t i = 0; i < a.size(); ++i)
    metas.push_back(graph::TensorMeta::contiguous(a[i].dtype(), cond_output_sizes(a[i], b[i], i)));
  graph::Value* pred_value = value_of(pred);
  std::vector<graph::Value*> values = current_graph().add_call(
      op_id("cond"), {graph::Arg::value(pred_value), graph::Arg::list(std::move(args))},
      std::move(metas));
  KILN_CHECK(!values.empty(), ValueError,
             "cond: the branches return no tensors; a cond must return at least one");
  values[0]->producer()->set_subgraphs(
      {{"true_fn", std::move(on_true.graph)}, {"false_fn", std::move(on_false.graph)}});
  return node_outputs(values);
}

std::vector<Tensor> Tracer::trace_while_loop(const LoopConditionFn& cond_fn, const BodyFn& body_fn,
                                             const std::vector<Tensor>& carried) {
  const BodyFn condition = [&](const std::vector<Tensor>& c) {
    return std::vector<Tensor>{cond_fn(c)};
  };
  // Carries are contiguous in the bodies: the body's results are (the node's outputs are made
  // contiguous), and they are the next iteration's carries.
  TracedBody check =
      trace_body("while_loop", "cond_fn", "carry", carried, true, {}, condition, true);
  TracedBody body =
      trace_body("while_loop", "body_fn", "carry", carried, true, check.captured, body_fn, false);
  KILN_CHECK(check.results.size() == 1, ValueError, "while_loop: cond_fn must return one tensor");
  bool one_element = true;
  for (SymInt s : check.results[0].sym_sizes()) one_element &= same(s, 1);
  KILN_CHECK(check.results[0].dtype() == ScalarType::Bool && one_element, ValueError,
             "while_loop: cond_fn's result must be a bool tensor with one element, got {}; "
             "compare to get one (e.g. i < n)",
             metas_text(check.results, 0));
  const std::vector<Tensor>& next = body.results;
  KILN_CHECK(next.size() == carried.size(), ValueError,
             "while_loop: body_fn returned {} carries for {} it received; return one tensor per "
             "carry",
             next.size(), carried.size());
  for (size_t i = 0; i < carried.size(); ++i)
    KILN_CHECK(same_dtype_and_sizes(next[i], fake_of(carried[i])), ShapeError,
               "while_loop: body_fn returned carry {} as {} but received it as {}; a carry keeps "
               "its dtype and sizes (cast or reshape it back before returning it)",
               i, metas_text(next, i), metas_text(carried, i));
  std::vector<graph::Value*> carries, additional;
  std::vector<graph::TensorMeta> metas, capture_metas;
  for (const Tensor& t : carried) {
    carries.push_back(value_of(t));
    metas.push_back(
        graph::TensorMeta::contiguous(carries.back()->meta().dtype, carries.back()->meta().sizes));
  }
  for (const Tensor& t : body.captured) {
    additional.push_back(value_of(t));
    capture_metas.push_back(additional.back()->meta());
  }
  add_unused_captures(*check.graph, check.captured.size(), body.captured, capture_metas);
  std::vector<graph::Value*> values = current_graph().add_call(
      op_id("while_loop"),
      {graph::Arg::list(std::move(carries)), graph::Arg::list(std::move(additional))},
      std::move(metas));
  values[0]->producer()->set_subgraphs(
      {{"cond_fn", std::move(check.graph)}, {"body_fn", std::move(body.graph)}});
  return node_outputs(values);
}

// One scan node over the leading dim of `xs` (kiln::scan moved the scanned dim there): its
// subgraph combine_fn takes the carries, one slice of each xs, then what it closes over, and
// returns the next carries, then the step's outputs; the node returns the final carries, then the
// step outputs stacked along a new dim 0. Carries and slices are contiguous in the body: the
// body's results are the next carries, and a slice of a contiguous tensor along dim 0 is.
ScanResult Tracer::trace_scan(const ScanFn& combine_fn, const std::vector<Tensor>& init,
                              const std::vector<Tensor>& xs, bool reverse, std::string_view op,
                              std::string_view body_name) {
  std::vector<BodyInput> inputs;
  auto add_input = [&](const Tensor& t, std::string name, std::string what, bool slice) {
    const Tensor outer = fake_of(t);
    const graph::TensorMeta meta = meta_of(outer);
    const SymIntArrayRef all(meta.sizes);
    const SymDimVector sizes(all.begin() + (slice ? 1 : 0), all.end());
    inputs.push_back({.name = std::move(name),
                      .what = std::move(what),
                      .meta = graph::TensorMeta::contiguous(meta.dtype, sizes),
                      .storage_bytes = outer.impl()->storage()->nbytes()});
  };
  for (size_t k = 0; k < init.size(); ++k)
    add_input(init[k], fmt::format("carry{}", k), fmt::format("carry {}", k), false);
  for (size_t k = 0; k < xs.size(); ++k)
    add_input(xs[k], fmt::format("x{}", k), fmt::format("slice of xs {}", k), true);
  const size_t num_carries = init.size();
  const BodyFn step = [&](const std::vector<Tensor>& in) {
    const std::vector<Tensor> carry(in.begin(), in.begin() + static_cast<ptrdiff_t>(num_carries));
    const std::vector<Tensor> x(in.begin() + static_cast<ptrdiff_t>(num_carries), in.end());
    auto [next, y] = combine_fn(carry, x);
    KILN_CHECK(next.size() == num_carries, ValueError,
               "scan: combine_fn returned {} carries for {} it received; return one tensor per "
               "carry",
               next.size(), num_carries);
    next.insert(next.end(), y.begin(), y.end());
    return next;
  };
  TracedBody body = trace_body(op, body_name, inputs, {}, step, false);
  const std::vector<Tensor>& results = body.results;
  for (size_t k = 0; k < num_carries; ++k)
    KILN_CHECK(same_dtype_and_sizes(results[k], fake_of(init[k])), ShapeError,
               "scan: combine_fn returned carry {} as {} but received it as {}; a carry keeps "
               "its dtype and sizes (cast or reshape it back before returning it)",
               k, metas_text(results, k), metas_text(init, k));
  if (results.empty()) return {};  // nothing to compute: a body has no effects
  std::vector<graph::Value*> carries, slices, additional;
  std::vector<graph::TensorMeta> metas;
  for (const Tensor& t : init) carries.push_back(value_of(t));
  for (const Tensor& t : xs) slices.push_back(value_of(t));
  for (const Tensor& t : body.captured) additional.push_back(value_of(t));
  const SymInt length = slices[0]->meta().sizes[0];
  for (size_t k = 0; k < results.size(); ++k) {
    SymDimVector sizes(results[k].sym_sizes().begin(), results[k].sym_sizes().end());
    if (k >= num_carries) sizes.insert(0, length);
    metas.push_back(graph::TensorMeta::contiguous(results[k].dtype(), sizes));
  }
  std::vector<graph::Value*> values = current_graph().add_call(
      op_id("scan"),
      {graph::Arg::list(std::move(carries)), graph::Arg::list(std::move(slices)),
       graph::Arg::list(std::move(additional)), graph::Arg::constant(IValue(reverse))},
      std::move(metas));
  values[0]->producer()->set_subgraphs({{"combine_fn", std::move(body.graph)}});
  std::vector<Tensor> outs = node_outputs(values);
  ScanResult result;
  result.carry.assign(outs.begin(), outs.begin() + static_cast<ptrdiff_t>(num_carries));
  result.ys.assign(outs.begin() + static_cast<ptrdiff_t>(num_carries), outs.end());
  return result;
}

// Installs the tracer on this thread for the duration of a trace (Note [Fake tensors]).
class TraceScope {
 public:
  TraceScope(Tracer* tracer, sym::ShapeEnv* env)
      : include_(DispatchKeySet(DispatchKey::Trace)),
        env_scope_(env),
        saved_tracer_(g_current_tracer),
        saved_hooks_(current_tracing_hooks()) {
    g_current_tracer = tracer;
    current_tracing_hooks() = tracer;
  }
  ~TraceScope() {
    g_current_tracer = saved_tracer_;
    current_tracing_hooks() = saved_hooks_;
  }

 private:
  dispatch::IncludeKeysGuard include_;
  sym::ShapeEnv::Scope env_scope_;
  Tracer* saved_tracer_;
  TracingHooks* saved_hooks_;
};

// Runs real computation in the middle of a trace (a segment at a graph break).
class PauseScope {
 public:
  PauseScope()
      : exclude_(DispatchKeySet(DispatchKey::Trace)),
        env_scope_(nullptr),
        saved_tracer_(g_current_tracer),
        saved_hooks_(current_tracing_hooks()) {
    g_current_tracer = nullptr;
    current_tracing_hooks() = nullptr;
  }
  ~PauseScope() {
    g_current_tracer = saved_tracer_;
    current_tracing_hooks() = saved_hooks_;
  }

 private:
  dispatch::ExcludeKeysGuard exclude_;
  sym::ShapeEnv::Scope env_scope_;
  Tracer* saved_tracer_;
  TracingHooks* saved_hooks_;
};

std::vector<Tensor> run_paused(const Segment& segment, const std::vector<Tensor>& inputs,
                               const TraceRequest& req, int depth) {
  PauseScope pause;
  if (segment.reference)
    return run_verified(segment, inputs, req.function_name, req.options->backend, depth);
  return segment.compiled(inputs);
}

CompiledGraph compile_paused(const Backend& backend, const graph::Graph& graph,
                             std::span<const Tensor> inputs, const CompileContext& context) {
  PauseScope pause;
  return backend(graph, inputs, context);
}

// Note [Backward in a compiled function]
// backward() called on a fake tensor inside kiln::compile is a graph break, as it is for Dynamo
// without compiled autograd: the segment so far ends with the root (and its gradient) among its
// outputs, the segment's graph (whose inputs require grad, so the backend compiles it through AOT
// autograd) runs, and the real root's backward() runs through the eager engine, which calls the
// compiled backward and accumulates into the parameters' .grad. Tracing goes on in a new segment
// (key ""). Code after the break that reads a gradient (an optimizer step, gradient clipping)
// reads a Grad input: the parameter's .grad looked up on every call, with its dtype and sizes
// guarded, because zero_grad() and backward() replace the gradient tensor from call to call. A
// gradient is recognized as such when it is the .grad of a module parameter the function
// received, or of a tensor passed to TracingHooks::grad_of (what the optimizers' traced steps
// do). On a cache hit the runtime does the same: run the segment, run the root's backward(), go
// on with the child.
void Tracer::backward(const Tensor& root, const Tensor& gradient, std::optional<bool> retain_graph,
                      bool create_graph, const std::source_location& loc) {
  no_break_in_body("backward()");
  const std::string reason = "backward() runs the eager autograd engine";
  if (req_.options->fullgraph) graph_break_error(reason, loc);
  KILN_CHECK(!create_graph, NotImplementedError,
             "{}: backward(create_graph=true) at {} inside a compiled function is not supported; "
             "call it outside the compiled function",
             req_.function_name, location_str(loc));
  std::vector<Tensor> needed{root};
  if (gradient.defined()) needed.push_back(gradient);
  finish_segment(BreakPoint{.kind = BreakPoint::Kind::Backward,
                            .retain_graph = retain_graph,
                            .reason = reason,
                            .where = location_str(loc)},
                 needed);
  seg_->brk->tensor = prior_.at(fake_of(root).impl());
  if (gradient.defined()) seg_->brk->gradient = prior_.at(fake_of(gradient).impl());
  if (!replaying()) {  // a replayed prefix already ran its backward for this call
    PauseScope pause;
    run_backward(*seg_->brk, outputs_by_depth_);
  }
  result_.breaks += 1;
  result_.break_reasons.push_back(fmt::format("{}: {}", location_str(loc), reason));
  start_segment("");
}

// Note [Effects] (segment.h).
void Tracer::effect(std::string what, std::function<void()> fn, bool touches_traced_tensors) {
  no_break_in_body(fmt::format("{} (state outside the graph, e.g. a random op's generator)", what));
  if (touches_traced_tensors && segment_has_ops()) {
    const std::string reason = fmt::format("{} changes state outside the graph", what);
    finish_segment(BreakPoint{.kind = BreakPoint::Kind::Effect, .reason = reason}, {});
    result_.breaks += 1;
    result_.break_reasons.push_back(reason);
    start_segment("");
  }
  if (!replaying()) {
    PauseScope pause;
    fn();
  }
  seg_->effects.push_back(Effect{std::move(what), std::move(fn)});
}

void Tracer::guard(std::string what, std::function<bool()> holds) {
  guards().values.push_back(ValueGuard{std::move(what), std::move(holds)});
}

void Tracer::run_untraced(const std::function<void()>& fn) {
  PauseScope pause;
  fn();
}

std::string Tracer::lifted_source(const Tensor& real) {
  value_of(real);
  const auto it = inputs_.find(fake_of(real).impl());
  return it != inputs_.end() ? it->second.source : std::string("param");
}

const Tensor& Tracer::grad_of(const Tensor& param) {
  grad_owners_.emplace_back(param, lifted_source(param));  // the gradient's source names it
  return param.grad();
}

void Tracer::name_state(const Tensor& owner, std::string what, const Tensor& state) {
  state_names_[state.impl()] = {
      state, owner.defined() ? fmt::format("{}.{}", lifted_source(owner), what) : std::move(what)};
}

TraceResult Tracer::run() {
  auto first = std::make_unique<Segment>();
  seg_ = first.get();
  if (replaying())
    replay_scratch_ = std::move(first);
  else
    result_.root = std::move(first);
  env_.set_data_dependent_handler(
      [this](sym::ExprPtr c, std::source_location loc) { return data_dependent(c, loc); });
  env_.set_data_dependent_int_handler(
      [this](sym::ExprPtr v, std::source_location loc) { data_dependent_int(v, loc); });
  std::vector<Tensor> fake_results;
  {
    TraceScope scope(this, &env_);
    start_inputs();
    std::vector<ArgValue> traced = *req_.args;
    for (size_t i = 0; i < traced.size(); ++i)
      if (fake_args_[i].defined()) traced[i] = fake_args_[i];
    fake_results = (*req_.body)(traced);
    for (size_t i = 0; i < fake_results.size(); ++i)
      KILN_CHECK(fake_results[i].defined(), ValueError,
                 "{}: result {} of the compiled function is an undefined tensor",
                 req_.function_name, i);
    // A result an earlier segment computed, and this one did not touch, comes from that
    // segment's outputs as it is (with its grad_fn), not through this segment's graph.
    std::vector<std::optional<OutputRef>> earlier;
    std::vector<Tensor> computed_here;
    for (const Tensor& r : fake_results) {
      const TensorImpl* impl = fake_of(r).impl();
      const auto prior = prior_.find(impl);
      if (!values_.contains(impl) && prior != prior_.end()) {
        earlier.emplace_back(prior->second);
      } else {
        earlier.emplace_back(std::nullopt);
        computed_here.push_back(r);
      }
    }
    finish_segment(std::nullopt, computed_here);
    for (size_t i = 0; i < fake_results.size(); ++i)
      seg_->results.push_back(earlier[i] ? *earlier[i]
                                         : prior_.at(fake_of(fake_results[i]).impl()));
  }
  for (const OutputRef& ref : seg_->results)
    result_.results.push_back(outputs_by_depth_[ref.segment][ref.index]);
  for (const sym::ShapeGuard& g : env_.guards())
    result_.shape_guards.push_back(fmt::format("{}  # {}", sym::to_string(g.condition), g.origin));
  for (const sym::SymbolInfo& info : env_.symbols())
    result_.symbols_text.push_back(
        fmt::format("{} = {} ({}){}", sym::to_string(info.symbol),
                    info.hint ? std::to_string(*info.hint) : std::string("?"), info.source,
                    info.unbacked ? ", unbacked" : ""));
  result_.trace_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - trace_start_).count() -
      result_.backend_seconds;
  for (size_t i = 0; i < result_.symbols.symbols.size(); ++i) {
    const sym::SymbolInfo* info = env_.info(result_.symbols.symbols[i]);
    if (info == nullptr) continue;
    result_.guards.ranges.push_back(
        {static_cast<int>(i), std::max<int64_t>(info->range.lower, 0), info->range.upper});
  }
  return std::move(result_);
}

}  // namespace

TraceResult trace(const TraceRequest& request) {
  Tracer tracer(request);
  return tracer.run();
}

namespace {
// The Trace key's handler (Note [Fake tensors]); outside a trace the key falls through.
void handle_trace_key(const OpDef& op, Stack& args, Stack& outputs, DispatchKeySet keys) {
  if (g_current_tracer != nullptr) {
    g_current_tracer->handle_op(op, args, outputs);
    return;
  }
  dispatch::redispatch(op, args, outputs, keys.remove(DispatchKey::Trace));
}
const bool g_trace_key_registered = [] {
  dispatch::set_fallback(DispatchKey::Trace, handle_trace_key);
  return true;
}();
}  // namespace

}  // namespace kiln::capture
