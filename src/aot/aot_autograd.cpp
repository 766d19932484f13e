#include "src/aot/aot_autograd.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/ops/creation.h"
#include "src/aot/absent_tangents.h"
#include "src/aot/functionalize.h"
#include "src/autograd/autograd_meta.h"
#include "src/graph/decompose.h"
#include "src/sym/shape_env.h"
#include "src/trace/logs.h"
#include "src/trace/trace.h"

namespace kiln::aot {
namespace {

// What every call of one compiled graph shares.
struct CompiledFunctionState {
  capture::CompiledGraph forward;
  capture::CompiledGraph backward;
  int num_forward_outputs = 0;  // the graph's outputs, then the mutated inputs' final values
  int num_user_outputs = 0;
  std::vector<int> mutated_inputs;
  std::vector<int> tangent_of_output;
  std::vector<int> grad_primals;
  int num_tangents = 0;
  // Note [A saved input that the graph mutates]: mutated inputs whose value from before the
  // update the backward reads, with their sources.
  std::vector<std::pair<int, std::string>> backward_reads_mutated;
  std::string name;
  bool symbolic = false;  // Note [AOT autograd with symbolic sizes]
  // Note [Absent tangents]: the backward graph, and one compiled specialization per set of
  // tangents that did not arrive, made on first use.
  struct Specialized {
    capture::CompiledGraph backward;
    std::vector<bool> grad_defined;
  };
  graph::Graph backward_graph;
  int num_saved = 0;
  CompileInference compile;
  std::shared_ptr<sym::ShapeEnv> frozen_shape_env;  // Note [A frozen ShapeEnv]
  trace::CompileId compile_id;
  mutable std::mutex specialized_mutex;
  mutable std::map<std::vector<bool>, std::shared_ptr<const Specialized>> specialized;

  std::shared_ptr<const Specialized> specialized_for(const std::vector<bool>& absent) const {
    std::lock_guard<std::mutex> lock(specialized_mutex);
    auto it = specialized.find(absent);
    if (it != specialized.end()) return it->second;
    const sym::ShapeEnv::Scope env_scope(frozen_shape_env.get());
    SpecializedBackward s =
        specialize_for_absent_tangents(backward_graph, num_saved, absent, symbolic);
    trace::CompileIdScope scope(compile_id);
    trace::log_artifact("aot_backward_specialized", compile_id, [&] {
      std::string mask;
      for (bool a : absent) mask += a ? '0' : '1';
      return fmt::format("tangents present: {}\n{}", mask, graph::to_string(s.graph));
    });
    auto made = std::make_shared<Specialized>();
    made->backward = compile(s.graph, {});
    made->grad_defined = std::move(s.grad_defined);
    specialized.emplace(absent, made);
    return made;
  }
};

// Note [Compiled autograd function].
class CompiledFunctionBackward final : public autograd::Node {
 public:
  CompiledFunctionBackward(std::shared_ptr<const CompiledFunctionState> state,
                           std::vector<Tensor> saved)
      : state_(std::move(state)), saved_(std::move(saved)) {}

  std::string name() const override { return "CompiledFunctionBackward"; }

