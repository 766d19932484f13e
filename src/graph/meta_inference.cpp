#include "src/graph/meta_inference.h"

#include "kiln/autograd.h"
#include "src/core/tensor_factory.h"

namespace kiln::graph {
namespace {

bool symbolic_constant(const IValue& c) {
  if (c.is_int()) return c.to_sym_int().is_symbolic();
  if (c.is_int_list())
    for (int64_t w : raw_words(c))
      if (SymInt::from_raw(w).is_symbolic()) return true;
  return false;
}

DimVector concrete(const SymDimVector& dims) {
  DimVector out;
  for (SymInt s : dims) out.push_back(s.raw());
  return out;
}

// Note [Symbolic meta inference]
// A Meta tensor with symbolic sizes is built as the tracer builds its fakes (Note [Fake tensors]
// in src/capture/tracer.h): the TensorImpl takes the symbolic sizes, strides and offset as they
// are, over an empty Meta storage (a Meta storage's nbytes only bounds as_strided, which skips
// the check for symbolic sizes; Note [Meta storage of symbolic tensors]). Meta functions are
// written to stay symbolic (structural comparisons, 0/1 specialization), so most ops need no
// guard; one that does asks the current ShapeEnv and fails when there is none.
Tensor symbolic_fake_tensor(const TensorMeta& meta) {
  auto storage = make_intrusive<StorageImpl>(size_t{0}, Device::Meta);
  return Tensor(make_intrusive<TensorImpl>(std::move(storage), meta.dtype, meta.sizes, meta.strides,
                                           meta.offset));
}

// A Meta tensor with exactly `meta`'s sizes, strides and offset.
Tensor concrete_fake_tensor(const TensorMeta& meta) {
  const DimVector sizes = concrete(meta.sizes), strides = concrete(meta.strides);
  int64_t extent = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) extent = 0;
    if (extent > 0) extent += (sizes[d] - 1) * std::abs(strides[d]);
  }
  const int64_t offset = meta.offset.raw();
  Tensor base = empty_tensor(DimVector{offset + extent}, meta.dtype, Device::Meta);
  return make_view(base, meta.sizes, meta.strides, meta.offset);
}

Tensor make_fake_tensor(const TensorMeta& meta) {
  Tensor fake = meta.is_symbolic() ? symbolic_fake_tensor(meta) : concrete_fake_tensor(meta);
  if (meta.wrapped_number) fake.impl()->set_wrapped_number(true);
  return fake;
}

// Runs the op's meta function on fakes of the argument metas.
std::optional<std::vector<TensorMeta>> run_meta(OpId op, const std::vector<Arg>& args) {
  Stack stack;
  for (const Arg& a : args) {
    if (a.is_value()) {
      stack.emplace_back(make_fake_tensor(a.as_value()->meta()));
    } else if (a.is_list()) {
      std::vector<Tensor> tensors;
      for (const Value* v : a.as_list())
        tensors.push_back(v == nullptr ? Tensor() : make_fake_tensor(v->meta()));
      stack.emplace_back(std::move(tensors));
    } else if (a.as_constant().is_device()) {
      stack.emplace_back(Device::Meta);  // factories: build on Meta, whatever device was recorded
    } else {
      stack.emplace_back(a.as_constant());
    }
  }
  // Only the backend runs: no autograd recording, no tracing of the verifier's own calls.
  NoGradGuard no_grad;
  dispatch::ExcludeKeysGuard exclude({DispatchKey::Trace, DispatchKey::Vmap, DispatchKey::Autograd,
                                      DispatchKey::Subclass, DispatchKey::Record});
  Stack out = dispatch::call(op, stack);
  std::vector<TensorMeta> metas;
  for (const IValue& v : out) {
    if (v.is_tensor_list()) {
      for (const Tensor& t : v.tensor_list()) metas.push_back(TensorMeta::of(t));
    } else if (v.is_tensor() && v.tensor().defined()) {
      metas.push_back(TensorMeta::of(v.tensor()));
    } else {
      return std::nullopt;  // an undefined (optional) output: no meta to compare
    }
  }
  return metas;
}

}  // namespace

std::optional<std::vector<TensorMeta>> infer_output_metas(OpId op, const std::vector<Arg>& args) {
  const OpDef& def = OpRegistry::instance().get(op);
  if (def.has_tag(kTagDynamicOutput)) return std::nullopt;
  for (const Arg& a : args) {
    for (const Value* v : a.values())
      if (v->meta().is_symbolic()) return std::nullopt;
    if (a.is_constant() && symbolic_constant(a.as_constant())) return std::nullopt;
  }
  return run_meta(op, args);
}

std::optional<std::vector<TensorMeta>> infer_symbolic_output_metas(OpId op,
                                                                   const std::vector<Arg>& args) {
  if (OpRegistry::instance().get(op).has_tag(kTagDynamicOutput)) return std::nullopt;
  return run_meta(op, args);
}

Tensor fake_tensor(const TensorMeta& meta) { return make_fake_tensor(meta); }

}  // namespace kiln::graph
