// Copies and conversions: copy_, _to_copy, clone, fill_; to/contiguous/zero_ are composites.
#include "src/kernels/cpu/copy.h"
#include "src/core/checked_convert.h"
#include "src/ops/registry.h"

namespace kiln {
namespace {

void meta_copy_(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const Tensor& src = call.tensor(1);
  const SymDimVector shape = sym_broadcast_shapes("copy_", self.sym_sizes(), src.sym_sizes());
  KILN_CHECK(same_shape(shape, self.sym_sizes()), ShapeError,
             "copy_: source of shape {} cannot be broadcast to the destination's shape {}",
             shape_str(src.sym_sizes()), shape_str(self.sym_sizes()));
  call.set_output(0, self);
}
void cpu_copy_(OpCall& call) { cpu::copy_into(call.tensor(0), call.tensor(1)); }

void meta_to_copy(OpCall& call) {
  const Tensor& self = call.tensor(0);
  call.set_output(0, call.arg(1).dtype(), self.sym_sizes());
}
void meta_clone(OpCall& call) {
  const Tensor& self = call.tensor(0);
  call.set_output(0, self.dtype(), self.sym_sizes());
}
void cpu_copy_from_arg0(OpCall& call) { cpu::copy_into(call.output(0), call.tensor(0)); }

void meta_fill_(OpCall& call) {
  check_fits("fill_", call.scalar(1), call.tensor(0).dtype());  // Note [Overflowing fill values]
  call.set_output(0, call.tensor(0));
}
void cpu_fill_(OpCall& call) { cpu::fill(call.tensor(0), call.scalar(1)); }

}  // namespace

void register_copy_ops(OpRegistry& r) {
  r.add({.name = "copy_",
         .schema = "copy_(Tensor(a!) self, Tensor src) -> Tensor(a!)",
         .family = "copy",
         .meta = meta_copy_,
         .cpu = cpu_copy_,
         .tags = kTagInplace});
  r.add({.name = "_to_copy",
         .schema = "_to_copy(Tensor self, ScalarType dtype) -> Tensor",
         .family = "copy",
         .meta = meta_to_copy,
         .cpu = cpu_copy_from_arg0});
  r.add({.name = "clone",
         .schema = "clone(Tensor self) -> Tensor",
         .family = "copy",
         .meta = meta_clone,
         .cpu = cpu_copy_from_arg0});
  r.add({.name = "fill_",
         .schema = "fill_(Tensor(a!) self, Scalar value) -> Tensor(a!)",
         .family = "copy",
         .meta = meta_fill_,
         .cpu = cpu_fill_,
         .tags = kTagInplace});
}

Tensor Tensor::to(ScalarType dtype, bool copy) const {
  if (dtype == this->dtype() && !copy) return *this;
  static const OpId id = op_id("_to_copy");
  return dispatch::call_tensor(id, *this, dtype);
}

Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
  KILN_CHECK(device == Device::Meta, NotImplementedError,
             "to: a Meta tensor has no data to move to CPU; create the tensor on CPU instead");
  return empty_tensor(sym_sizes(), dtype(), Device::Meta);
}

Tensor Tensor::clone() const {
  static const OpId id = op_id("clone");
  return dispatch::call_tensor(id, *this);
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

const Tensor& Tensor::copy_(const Tensor& src) const {
  static const OpId id = op_id("copy_");
  dispatch::call_boxed(id, *this, src);
  return *this;
}

const Tensor& Tensor::fill_(const Scalar& value) const {
  static const OpId id = op_id("fill_");
  dispatch::call_boxed(id, *this, value);
  return *this;
}

const Tensor& Tensor::zero_() const { return fill_(0); }

}  // namespace kiln