  autograd::TensorList apply(autograd::TensorList&& grads) override {
    KILN_CHECK(!GradMode::is_enabled(), NotImplementedError,
               "{}: double backward (create_graph=true) through a kiln::compile region is not "
               "supported: its compiled backward records no autograd history. Run the region "
               "eagerly (backend=\"eager\") to differentiate twice",
               state_->name);
    KILN_CHECK(!released_, ValueError,
               "{}: backward through this compiled region a second time, but its saved tensors "
               "were freed after the first backward. Pass retain_graph=true to the first "
               "backward() if you need to run it again",
               state_->name);
    if (!state_->backward_reads_mutated.empty()) {  // Note [A saved input that the graph mutates]
      const auto& [index, source] = state_->backward_reads_mutated.front();
      throw Error(fmt::format(
          "{}: one of the tensors needed for gradient computation (graph input {}, {}) has been "
          "modified by an in-place operation: the compiled function updated it in place after "
          "an op saved it for the backward, as eager code raises for. Clone it before the "
          "in-place op, or make the op out of place",
          state_->name, index, source));
    }
    std::vector<Tensor> inputs = saved_;
    std::vector<bool> absent(static_cast<size_t>(state_->num_tangents));
    bool any_absent = false;
    for (size_t t = 0; t < absent.size(); ++t) {
      Tensor g = t < grads.size() ? grads[t] : Tensor();
      absent[t] = !g.defined();
      any_absent |= absent[t];
      if (!g.defined() && state_->symbolic) {
        // Note [AOT autograd with symbolic sizes]: zeros keep every symbol's binding; the
        // specialized graph keeps an input for them but never reads it (Note [Absent tangents]).
        const autograd::GradMeta& meta = input_metadata()[t];
        g = zeros(meta.sizes, meta.dtype);
      }
      if (g.defined()) inputs.push_back(g.is_contiguous() ? g : g.contiguous());
    }
    std::vector<Tensor> out;
    if (!any_absent) {
      out = state_->backward(inputs);
    } else {
      // Note [Absent tangents]: gradients of the branches that got none stay undefined.
      const auto specialized = state_->specialized_for(absent);
      std::vector<Tensor> computed = specialized->backward(inputs);
      size_t next = 0;
      for (bool defined : specialized->grad_defined)
        out.push_back(defined && next < computed.size() ? computed[next++] : Tensor());
    }
    KILN_CHECK(out.size() == next_edges_.size(), ValueError,
               "{}: the compiled backward returned {} gradients for {} inputs", state_->name,
               out.size(), next_edges_.size());
    return out;
  }

  void release_variables() override {
    saved_.clear();
    released_ = true;
  }

