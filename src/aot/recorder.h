// The recorder of AOT autograd's joint trace (Note [Joint graph] in src/aot/joint_graph.h):
// ops on fake tensors, run while a RecordScope is active on this thread, become nodes of a graph.
// Shared by the joint trace and the backward of higher-order ops
// (src/aot/higher_order_autograd.cpp), which record into the same graph.
#pragma once

#include <string_view>
#include <unordered_map>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/error.h"
#include "src/core/shape.h"
#include "src/dispatch/dispatcher.h"
#include "src/graph/graph.h"
#include "src/graph/higher_order.h"
#include "src/graph/recorder.h"

namespace kiln::aot {

// Records ops on fake tensors into a graph: each op a RecordScope sees becomes a node, its
// outputs bound to their fakes, so later ops find their arguments' values.
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

// The recorder that ops on this thread record into (null outside a RecordScope).
Recorder*& current_recorder();

class RecordScope {
 public:
  explicit RecordScope(Recorder& r) : saved_(current_recorder()), include_(DispatchKey::Record) {
    current_recorder() = &r;
  }
  ~RecordScope() { current_recorder() = saved_; }
  RecordScope(const RecordScope&) = delete;
  RecordScope& operator=(const RecordScope&) = delete;

 private:
  Recorder* saved_;
  dispatch::IncludeKeysGuard include_;
};

// A body may not return what it receives (Note [Subgraphs of a higher-order op]): a gradient
// that is a tangent passed through (the backward of an add) is returned as a copy.
inline Tensor not_an_input(Recorder& recorder, const Tensor& t) {
  if (graph::input_viewed_by(recorder.value_of(t, "a body's output")) == nullptr) return t;
  RecordScope record(recorder);
  NoGradGuard no_grad;
  return t.clone();
}

}  // namespace kiln::aot
