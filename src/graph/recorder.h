// Recording one dispatched op call as a graph node: what the tracer (capture) and the joint-graph
// recorder (aot) share, and what higher-order ops, compiled autograd and functorch will use.
//
// Note [Recording an op into a graph]
// A recorder sits at a dispatch key (Trace, Record) and turns each op call that reaches it into a
// node, the way make_fx does:
//   1. every tensor argument is mapped to its graph value; the client decides how (the tracer
//      gives a real input a fake twin and a placeholder; the joint recorder looks up the values it
//      bound) and which tensor the meta function sees in its place (the fake twin);
//   2. a device argument runs on Meta in the meta function and is recorded as CPU, where the
//      graph will run (factories make Meta tensors while recording, CPU ones when run);
//   3. the op's meta function runs with the recording keys excluded: it gives the outputs (the
//      client binds them to the node's values) and their metadata;
//   4. the call is added to the client's graph, asked for after the meta function (a
//      data-dependent condition inside it may have started a new graph segment), with the
//      arguments' values looked up again for that reason.
// What stays with each client: how tensors map to values, the output metadata (the tracer's
// keeps wrapped numbers), the grad mode recorded on the node, and binding the outputs.
#pragma once

#include <string_view>
#include <vector>

#include "src/dispatch/dispatcher.h"
#include "src/graph/graph.h"

namespace kiln::graph {

class RecordingClient {
 public:
  virtual ~RecordingClient() = default;
  // The graph value of tensor argument `t` of op `op`; called for every defined tensor argument
  // before the meta function and again after it, and must give the same value both times.
  virtual Value* value_of(const Tensor& t, std::string_view op) = 0;
  // The tensor the meta function sees in place of `t` (after value_of(t)).
  virtual Tensor meta_twin(const Tensor& t) { return t; }
  // The metadata of an output of the meta function.
  virtual TensorMeta meta_of_output(const Tensor& out) { return TensorMeta::of(out); }
  // The graph the node goes into (asked after the meta function).
  virtual Graph& graph() = 0;
};

// Records `op` on `args` as one node of client.graph() (Note [Recording an op into a graph]);
// `outputs` receives the meta function's outputs. `who` prefixes the error for an op whose result
// is not tensors ("compile", "AOT autograd"). Returns the node's output values, one per output.
std::vector<Value*> record_call(const OpDef& op, Stack& args, Stack& outputs,
                                RecordingClient& client, std::string_view who);

}  // namespace kiln::graph
