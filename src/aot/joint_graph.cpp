#include "src/aot/joint_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/ops/creation.h"
#include "src/autograd/autograd_meta.h"
#include "src/autograd/derivatives.h"
#include "src/core/shape.h"
#include "src/dispatch/dispatcher.h"
#include "src/graph/higher_order.h"
#include "src/graph/meta_inference.h"
#include "src/graph/recorder.h"
#include "src/sym/shape_env.h"

namespace kiln::aot {
namespace {

// Records ops on fake tensors into a graph; see Note [Joint graph]. One is active per thread
// while build_joint_graph runs.
class Recorder {
 public:
  explicit Recorder(graph::Graph& g) : graph_(g) {}

  void bind(const Tensor& fake, graph::Value* v) {
    values_[fake.impl()] = v;
    by_storage_[fake.impl()->storage().get()].push_back(fake);
    keep_.push_back(fake);
  }
  graph::Value* value_of(const Tensor& t, std::string_view reader) const {
    auto it = values_.find(t.impl());
    if (it != values_.end()) return it->second;
    // Autograd hands formulas a new handle for a saved output (SavedVariable unpacks it): the
    // same storage, dtype and geometry as a recorded value is that value.
    if (auto same = by_storage_.find(t.impl()->storage().get()); same != by_storage_.end()) {
      for (const Tensor& known : same->second) {
        if (known.dtype() == t.dtype() && known.sym_sizes() == t.sym_sizes() &&
            known.sym_strides() == t.sym_strides() &&
            known.impl()->sym_offset() == t.impl()->sym_offset())
          return values_.at(known.impl());
      }
    }
    KILN_CHECK(false, NotImplementedError,
               "AOT autograd: {} reads a {} tensor of shape {} that no recorded op produced (a "
               "tensor made outside Kiln's ops); only graphs whose tensors all come from its "
               "inputs or from ops can be differentiated ahead of time yet",
               reader, t.device() == Device::Meta ? "Meta" : "real", shape_str(t.sym_sizes()));
    return nullptr;
  }

  // A Scalar a formula turned into a 0-dim CPU tensor (`1 - y * y`) becomes a `full` node: the
  // joint graph holds no tensor constants.
  graph::Value* constant_of(const Tensor& t) {
    static const OpId full = OpRegistry::instance().id("full");
    graph::Value* v = graph_.add_call1(
        full,
        {graph::Arg::constant(IValue(std::vector<int64_t>{})),
         graph::Arg::constant(IValue(t.item())), graph::Arg::constant(IValue(t.dtype())),
         graph::Arg::constant(IValue(Device::CPU))},
        graph::TensorMeta::contiguous(t.dtype(), {}));
    bind(t, v);
    return v;
  }
  graph::Value* input_value(const Tensor& t, std::string_view reader) {
    if (t.device() == Device::CPU && t.dim() == 0 && !values_.contains(t.impl()))
      return constant_of(t);
    return value_of(t, reader);
  }

  graph::Graph& graph() { return graph_; }

  // Note [Recording an op into a graph]; the arguments are fakes already.
  void handle(const OpDef& op, Stack& args, Stack& outputs) {
    struct Client : graph::RecordingClient {
      Recorder& recorder;
      explicit Client(Recorder& r) : recorder(r) {}
      graph::Value* value_of(const Tensor& t, std::string_view op) override {
        return recorder.input_value(t, op);
      }
      graph::Graph& graph() override { return recorder.graph_; }
    } client(*this);
    std::vector<graph::Value*> values =
        graph::record_call(op, args, outputs, client, "AOT autograd");
    if (!GradMode::is_enabled() && !values.empty())
      values[0]->producer()->set_grad_mode(graph::Node::GradMode::Disabled);
    for (size_t j = 0; j < outputs.size(); ++j) bind(outputs[j].tensor(), values[j]);
  }

