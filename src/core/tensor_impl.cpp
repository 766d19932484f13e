#include "kiln/tensor_impl.h"

namespace kiln {

TensorImpl::TensorImpl(Storage storage, ScalarType dtype, SymDimVector sizes, SymDimVector strides,
                       SymInt offset)
    : storage_(std::move(storage)),
      dtype_(dtype),
      keys_(storage_->device() == Device::Meta ? DispatchKey::Meta : DispatchKey::CPU),
      sizes_(std::move(sizes)),
      strides_(std::move(strides)),
      offset_(offset) {
  refresh_caches();
}

void TensorImpl::set_sizes_and_strides(SymDimVector sizes, SymDimVector strides, SymInt offset) {
  sizes_ = std::move(sizes);
  strides_ = std::move(strides);
  offset_ = offset;
  refresh_caches();
}

void TensorImpl::refresh_caches() {
  has_symbolic_ = offset_.is_symbolic();
  int64_t n = 1;
  for (SymInt s : sizes_) {
    has_symbolic_ |= s.is_symbolic();
    n *= s.expect_int();
  }
  for (SymInt s : strides_) has_symbolic_ |= s.is_symbolic();
  numel_ = n;
  // Contiguous: strides match row-major, ignoring dims of size 1 (any stride is fine there).
  bool contiguous = true;
  int64_t expected = 1;
  for (int64_t d = dim() - 1; d >= 0; --d) {
    const int64_t size = sizes_[d].expect_int();
    if (size == 1) continue;
    if (strides_[d].expect_int() != expected) {
      contiguous = false;
      break;
    }
    expected *= size;
  }
  is_contiguous_ = contiguous || numel_ == 0;
}

IntArrayRef TensorImpl::sizes() const {
  KILN_CHECK(!has_symbolic_, Error,
             "sizes() called on a tensor with symbolic sizes; use sym_sizes() inside traced code");
  // See Note [SymInt representation]: concrete SymInts are plain int64 words.
  return IntArrayRef(reinterpret_cast<const int64_t*>(sizes_.data()), sizes_.size());
}

IntArrayRef TensorImpl::strides() const {
  KILN_CHECK(!has_symbolic_, Error,
             "strides() called on a tensor with symbolic strides; use sym_strides()");
  return IntArrayRef(reinterpret_cast<const int64_t*>(strides_.data()), strides_.size());
}

int64_t TensorImpl::storage_offset() const { return offset_.expect_int(); }

void* TensorImpl::data() const {
  char* base = static_cast<char*>(storage_->data());
  if (base == nullptr) return nullptr;
  return base + offset_.expect_int() * element_size(dtype_);
}

SymDimVector contiguous_strides(SymIntArrayRef sizes) {
  SymDimVector strides(sizes.size());
  SymInt running = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = running;
    const int64_t s = sizes[d].expect_int();
    running = running * SymInt(s > 1 ? s : 1);
  }
  return strides;
}

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector strides(sizes.size());
  int64_t running = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = running;
    running *= sizes[d] > 1 ? sizes[d] : 1;
  }
  return strides;
}

}  // namespace kiln
