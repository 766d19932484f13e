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
  specialized_.reset();
  refresh_caches();
}

namespace {

// A size that may be 1. Symbolic sizes are assumed not to be: under 0/1 specialization (the
// ShapeEnv default) a size that is 0 or 1 is a constant, never a symbol.
bool may_be_one(SymInt size) { return size.is_concrete() && size.raw() == 1; }

}  // namespace

void TensorImpl::refresh_caches() {
  has_symbolic_ = offset_.is_symbolic();
  for (SymInt s : sizes_) has_symbolic_ |= s.is_symbolic();
  for (SymInt s : strides_) has_symbolic_ |= s.is_symbolic();
  if (!has_symbolic_) [[likely]] {
    int64_t n = 1;
    for (SymInt s : sizes_) n *= s.raw();
    numel_ = n;
    // Contiguous: strides match row-major, ignoring dims of size 1 (any stride is fine there).
    bool contiguous = true;
    int64_t expected = 1;
    for (int64_t d = dim() - 1; d >= 0; --d) {
      const int64_t size = sizes_[d].raw();
      if (size == 1) continue;
      if (strides_[d].raw() != expected) {
        contiguous = false;
        break;
      }
      expected *= size;
    }
    is_contiguous_ = contiguous || n == 0;
    return;
  }
  // Symbolic: the same rules on expressions, without guards (see is_contiguous()).
  SymInt n = 1;
  for (SymInt s : sizes_) n = n * s;
  numel_ = n;
  bool contiguous = true;
  SymInt expected = 1;
  for (int64_t d = dim() - 1; d >= 0; --d) {
    if (may_be_one(sizes_[d])) continue;
    if (!same(strides_[d], expected)) {
      contiguous = false;
      break;
    }
    expected = expected * sizes_[d];
  }
  is_contiguous_ = contiguous || (n.is_concrete() && n.raw() == 0);
}

const TensorImpl::Specialized& TensorImpl::specialized() const {
  if (!specialized_) {
    auto s = std::make_unique<Specialized>();
    for (SymInt v : sizes_) s->sizes.push_back(v.is_symbolic() ? v.guard_int() : v.raw());
    for (SymInt v : strides_) s->strides.push_back(v.is_symbolic() ? v.guard_int() : v.raw());
    s->offset = offset_.is_symbolic() ? offset_.guard_int() : offset_.raw();
    specialized_ = std::move(s);
  }
  return *specialized_;
}

void* TensorImpl::data() const {
  char* base = static_cast<char*>(storage_->data());
  if (base == nullptr) return nullptr;
  return base + offset_.expect_int() * element_size(dtype_);
}

// Note [Contiguous strides of symbolic sizes]
// Eager strides count sizes 0 and 1 as 1 (PyTorch's rule; the stride of such a dim is never used
// to address memory). A symbolic size is multiplied in as is: it is never 0 or 1 under 0/1
// specialization, and for an unbacked size that turns out 0 or 1 the stride it feeds is again never
// used to address memory. This keeps strides readable (`[s1, 1]`, not `[Max(1, s1), 1]`).
SymDimVector contiguous_strides(SymIntArrayRef sizes) {
  SymDimVector strides(sizes.size());
  SymInt running = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    strides[d] = running;
    const SymInt s = sizes[d];
    if (s.is_symbolic()) {
      running = running * s;
    } else {
      running = running * SymInt(s.raw() > 1 ? s.raw() : 1);
    }
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