 private:
  std::shared_ptr<const CompiledFunctionState> state_;
  std::vector<Tensor> saved_;
  bool released_ = false;
};

std::vector<Tensor> run_forward(const std::shared_ptr<const CompiledFunctionState>& state,
                                std::span<const Tensor> inputs) {
  std::vector<Tensor> results;
  {
    NoGradGuard no_grad;
    results = state->forward(inputs);
  }
  const size_t n = static_cast<size_t>(state->num_forward_outputs);
  std::vector<Tensor> saved(results.begin() + static_cast<std::ptrdiff_t>(n), results.end());
  // A saved value that is a mutated input's memory (the partitioner saving the input to
  // recompute from it) must keep the value from before the copy-back below overwrites it (Note
  // [A saved input that the graph mutates]).
  for (Tensor& s : saved)
    for (int i : state->mutated_inputs)
      if (s.defined() && s.impl()->storage().get() == inputs[i].impl()->storage().get()) {
        NoGradGuard no_grad;
        s = s.clone();
        break;
      }
  // Copy-backs (Note [Functionalization]): what the graph wrote into its inputs.
  {
    NoGradGuard no_grad;
    for (size_t k = 0; k < state->mutated_inputs.size(); ++k)
      inputs[state->mutated_inputs[k]].copy_(results[state->num_user_outputs + k]);
  }
  results.resize(static_cast<size_t>(state->num_user_outputs));
  if (!GradMode::is_enabled()) return results;
  auto node = std::make_shared<CompiledFunctionBackward>(state, std::move(saved));
  for (int i : state->grad_primals)
    node->mutable_next_edges().push_back(autograd::gradient_edge(inputs[i]));
  for (size_t j = 0; j < results.size(); ++j) {
    if (state->tangent_of_output[j] < 0) continue;
    const uint32_t index = node->add_input_metadata(results[j]);
    autograd::set_history(results[j], node, index);
  }
  return results;
}

// Outputs that alias an input (an input returned as is, or a view of one) would need the view
// relationship replayed on the real tensors; such graphs stay on the eager engine for now. So do
// graphs that return one value twice (one tensor cannot be two outputs of the node).
void check_outputs_are_fresh(const JointGraph& joint) {
  std::vector<const graph::Value*> seen;
  for (int j = 0; j < joint.num_forward_outputs; ++j) {
    const graph::Value* v = joint.graph.outputs()[j];
    KILN_CHECK(std::find(seen.begin(), seen.end(), v) == seen.end(), NotImplementedError,
               "AOT autograd: output {} is also an earlier output; such graphs run through the "
               "eager autograd engine for now",
               j);
    seen.push_back(v);
    const graph::Value* base = v;
    while (base->producer()->kind() == graph::NodeKind::Call &&
           base->producer()->op_def().has_tag(kTagView) && !base->producer()->inputs().empty())
      base = base->producer()->inputs()[0];
    KILN_CHECK(base->producer()->kind() != graph::NodeKind::Placeholder, NotImplementedError,
               "AOT autograd: output {} aliases input {}; graphs that return an input or a view "
               "of one run through the eager autograd engine for now",
               j, base->producer()->source());
  }
}

// Note [Batch norm's running statistics, functionalized] (functionalize.cpp): batch norm is
// recorded whole, so that its backward is native_batch_norm_backward's closed form; both are
// decomposed before partitioning, so that min-cut sees (and may recompute) their pointwise parts.
void decompose_normalizations(graph::Graph& g) {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> kept;
    for (const std::string& name : graph::decomposed_op_names())
      if (name != "native_batch_norm" && name != "native_batch_norm_backward") kept.push_back(name);
    return kept;
  }();
  static const std::vector<std::string_view> keep(names.begin(), names.end());
  graph::decompose(g, keep);
}

bool has_symbolic_inputs(const graph::Graph& g) {
  for (const graph::Value* p : g.placeholders())
    if (p->meta().is_symbolic()) return true;
  return false;
}

// Symbolic inputs, data-dependent sizes or values (unbacked symbols: nonzero, item<SymInt>()),
// or a higher-order op, whose backward may make unbacked symbols (Note [A while_loop's history]
// in joint_graph.cpp): the trace's ShapeEnv must be active to reason about them.
bool needs_shape_env(const graph::Graph& g) {
  if (has_symbolic_inputs(g)) return true;
  for (const graph::Node* node : g.calls()) {
    const OpDef& op = node->op_def();
    if (op.has_tag(kTagHigherOrder) || op.has_tag(kTagDefinesSymbol) ||
        op.has_tag(kTagDynamicOutput))
      return true;
  }
  return false;
}

// Note [AOT autograd with symbolic sizes]: the compiled backward learns each symbol's value from
// an input whose size or stride is that symbol; one it cannot learn fails here, not at run time.
void check_symbols_are_bound(const graph::Graph& g, std::string_view what) {
  std::set<sym::ExprPtr> bound, used;
  for (const graph::Value* p : g.placeholders()) {
    const graph::TensorMeta& m = p->meta();
    for (size_t d = 0; d < m.sizes.size(); ++d) {
      if (m.sizes[d].is_symbolic() && m.sizes[d].expr()->is_symbol())
        bound.insert(m.sizes[d].expr());
      // Never through the stride of a dim of size 0 or 1 (Note [Where a symbol is read] in
      // src/lower/graph_lowering.cpp): the lowering and the interpreter do not read it there.
      const SymInt stride = m.strides[d];
      if (stride.is_symbolic() && stride.expr()->is_symbol() &&
          (m.sizes[d].is_symbolic() || m.sizes[d].raw() > 1))
        bound.insert(stride.expr());
    }
  }
  const auto use = [&](SymInt s) {
    if (!s.is_symbolic()) return;
    for (sym::ExprPtr free : sym::free_symbols(s.expr())) used.insert(free);
  };
  for (const graph::Node* node : g.nodes()) {
    // A data-dependent size (nonzero's length, a while_loop's iteration count) first met as an
    // output size is bound by the node that produces it, when it runs.
    if (node->kind() == graph::NodeKind::Call &&
        (node->op_def().has_tag(kTagHigherOrder) || node->op_def().has_tag(kTagDynamicOutput)))
      for (const graph::Value* v : node->outputs())
        for (SymInt s : v->meta().sizes)
          if (s.is_symbolic() && s.expr()->is_symbol() && !used.contains(s.expr()))
            bound.insert(s.expr());
    // _local_scalar_dense binds the symbol it defines (Note [Scalar outputs in a graph]).
    if (node->kind() == graph::NodeKind::Call && node->op_def().has_tag(kTagDefinesSymbol) &&
        node->args().size() > 1 && node->args()[1].is_constant()) {
      const SymInt defined = node->args()[1].as_constant().to_sym_int();
      if (defined.is_symbolic()) bound.insert(defined.expr());
    }
    for (const graph::Value* v : node->outputs()) {
      for (SymInt s : v->meta().sizes) use(s);
      for (SymInt s : v->meta().strides) use(s);
      use(v->meta().offset);
    }
    if (node->kind() != graph::NodeKind::Call) continue;
    for (const graph::Arg& arg : node->args()) {
      if (arg.is_value() || arg.is_list()) continue;
      const IValue& c = arg.as_constant();
      if (c.is_int()) use(c.to_sym_int());
      if (c.is_int_list())
        for (SymInt s : c.sym_int_list()) use(s);
    }
  }
  for (sym::ExprPtr s : used)
    KILN_CHECK(bound.contains(s), NotImplementedError,
               "AOT autograd: the {} graph needs the value of {}, but none of its inputs has it "
               "as a size or stride (Note [AOT autograd with symbolic sizes]); the graph runs "
               "through the eager autograd engine",
               what, s->name());
}

// Note [A saved input that the graph mutates]
// Eagerly, an op that saves an input for its backward (w * x saves x) followed by an in-place
// update of that input (x.mul_(2) under no_grad) makes backward() raise: the saved tensor's
// version moved. The functionalized graph has no versions: its backward would read the input's
// value from before the update (the placeholder) while the copy-back writes the new value into
// the same tensor. So when an op of the joint graph's backward reads a mutated input's
// placeholder, the compiled backward raises the error eager raises. The backward ops are the
// ancestors of the gradient outputs that no forward output depends on. When the update comes
// first, the backward reads the updated value (a computed one, which eager saved after the
// update) and all is well. Separately, a saved value that is the mutated input's memory itself
// (the min-cut partitioner may save an input to recompute from) is copied before the copy-back.
std::vector<std::pair<int, std::string>> mutated_inputs_read_by_backward(
    const JointGraph& joint, const std::vector<int>& mutated) {
  if (mutated.empty()) return {};
  auto ancestors = [](std::span<graph::Value* const> roots) {
    std::set<const graph::Node*> seen;
    std::vector<const graph::Node*> stack;
    for (const graph::Value* v : roots)
      if (v->producer() != nullptr) stack.push_back(v->producer());
    while (!stack.empty()) {
      const graph::Node* n = stack.back();
      stack.pop_back();
      if (n->kind() != graph::NodeKind::Call || !seen.insert(n).second) continue;
      for (const graph::Value* in : n->inputs())
        if (in->producer() != nullptr) stack.push_back(in->producer());
    }
    return seen;
  };
  const auto outputs = joint.graph.outputs();
  const auto split = static_cast<size_t>(joint.num_forward_outputs);
  const std::set<const graph::Node*> forward = ancestors(outputs.subspan(0, split));
  const std::set<const graph::Node*> gradient = ancestors(outputs.subspan(split));
  std::vector<std::pair<int, std::string>> read;
  for (int i : mutated) {
    const graph::Value* primal = joint.graph.placeholders()[i];
    for (const graph::Node* user : primal->users())
      if (gradient.contains(user) && !forward.contains(user)) {
        read.emplace_back(i, primal->producer()->source());
        break;
      }
  }
  return read;
}

}  // namespace