 private:
  graph::Graph& graph_;
  std::unordered_map<const TensorImpl*, graph::Value*> values_;
  std::unordered_map<const StorageImpl*, std::vector<Tensor>> by_storage_;
  std::vector<Tensor> keep_;  // fakes stay alive, so their TensorImpl addresses stay unique
};

thread_local Recorder* g_recorder = nullptr;

void handle_record_key(const OpDef& op, Stack& args, Stack& outputs, DispatchKeySet keys) {
  if (g_recorder != nullptr) {
    g_recorder->handle(op, args, outputs);
    return;
  }
  dispatch::redispatch(op, args, outputs, keys.remove(DispatchKey::Record));
}
const bool g_record_key_registered = [] {
  dispatch::set_fallback(DispatchKey::Record, handle_record_key);
  return true;
}();

class RecordScope {
 public:
  explicit RecordScope(Recorder& r) : saved_(g_recorder), include_(DispatchKey::Record) {
    g_recorder = &r;
  }
  ~RecordScope() { g_recorder = saved_; }
  RecordScope(const RecordScope&) = delete;
  RecordScope& operator=(const RecordScope&) = delete;

 private:
  Recorder* saved_;
  dispatch::IncludeKeysGuard include_;
};

}  // namespace

namespace {

// A body may not return what it receives (Note [Subgraphs of a higher-order op]): a gradient
// that is a tangent passed through (the backward of an add) is returned as a copy.
Tensor not_an_input(Recorder& recorder, const Tensor& t) {
  if (graph::input_viewed_by(recorder.value_of(t, "a body's output")) == nullptr) return t;
  RecordScope record(recorder);
  NoGradGuard no_grad;
  return t.clone();
}

// What the trace returns: the joint graph (build_joint_graph), or only the gradients of a body
// (build_vjp_graph).
enum class JointForm : uint8_t { Joint, Vjp };

std::vector<Tensor> record_higher_order(const graph::Node& node, const Stack& args);

JointGraph trace_joint(const graph::Graph& forward, const std::vector<bool>& requires_grad,
                       int num_differentiable_outputs, JointForm form) {
  const std::span<graph::Value* const> primals = forward.placeholders();
  KILN_CHECK(requires_grad.size() == primals.size(), ValueError,
             "build_joint_graph: {} requires_grad flags for {} inputs", requires_grad.size(),
             primals.size());
  for (const graph::Value* p : primals)
    KILN_CHECK(!p->meta().is_symbolic() || sym::ShapeEnv::current() != nullptr, NotImplementedError,
               "AOT autograd: input {} has symbolic sizes but no ShapeEnv is active to evaluate "
               "them (Note [AOT autograd with symbolic sizes]); the graph is differentiated by "
               "the eager autograd engine",
               p->producer()->source());
  for (const graph::Node* node : forward.calls())
    KILN_CHECK(!node->mutates(), NotImplementedError,
               "AOT autograd: the graph mutates a tensor ({}); functionalize it first (Note "
               "[Functionalization])",
               graph::to_string(*node));

  JointGraph joint;
  graph::Graph& g = joint.graph;
  Recorder recorder(g);
  std::vector<Tensor> fakes;
  for (size_t i = 0; i < primals.size(); ++i) {
    graph::TensorMeta meta = primals[i]->meta();
    meta.requires_grad = false;
    Tensor fake = graph::fake_tensor(meta);
    recorder.bind(fake, g.add_placeholder(primals[i]->producer()->source(), meta));
    if (requires_grad[i]) {
      KILN_CHECK(is_floating(meta.dtype), DTypeError,
                 "AOT autograd: input {} requires grad but has dtype {}; only floating tensors "
                 "have gradients",
                 primals[i]->producer()->source(), dtype_name(meta.dtype));
      fake.requires_grad_(true);
    }
    fakes.push_back(fake);
  }
  joint.num_primals = static_cast<int>(primals.size());

  std::vector<Tensor> outputs;
  {
    RecordScope record(recorder);
    EnableGradGuard grad_on;
    outputs = graph::interpret_symbolic(forward, fakes, record_higher_order);
  }
  joint.num_forward_outputs = static_cast<int>(outputs.size());

  // Tangents: one per output that carries autograd history.
  std::vector<Tensor> differentiable, tangents;
  int placed_tangents = 0;
  for (size_t j = 0; j < outputs.size(); ++j) {
    const Tensor& out = outputs[j];
    const bool may_differentiate =
        num_differentiable_outputs < 0 || static_cast<int>(j) < num_differentiable_outputs;
    // A vjp graph takes a gradient for every floating output, whether or not this body's output
    // depends on an input (the other branch's may).
    const bool differentiates = may_differentiate && autograd::requires_grad(out);
    if (!is_floating(out.dtype()) || !(differentiates || form == JointForm::Vjp)) {
      joint.tangent_of_output.push_back(-1);
      continue;
    }
    graph::TensorMeta meta = graph::TensorMeta::contiguous(
        out.dtype(), SymDimVector(out.sym_sizes().begin(), out.sym_sizes().end()));
    Tensor tangent = graph::fake_tensor(meta);
    recorder.bind(tangent, g.add_placeholder(fmt::format("tangent{}", placed_tangents), meta));
    ++placed_tangents;
    joint.tangent_of_output.push_back(static_cast<int>(placed_tangents - 1));
    if (!differentiates) continue;
    differentiable.push_back(out);
    tangents.push_back(tangent);
  }
  joint.num_tangents = placed_tangents;

  std::vector<Tensor> wrt;
  std::vector<int> wrt_index;
  for (size_t i = 0; i < fakes.size(); ++i) {
    if (!requires_grad[i]) continue;
    wrt.push_back(fakes[i]);
    wrt_index.push_back(static_cast<int>(i));
  }
  std::vector<Tensor> grads;
  if (!differentiable.empty() && !wrt.empty()) {
    RecordScope record(recorder);
    autograd::FunctionalFormulasGuard functional;
    try {
      grads = kiln::grad(differentiable, wrt, tangents, /*retain_graph=*/false,
                         /*create_graph=*/false, /*allow_unused=*/true);
    } catch (const NotImplementedError&) {
      throw;
    } catch (const Error& e) {
      // A formula that reads data (cumprod's check for zeros) cannot run on fake tensors; the
      // forward traced fine, so this is the recorder's limit, not the user's error.
      throw NotImplementedError(fmt::format(
          "AOT autograd: a backward formula cannot run on fake tensors ({}); the graph runs "
          "through the eager autograd engine",
          e.what()));
    }
  }
  std::vector<graph::Value*> results;
  if (form == JointForm::Joint)
    for (const Tensor& out : outputs)
      results.push_back(recorder.value_of(out, "the graph's output"));
  grads.resize(wrt.size());
  for (size_t k = 0; k < grads.size(); ++k) {
    if (!grads[k].defined()) {
      if (form == JointForm::Joint) continue;  // the outputs do not depend on this input
      RecordScope record(recorder);            // a vjp graph returns zeros for it
      grads[k] = zeros_like(wrt[k]);
    }
    if (form == JointForm::Vjp) grads[k] = not_an_input(recorder, grads[k]);
    results.push_back(recorder.value_of(grads[k], "a gradient"));
    joint.grad_primals.push_back(wrt_index[k]);
  }
  g.set_outputs(std::move(results));
  // The partitioner follows values, not memory: a write the graph makes through an alias would be
  // lost (Note [Functional backward formulas]). None should remain; if one does, the graph runs
  // through the eager engine rather than with a wrong gradient.
  for (const graph::Node* node : g.calls())
    KILN_CHECK(!node->mutates(), NotImplementedError,
               "AOT autograd: the recorded backward writes into a tensor ({}); the graph runs "
               "through the eager autograd engine",
               graph::to_string(*node));
  graph::eliminate_dead_code(g);
  return joint;
}

// Note [Higher-order ops in AOT autograd]
// A `cond` in the traced graph is recorded as one node with the same subgraphs, its outputs fakes
// of the node's metas. When an operand requires grad, its floating outputs get a CondBackward
// node, whose backward is another cond on the same predicate: its branches are the vjp graphs of
// the two bodies (build_vjp_graph: each recomputes its branch's forward from the operands, then
// runs the backward formulas), taking the operands and one gradient per floating output and
// returning one gradient per operand that requires grad (zeros where the branch does not read
// it), as PyTorch's CondAutogradOp does. The partitioner splits the pair like any other nodes,
// and both compile to generated code (Note [Higher-order ops in a program] in
// src/runtime/program.h). A while_loop's backward walks its iterations in reverse (Note [A
// while_loop's history]).
// Records a call of `op` with `args` and `subgraphs` into the recorder's graph; returns fakes
// of `metas`, bound to its outputs.
std::vector<Tensor> record_call_with_subgraphs(Recorder& recorder, OpId op,
                                               std::vector<graph::Arg> args,
                                               const std::vector<graph::TensorMeta>& metas,
                                               std::vector<graph::Subgraph> subgraphs) {
  std::vector<graph::Value*> values = recorder.graph().add_call(op, std::move(args), metas);
  graph::Node* recorded = recorder.graph().calls().back();
  recorded->set_subgraphs(std::move(subgraphs));
  if (!GradMode::is_enabled()) recorded->set_grad_mode(graph::Node::GradMode::Disabled);
  std::vector<Tensor> fakes;
  for (size_t j = 0; j < values.size(); ++j) {
    fakes.push_back(graph::fake_tensor(metas[j]));
    recorder.bind(fakes.back(), values[j]);
  }
  return fakes;
}

graph::Arg list_of(Recorder& recorder, const std::vector<Tensor>& tensors, std::string_view op) {
  std::vector<graph::Value*> values;
  for (const Tensor& t : tensors) values.push_back(recorder.input_value(t, op));
  return graph::Arg::list(std::move(values));
}

graph::TensorMeta contiguous_meta(const Tensor& t) {
  return graph::TensorMeta::contiguous(t.dtype(),
                                       SymDimVector(t.sym_sizes().begin(), t.sym_sizes().end()));
}

// Zeros for a gradient that did not arrive, from the node's own metadata of it: a backward node
// must not hold its forward outputs (their grad_fn is the node: a reference cycle).
Tensor zeros_for(Recorder& recorder, const autograd::GradMeta& meta) {
  RecordScope record(recorder);
  return zeros(meta.sizes, meta.dtype);
}

class CondBackward final : public autograd::Node {
 public:
  CondBackward(Recorder& recorder, OpId cond, Tensor pred, std::vector<Tensor> operands,
               std::vector<int> grad_operands, std::vector<graph::Subgraph> bodies)
      : recorder_(recorder),
        cond_(cond),
        pred_(std::move(pred)),
        operands_(std::move(operands)),
        grad_operands_(std::move(grad_operands)),
        bodies_(std::move(bodies)) {}

