#include "src/aot/joint_graph.h"

#include <fmt/format.h>

#include <unordered_map>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "src/autograd/autograd_meta.h"
#include "src/autograd/derivatives.h"
#include "src/core/shape.h"
#include "src/dispatch/dispatcher.h"
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

JointGraph build_joint_graph(const graph::Graph& forward, const std::vector<bool>& requires_grad,
                             int num_differentiable_outputs) {
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
    outputs = graph::interpret_symbolic(forward, fakes);
  }
  joint.num_forward_outputs = static_cast<int>(outputs.size());

  // Tangents: one per output that carries autograd history.
  std::vector<Tensor> differentiable, tangents;
  for (size_t j = 0; j < outputs.size(); ++j) {
    const Tensor& out = outputs[j];
    const bool may_differentiate =
        num_differentiable_outputs < 0 || static_cast<int>(j) < num_differentiable_outputs;
    if (!may_differentiate || !autograd::requires_grad(out) || !is_floating(out.dtype())) {
      joint.tangent_of_output.push_back(-1);
      continue;
    }
    graph::TensorMeta meta = graph::TensorMeta::contiguous(
        out.dtype(), SymDimVector(out.sym_sizes().begin(), out.sym_sizes().end()));
    Tensor tangent = graph::fake_tensor(meta);
    recorder.bind(tangent, g.add_placeholder(fmt::format("tangent{}", tangents.size()), meta));
    joint.tangent_of_output.push_back(static_cast<int>(tangents.size()));
    differentiable.push_back(out);
    tangents.push_back(tangent);
  }
  joint.num_tangents = static_cast<int>(tangents.size());

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
  for (const Tensor& out : outputs) results.push_back(recorder.value_of(out, "the graph's output"));
  for (size_t k = 0; k < grads.size(); ++k) {
    if (!grads[k].defined()) continue;  // the outputs do not depend on this input
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

}  // namespace kiln::aot