std::vector<bool> inputs_requiring_grad(std::span<const Tensor> inputs) {
  std::vector<bool> requires_grad;
  for (const Tensor& t : inputs) requires_grad.push_back(t.defined() && t.requires_grad());
  return requires_grad;
}

FunctionalGraph functionalize_for_autograd(const graph::Graph& captured,
                                           const std::vector<bool>& requires_grad) {
  FunctionalGraph functional = functionalize(captured);
  for (int i : functional.mutated_inputs)
    KILN_CHECK(!requires_grad[i], NotImplementedError,
               "AOT autograd: the graph mutates input {}, which requires grad; such graphs run "
               "through the eager autograd engine",
               captured.placeholders()[i]->producer()->source());
  return functional;
}

JointGraph trace_joint_graph(const FunctionalGraph& functional,
                             const std::vector<bool>& requires_grad, sym::ShapeEnv* env) {
  // Note [AOT autograd with symbolic sizes]
  const bool symbolic = needs_shape_env(functional.graph);
  KILN_CHECK(!symbolic || env != nullptr, NotImplementedError,
             "AOT autograd: the graph has symbolic sizes but was not compiled from a trace (no "
             "ShapeEnv to evaluate them); it runs through the eager autograd engine");
  JointGraph joint = [&] {
    const sym::ShapeEnv::Scope scope(symbolic ? env : nullptr);
    return build_joint_graph(functional.graph, requires_grad, functional.num_outputs);
  }();
  decompose_normalizations(joint.graph);
  check_outputs_are_fresh(joint);
  return joint;
}