  std::string name() const override { return "CondBackward"; }

  autograd::TensorList apply(autograd::TensorList&& grads) override {
    std::vector<Tensor> inputs = operands_;
    for (size_t k = 0; k < input_metadata().size(); ++k) {
      Tensor g = k < grads.size() ? grads[k] : Tensor();
      inputs.push_back(g.defined() ? g : zeros_for(recorder_, input_metadata()[k]));
    }
    std::vector<graph::TensorMeta> metas;
    for (int i : grad_operands_)
      metas.push_back(contiguous_meta(operands_[static_cast<size_t>(i)]));
    autograd::TensorList out = record_call_with_subgraphs(
        recorder_, cond_,
        {graph::Arg::value(recorder_.input_value(pred_, "cond's backward")),
         list_of(recorder_, inputs, "cond's backward")},
        metas, bodies_);
    return out;
  }

 private:
  Recorder& recorder_;
  OpId cond_;
  Tensor pred_;
  std::vector<Tensor> operands_;
  std::vector<int> grad_operands_;
  std::vector<graph::Subgraph> bodies_;
};

std::vector<graph::TensorMeta> output_metas(const graph::Node& node) {
  std::vector<graph::TensorMeta> metas;
  for (const graph::Value* v : node.outputs()) {
    graph::TensorMeta m = v->meta();
    m.requires_grad = false;
    metas.push_back(m);
  }
  return metas;
}

// A graph of the ops `fn` runs on fakes of `inputs` (recorded as the joint graph is), under no
// grad: how the backward of a while_loop gets its bodies.
graph::Graph trace_graph(const std::vector<graph::TensorMeta>& inputs,
                         const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn) {
  graph::Graph g;
  Recorder recorder(g);
  std::vector<Tensor> fakes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    fakes.push_back(graph::fake_tensor(inputs[i]));
    recorder.bind(fakes.back(), g.add_placeholder(fmt::format("arg{}", i), inputs[i]));
  }
  std::vector<Tensor> outputs;
  {
    RecordScope record(recorder);
    NoGradGuard no_grad;
    outputs = fn(fakes);
  }
  std::vector<graph::Value*> values;
  for (const Tensor& t : outputs)
    values.push_back(recorder.value_of(not_an_input(recorder, t), "a body's output"));
  g.set_outputs(std::move(values));
  graph::eliminate_dead_code(g);
  return g;
}

std::vector<Tensor> record_cond(const graph::Node& node, const Stack& args) {
  Recorder& recorder = *g_recorder;
  const Tensor& pred = args[0].tensor();
  const std::vector<Tensor> operands = args[1].tensor_list();
  std::vector<Tensor> outputs = record_call_with_subgraphs(
      recorder, node.op(),
      {graph::Arg::value(recorder.input_value(pred, "cond")), list_of(recorder, operands, "cond")},
      output_metas(node), node.subgraphs());

  std::vector<bool> requires_grad;
  std::vector<int> grad_operands;
  for (size_t i = 0; i < operands.size(); ++i) {
    requires_grad.push_back(autograd::requires_grad(operands[i]) &&
                            is_floating(operands[i].dtype()));
    if (requires_grad.back()) grad_operands.push_back(static_cast<int>(i));
  }
  std::vector<Tensor> floating;
  for (const Tensor& t : outputs)
    if (is_floating(t.dtype())) floating.push_back(t);
  if (!GradMode::is_enabled() || grad_operands.empty() || floating.empty()) return outputs;

  std::vector<graph::Subgraph> backward_bodies;
  for (const graph::Subgraph& body : node.subgraphs()) {
    auto vjp = std::make_shared<graph::Graph>(build_vjp_graph(*body.graph, requires_grad));
    backward_bodies.push_back({body.name, std::move(vjp)});
  }
  auto backward = std::make_shared<CondBackward>(recorder, node.op(), pred, operands, grad_operands,
                                                 std::move(backward_bodies));
  for (int i : grad_operands)
    backward->mutable_next_edges().push_back(
        autograd::gradient_edge(operands[static_cast<size_t>(i)]));
  for (const Tensor& t : floating) {
    const uint32_t index = backward->add_input_metadata(t);
    autograd::set_history(t, backward, index);
  }
  return outputs;
}

// Note [A while_loop's history]
// A while_loop whose carries or additional inputs need gradients is recorded as
// while_loop_with_history: the same loop, also returning how many iterations ran (n) and each
// carry's value before each iteration, stacked ([n, ...]; n is an unbacked symbol). Its backward
// (WhileLoopBackward) is a while_loop that walks the iterations in reverse, i = n-1 .. 0: it
// takes iteration i's carries out of the histories and runs the vjp graph of body_fn there,
// carrying the carries' gradients backward and summing the additional inputs' gradients, as
// PyTorch's WhileLoopAutogradOp does. Its memory is the history: n copies of the carries.
class WhileLoopBackward final : public autograd::Node {
 public:
  struct Plan {
    OpId while_loop = 0;
    Tensor iterations;
    std::vector<Tensor> histories, additional;
    std::vector<Tensor> floating_finals;    // the finals of the floating carries (not kept)
    std::vector<int> floating_carries;      // their carry indices
    std::vector<int> grad_additional;       // additional inputs that get a gradient
    std::vector<int> carries_needing_grad;  // carry indices with a next edge (in order)
    std::vector<graph::Subgraph> bodies;    // the backward loop's cond_fn and body_fn
  };
  WhileLoopBackward(Recorder& recorder, Plan plan) : recorder_(recorder), plan_(std::move(plan)) {
    plan_.floating_finals.clear();  // see zeros_for
  }

