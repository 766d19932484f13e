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
  // Concrete views of the same words (Note [SymInt representation]); throw if symbolic.
  IntArrayRef sizes() const;
  IntArrayRef strides() const;
  int64_t storage_offset() const;
  int64_t numel() const { return numel_; }
  bool is_contiguous() const { return is_contiguous_; }

  // The address of element 0 (storage data + offset); null for Meta tensors.
  void* data() const;

  // A wrapped number is a Scalar turned into a 0-dim tensor; promotion treats it as a Scalar.
  bool is_wrapped_number() const { return wrapped_number_; }
  void set_wrapped_number(bool v) { wrapped_number_ = v; }

  AutogradMetaInterface* autograd_meta() const { return autograd_.get(); }
  void set_autograd_meta(std::unique_ptr<AutogradMetaInterface> meta) { autograd_ = std::move(meta); }

  // Dims that kiln::mark_dynamic marked (bit d): the next compile gives them a symbol.
  uint32_t marked_dynamic_dims() const { return marked_dynamic_; }
  void mark_dynamic_dim(int64_t d) { marked_dynamic_ |= 1u << d; }

  // Changes the metadata in place (used by as_strided_ style ops and resize). Recomputes caches.
  void set_sizes_and_strides(SymDimVector sizes, SymDimVector strides, SymInt offset);

 private:
  void refresh_caches();

  Storage storage_;
  ScalarType dtype_;
  bool wrapped_number_ = false;
  bool is_contiguous_ = true;
  bool has_symbolic_ = false;
  uint32_t marked_dynamic_ = 0;
  DispatchKeySet keys_;
  SymDimVector sizes_;
  SymDimVector strides_;
  SymInt offset_;
  int64_t numel_ = 1;
  std::unique_ptr<AutogradMetaInterface> autograd_;
};

// Contiguous (row-major) strides for `sizes`.
SymDimVector contiguous_strides(SymIntArrayRef sizes);
DimVector contiguous_strides(IntArrayRef sizes);

}  // namespace kiln
