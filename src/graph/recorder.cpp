#include "src/graph/recorder.h"

#include "kiln/error.h"

namespace kiln::graph {

std::vector<Value*> record_call(const OpDef& op, Stack& args, Stack& outputs,
                                RecordingClient& client, std::string_view who) {
  // 1-2. The meta function's arguments: meta twins for tensors, Meta for devices.
  Stack meta_args = args;
  for (size_t i = 0; i < args.size(); ++i) {
    const IValue& v = args[i];
    if (v.is_tensor() && v.tensor().defined()) {
      client.value_of(v.tensor(), op.name);
      meta_args[i] = client.meta_twin(v.tensor());
    } else if (v.is_tensor_list()) {
      // A Tensor?[] list (index's indices) holds undefined tensors for None, Slice and Ellipsis.
      std::vector<Tensor> twins;
      for (const Tensor& t : v.tensor_list()) {
        if (t.defined()) client.value_of(t, op.name);
        twins.push_back(t.defined() ? client.meta_twin(t) : Tensor());
      }
      meta_args[i] = IValue(std::move(twins));
    } else if (v.is_device()) {
      meta_args[i] = IValue(Device::Meta);
    }
  }
  // 3. The meta function, with no recorder, autograd or subclass handling on the way.
  {
    dispatch::ExcludeKeysGuard exclude({DispatchKey::Trace, DispatchKey::Autograd,
                                        DispatchKey::Vmap, DispatchKey::Subclass,
                                        DispatchKey::Record});
    dispatch::redispatch(op, meta_args, outputs, DispatchKeySet(DispatchKey::Meta));
  }
  // 4. The node, with the arguments' values looked up after the meta function.
  std::vector<Arg> gargs;
  gargs.reserve(args.size());
  for (const IValue& v : args) {
    if (v.is_tensor() && v.tensor().defined()) {
      gargs.push_back(Arg::value(client.value_of(v.tensor(), op.name)));
    } else if (v.is_tensor()) {
      gargs.push_back(Arg::constant(IValue()));
    } else if (v.is_tensor_list()) {
      std::vector<Value*> values;
      for (const Tensor& t : v.tensor_list())
        values.push_back(t.defined() ? client.value_of(t, op.name) : nullptr);
      gargs.push_back(Arg::list(std::move(values)));
    } else if (v.is_device()) {
      gargs.push_back(Arg::constant(IValue(Device::CPU)));
    } else {
      gargs.push_back(Arg::constant(v));
    }
  }
  std::vector<TensorMeta> metas;
  for (const IValue& out : outputs) {
    KILN_CHECK(
        out.is_tensor() && out.tensor().defined(), NotImplementedError,
        "{}: op {} returns a {}; only ops returning tensors can be recorded into a graph yet", who,
        op.name, out.type_name());
    metas.push_back(client.meta_of_output(out.tensor()));
  }
  return client.graph().add_call(op.id, std::move(gargs), std::move(metas));
}

}  // namespace kiln::graph
