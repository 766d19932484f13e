// TensorImpl: what a Tensor handle points to. Storage + dtype + sizes/strides/offset (as SymInt),
// the dispatch keys, and optional autograd metadata (core never includes autograd headers).
#pragma once

#include <memory>

#include "kiln/dispatch_key.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/small_vector.h"
#include "kiln/storage.h"
#include "kiln/sym_int.h"
#include "kiln/sym_int_format.h"

namespace kiln {

using SymDimVector = SmallVector<SymInt, 5>;
using DimVector = SmallVector<int64_t, 5>;

// Filled in by src/autograd; core only owns it.
struct AutogradMetaInterface {
  virtual ~AutogradMetaInterface() = default;
};

class TensorImpl : public RefCounted {
 public:
  TensorImpl(Storage storage, ScalarType dtype, SymDimVector sizes, SymDimVector strides,
             SymInt offset);

  ScalarType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  const Storage& storage() const { return storage_; }
  DispatchKeySet keys() const { return keys_; }
  void set_keys(DispatchKeySet keys) { keys_ = keys; }

  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  SymIntArrayRef sym_sizes() const { return sizes_; }
  SymIntArrayRef sym_strides() const { return strides_; }
  SymInt sym_offset() const { return offset_; }
  // Concrete views of the same words (Note [SymInt representation]). On a tensor with symbolic
  // metadata they specialize (Note [Specializing symbolic metadata]).
  IntArrayRef sizes() const {
    if (!has_symbolic_) [[likely]]
      return IntArrayRef(reinterpret_cast<const int64_t*>(sizes_.data()), sizes_.size());
    return specialized().sizes;
  }
  IntArrayRef strides() const {
    if (!has_symbolic_) [[likely]]
      return IntArrayRef(reinterpret_cast<const int64_t*>(strides_.data()), strides_.size());
    return specialized().strides;
  }
  int64_t storage_offset() const {
    return offset_.is_symbolic() ? specialized().offset : offset_.raw();
  }
  bool has_symbolic_metadata() const { return has_symbolic_; }
  SymInt sym_numel() const { return numel_; }
  // The element count; guards when symbolic.
  int64_t numel() const { return numel_.is_symbolic() ? numel_.guard_int() : numel_.raw(); }
  // Computed without guards: a symbolic tensor is contiguous when its strides are the contiguous
  // strides of its sizes expression by expression, false (conservatively) otherwise.
  bool is_contiguous() const { return is_contiguous_; }

  // The address of element 0 (storage data + offset); null for Meta tensors.
  void* data() const;

  // A wrapped number is a Scalar turned into a 0-dim tensor; promotion treats it as a Scalar.
  bool is_wrapped_number() const { return wrapped_number_; }
  void set_wrapped_number(bool v) { wrapped_number_ = v; }

  AutogradMetaInterface* autograd_meta() const { return autograd_.get(); }
  void set_autograd_meta(std::unique_ptr<AutogradMetaInterface> meta) {
    autograd_ = std::move(meta);
  }

  // Changes the metadata in place (used by as_strided_ style ops and resize). Recomputes caches.
  void set_sizes_and_strides(SymDimVector sizes, SymDimVector strides, SymInt offset);

 private:
  // Note [Specializing symbolic metadata]
  // Code that reads concrete sizes() / strides() / storage_offset() of a tensor with symbolic
  // metadata (a meta function not converted to SymInt, a printout) gets its hint values, and each
  // symbolic element is guarded on that value (Note [Guarding a symbolic value]): the trace stays
  // correct and is reused only for inputs with those sizes. The concrete words live in a cache
  // filled on the first such read; eager tensors never allocate it and pay one branch.
  struct Specialized {
    DimVector sizes;
    DimVector strides;
    int64_t offset = 0;
  };
  const Specialized& specialized() const;
  void refresh_caches();

  Storage storage_;
  ScalarType dtype_;
  bool wrapped_number_ = false;
  bool is_contiguous_ = true;
  bool has_symbolic_ = false;
  DispatchKeySet keys_;
  SymDimVector sizes_;
  SymDimVector strides_;
  SymInt offset_;
  SymInt numel_ = 1;
  std::unique_ptr<AutogradMetaInterface> autograd_;
  mutable std::unique_ptr<Specialized> specialized_;  // symbolic tensors only
};

// Contiguous (row-major) strides for `sizes` (Note [Contiguous strides of symbolic sizes]).
SymDimVector contiguous_strides(SymIntArrayRef sizes);
DimVector contiguous_strides(IntArrayRef sizes);
// Picks the integer overload for an integer vector (both of the above would accept it).
inline DimVector contiguous_strides(const DimVector& sizes) {
  return contiguous_strides(IntArrayRef(sizes));
}

}  // namespace kiln