  std::string name() const override { return "WhileLoopBackward"; }

  autograd::TensorList apply(autograd::TensorList&& grads) override {
    std::vector<Tensor> carried;
    {
      RecordScope record(recorder_);
      carried.push_back(plan_.iterations - 1);
      for (size_t k = 0; k < input_metadata().size(); ++k) {
        Tensor g = k < grads.size() ? grads[k] : Tensor();
        carried.push_back(g.defined() ? g : zeros_for(recorder_, input_metadata()[k]));
      }
      for (int j : plan_.grad_additional)
        carried.push_back(zeros_like(plan_.additional[static_cast<size_t>(j)]));
    }
    std::vector<Tensor> read = plan_.histories;
    read.insert(read.end(), plan_.additional.begin(), plan_.additional.end());
    std::vector<graph::TensorMeta> metas;
    for (const Tensor& t : carried) metas.push_back(contiguous_meta(t));
    std::vector<Tensor> out =
        record_call_with_subgraphs(recorder_, plan_.while_loop,
                                   {list_of(recorder_, carried, "while_loop's backward"),
                                    list_of(recorder_, read, "while_loop's backward")},
                                   metas, plan_.bodies);
    autograd::TensorList result;
    for (int k : plan_.carries_needing_grad) {
      const auto at = std::find(plan_.floating_carries.begin(), plan_.floating_carries.end(), k);
      result.push_back(out[1 + static_cast<size_t>(at - plan_.floating_carries.begin())]);
    }
    for (size_t j = 0; j < plan_.grad_additional.size(); ++j)
      result.push_back(out[1 + input_metadata().size() + j]);
    return result;
  }