Partition partition_joint_graph(const JointGraph& joint, Partitioner partitioner,
                                sym::ShapeEnv* env, const trace::CompileId& id) {
  const bool symbolic = needs_shape_env(joint.graph);
  Partition part = [&] {
    const sym::ShapeEnv::Scope scope(symbolic ? env : nullptr);
    return partition(joint, partitioner);
  }();
  if (symbolic) check_symbols_are_bound(part.backward, "backward");

  const std::string partitioner_name = partitioner == Partitioner::MinCut ? "min_cut" : "default";
  trace::log_artifact("aot_joint_graph", id, [&] { return graph::to_string(joint.graph); });
  trace::log_artifact("aot_forward_graph", id, [&] { return graph::to_string(part.forward); });
  trace::log_artifact("aot_backward_graph", id, [&] { return graph::to_string(part.backward); });
  const auto decisions = [&] {
    nlohmann::json saved = nlohmann::json::array();
    for (const SavedValue& s : part.saved)
      saved.push_back({{"value", s.name}, {"meta", graph::to_string(s.meta)}, {"bytes", s.bytes}});
    return nlohmann::json{{"partitioner", partitioner_name},
                          {"saved", saved},
                          {"saved_bytes", part.saved_bytes},
                          {"recomputed_ops", part.recomputed_ops}};
  };
  trace::log_artifact("aot_partition", id, decisions);
  trace::log_readable(
      trace::LogCategory::aot,
      [&] {
        return fmt::format("joint graph:\n{}forward graph:\n{}backward graph:\n{}partition: {}\n",
                           graph::to_string(joint.graph), graph::to_string(part.forward),
                           graph::to_string(part.backward), decisions().dump());
      },
      id);
  return part;
}

capture::CompiledGraph make_autograd_function(const AutogradFunctionParts& parts) {
  const FunctionalGraph& functional = *parts.functional;
  const JointGraph& joint = *parts.joint;
  const Partition& part = *parts.partition;
  auto state = std::make_shared<CompiledFunctionState>();
  state->num_forward_outputs = joint.num_forward_outputs;
  state->num_user_outputs = functional.num_outputs;
  state->mutated_inputs = functional.mutated_inputs;
  state->tangent_of_output = joint.tangent_of_output;
  state->grad_primals = joint.grad_primals;
  state->num_tangents = joint.num_tangents;
  state->backward_reads_mutated = mutated_inputs_read_by_backward(joint, functional.mutated_inputs);
  state->name = fmt::format("compiled region {}", parts.compile_id.to_string());
  state->symbolic = has_symbolic_inputs(functional.graph);
  state->forward = parts.forward;
  state->backward = parts.backward;
  state->backward_graph = part.backward.clone();
  state->num_saved = static_cast<int>(part.saved.size());
  state->compile = parts.compile_specialized_backward;
  state->frozen_shape_env = parts.frozen_shape_env;
  state->compile_id = parts.compile_id;
  return [state = std::shared_ptr<const CompiledFunctionState>(std::move(state))](
             std::span<const Tensor> in) { return run_forward(state, in); };
}

}  // namespace kiln::aot
