#include "src/lower/ir.h"

#include "kiln/error.h"
#include "src/lower/graph_lowering.h"

namespace kiln::lower {

Layout Layout::contiguous(ScalarType dtype, std::vector<ExprPtr> sizes) {
  Layout l;
  l.dtype = dtype;
  l.strides.resize(sizes.size());
  ExprPtr stride = sym::integer(1);
  for (size_t i = sizes.size(); i-- > 0;) {
    l.strides[i] = stride;
    stride = sym::mul(stride, sizes[i]);
  }
  l.sizes = std::move(sizes);
  l.offset = sym::integer(0);
  return l;
}

ExprPtr Layout::offset_of(const Index& index) const {
  KILN_CHECK(index.size() == sizes.size(), ValueError,
             "lower: an index of {} dims for a buffer of {} dims", index.size(), sizes.size());
  ExprPtr e = offset;
  for (size_t i = 0; i < index.size(); ++i) {
    // A size-1 dim contributes nothing whatever its stride (its index is always 0).
    if (sizes[i] == sym::integer(1)) continue;
    e = sym::add(e, sym::mul(index[i], strides[i]));
  }
  return e;
}

ExprPtr Layout::numel() const {
  ExprPtr n = sym::integer(1);
  for (ExprPtr s : sizes) n = sym::mul(n, s);
  return n;
}

Val Buffer::load(const Index& index) const { return ops().load(ref(), layout_.offset_of(index)); }

const std::vector<ExprPtr>& ComputedBuffer::ranges() const {
  if (const auto* r = std::get_if<Reduction>(&loops_)) return r->ranges;
  return std::get<Pointwise>(loops_).ranges;
}

ScalarType StorageBox::dtype() const {
  return is_realized() ? buffer()->dtype() : pointwise().dtype;
}

const std::vector<ExprPtr>& StorageBox::sizes() const {
  return is_realized() ? buffer()->layout().sizes : pointwise().ranges;
}

const Buffer* StorageBox::realize(GraphLowering& lowering) {
  if (!is_realized()) data_ = lowering.add_computed(std::get<Pointwise>(data_));
  return buffer();
}

Loader StorageBox::make_loader() const {
  if (is_realized()) {
    const Buffer* b = buffer();
    return [b](const Index& index) { return b->load(index); };
  }
  return pointwise().inner_fn;
}

TensorBox TensorBox::of(std::shared_ptr<StorageBox> storage) {
  TensorBox t;
  t.sizes_ = storage->sizes();
  t.storage_ = std::move(storage);
  return t;
}

TensorBox TensorBox::view(std::vector<ExprPtr> sizes,
                          std::function<Index(const Index&)> reindex) const {
  TensorBox t;
  t.storage_ = storage_;
  t.sizes_ = std::move(sizes);
  if (reindex_) {
    // Compose: view index -> this box's index -> storage index.
    t.reindex_ = [outer = std::move(reindex), inner = reindex_](const Index& i) {
      return inner(outer(i));
    };
  } else {
    t.reindex_ = std::move(reindex);
  }
  return t;
}

Index TensorBox::storage_index(const Index& index) const {
  return reindex_ ? reindex_(index) : index;
}

Loader TensorBox::make_loader() const {
  // The storage as it is now: a consumer lowered before the value is realized recomputes its
  // body; one lowered after reads the buffer. Reading the buffer from an earlier consumer would
  // read it before the kernel that writes it runs (buffers run in creation order).
  Loader ld = storage_->make_loader();
  if (!reindex_) return ld;
  return [ld = std::move(ld), r = reindex_](const Index& index) { return ld(r(index)); };
}

}  // namespace kiln::lower