 private:
  Recorder& recorder_;
  Plan plan_;
};

// The backward loop's bodies (Note [A while_loop's history]). Its carries: i, one gradient per
// floating carry, one per additional input that gets a gradient; what it reads besides: the
// histories, then the additional inputs.
std::vector<graph::Subgraph> while_loop_backward_bodies(const graph::Node& node,
                                                        const WhileLoopBackward::Plan& plan,
                                                        const std::vector<Tensor>& carries) {
  const size_t n = carries.size(), f = plan.floating_carries.size();
  std::vector<graph::TensorMeta> inputs{graph::TensorMeta::contiguous(kInt64, {})};
  for (const Tensor& t : plan.floating_finals) inputs.push_back(contiguous_meta(t));
  for (int j : plan.grad_additional) inputs.push_back(contiguous_meta(plan.additional[j]));
  for (const Tensor& h : plan.histories) inputs.push_back(contiguous_meta(h));
  for (const Tensor& a : plan.additional) inputs.push_back(graph::TensorMeta::of(a));
  for (graph::TensorMeta& m : inputs) m.requires_grad = false;

  graph::Graph keep_going =
      trace_graph(inputs, [](const std::vector<Tensor>& in) { return std::vector{in[0] >= 0}; });

  std::vector<bool> flags;  // body_fn's inputs: the carries, then the additional inputs
  for (size_t k = 0; k < n; ++k) flags.push_back(is_floating(carries[k].dtype()));
  for (size_t j = 0; j < plan.additional.size(); ++j)
    flags.push_back(std::find(plan.grad_additional.begin(), plan.grad_additional.end(),
                              static_cast<int>(j)) != plan.grad_additional.end());
  const graph::Graph vjp = build_vjp_graph(*node.subgraphs().at(1).graph, flags);
  const size_t g = plan.grad_additional.size();
  graph::Graph step = trace_graph(inputs, [&](const std::vector<Tensor>& in) {
    const Tensor& i = in[0];
    std::vector<Tensor> vjp_inputs;
    for (size_t k = 0; k < n; ++k)
      vjp_inputs.push_back(in[1 + f + g + k].index_select(0, i.view({1})).squeeze(0));
    for (size_t j = 0; j < plan.additional.size(); ++j) vjp_inputs.push_back(in[1 + f + g + n + j]);
    for (size_t k = 0; k < f; ++k) vjp_inputs.push_back(in[1 + k]);
    std::vector<Tensor> grads = graph::interpret_symbolic(vjp, vjp_inputs, record_higher_order);
    std::vector<Tensor> next{i - 1};
    for (size_t k = 0; k < f; ++k) next.push_back(grads[k]);
    for (size_t j = 0; j < g; ++j) next.push_back(in[1 + f + j] + grads[f + j]);
    return next;
  });
  return {{"cond_fn", std::make_shared<graph::Graph>(std::move(keep_going))},
          {"body_fn", std::make_shared<graph::Graph>(std::move(step))}};
}

std::vector<Tensor> record_while_loop(const graph::Node& node, const Stack& args) {
  Recorder& recorder = *g_recorder;
  const std::vector<Tensor> carries = args[0].tensor_list();
  const std::vector<Tensor> additional = args[1].tensor_list();
  WhileLoopBackward::Plan plan;
  plan.additional = additional;
  for (size_t k = 0; k < carries.size(); ++k) {
    if (!is_floating(carries[k].dtype())) continue;
    plan.floating_carries.push_back(static_cast<int>(k));
    if (autograd::requires_grad(carries[k]))
      plan.carries_needing_grad.push_back(static_cast<int>(k));
  }
  for (size_t j = 0; j < additional.size(); ++j)
    if (is_floating(additional[j].dtype()) && autograd::requires_grad(additional[j]))
      plan.grad_additional.push_back(static_cast<int>(j));
  const bool differentiate = GradMode::is_enabled() && !plan.floating_carries.empty() &&
                             (!plan.carries_needing_grad.empty() || !plan.grad_additional.empty());
  const std::vector<graph::Arg> arg_values = {list_of(recorder, carries, "while_loop"),
                                              list_of(recorder, additional, "while_loop")};
  if (!differentiate)
    return record_call_with_subgraphs(recorder, node.op(), arg_values, output_metas(node),
                                      node.subgraphs());

  sym::ShapeEnv* env = sym::ShapeEnv::current();
  KILN_CHECK(env != nullptr, NotImplementedError,
             "AOT autograd: a differentiated while_loop needs the trace's ShapeEnv for its "
             "iteration count; the graph runs through the eager autograd engine");
  const SymInt iterations =
      env->create_unbacked_symbol("iterations of a while_loop", sym::ValueRange::at_least(0));
  std::vector<graph::TensorMeta> metas = output_metas(node);
  metas.push_back(graph::TensorMeta::contiguous(kInt64, {}));
  for (const Tensor& c : carries) {
    SymDimVector sizes{iterations};
    for (SymInt s : c.sym_sizes()) sizes.push_back(s);
    metas.push_back(graph::TensorMeta::contiguous(c.dtype(), sizes));
  }
  static const OpId with_history = OpRegistry::instance().id("while_loop_with_history");
  std::vector<Tensor> out =
      record_call_with_subgraphs(recorder, with_history, arg_values, metas, node.subgraphs());
  const size_t n = carries.size();
  std::vector<Tensor> finals(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n));
  plan.iterations = out[n];
  plan.histories.assign(out.begin() + static_cast<std::ptrdiff_t>(n + 1), out.end());
  for (int k : plan.floating_carries) plan.floating_finals.push_back(finals[k]);
  static const OpId while_loop = OpRegistry::instance().id("while_loop");
  plan.while_loop = while_loop;
  plan.bodies = while_loop_backward_bodies(node, plan, carries);

  auto backward = std::make_shared<WhileLoopBackward>(recorder, plan);
  for (int k : plan.carries_needing_grad)
    backward->mutable_next_edges().push_back(autograd::gradient_edge(carries[k]));
  for (int j : plan.grad_additional)
    backward->mutable_next_edges().push_back(autograd::gradient_edge(additional[j]));
  for (const Tensor& t : plan.floating_finals) {
    const uint32_t index = backward->add_input_metadata(t);
    autograd::set_history(t, backward, index);
  }
  return finals;
}

std::vector<Tensor> record_higher_order(const graph::Node& node, const Stack& args) {
  const std::string& op = node.op_def().name;
  KILN_CHECK(g_recorder != nullptr && args.size() == 2, ValueError,
             "AOT autograd: {} recorded outside a joint trace, or with {} arguments", op,
             args.size());
  if (op == "cond") return record_cond(node, args);
  if (op == "while_loop") return record_while_loop(node, args);
  throw NotImplementedError(fmt::format(
      "AOT autograd: {} has no ahead-of-time backward yet (Note [Higher-order ops in AOT "
      "autograd]); the graph runs through the eager autograd engine",
      op));
}

}  // namespace

JointGraph build_joint_graph(const graph::Graph& forward, const std::vector<bool>& requires_grad,
                             int num_differentiable_outputs) {
  return trace_joint(forward, requires_grad, num_differentiable_outputs, JointForm::Joint);
}

graph::Graph build_vjp_graph(const graph::Graph& body, const std::vector<bool>& requires_grad) {
  return std::move(trace_joint(body, requires_grad, -1, JointForm::Vjp).graph);
}

}  // namespace kiln::aot
