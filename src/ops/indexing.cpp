// Tensor::index / index_put_: the translation of a LibTorch-style index list
// (`t.index({Slice(1, None), None, 0, Ellipsis, mask})`) into basic view ops (select, slice,
// unsqueeze) followed by at most one advanced `index` / `index_put_` op for the tensor entries.
// See Note [Advanced indexing shape] in src/ops/advanced_index.cpp for the result layout.
#include "kiln/ops/creation.h"
#include "kiln/ops/index.h"
#include "src/core/tracing_hooks.h"
#include "src/ops/registry.h"

namespace kiln {
namespace {

struct Translated {
  Tensor view;                  // self after the basic (view) indexing
  std::vector<Tensor> tensors;  // the advanced index list for `view` (undefined = whole dim)
  bool has_tensors = false;
};

// Dims of self an entry consumes: ints, slices and integer tensors 1, bool masks their rank;
// None, Ellipsis and bool values none.
int64_t consumed_dims(const TensorIndex& i) {
  // Tensor first: a tensor entry also reports is_integer() (its variant holds a placeholder 0).
  if (i.is_tensor()) return i.tensor().dtype() == kBool ? i.tensor().dim() : 1;
  if (i.is_integer() || i.is_slice()) return 1;
  return 0;
}

Translated translate(const Tensor& self, const std::vector<TensorIndex>& indices) {
  int64_t specified = 0;
  bool seen_ellipsis = false;
  for (const TensorIndex& i : indices) {
    specified += consumed_dims(i);
    if (i.is_ellipsis()) {
      KILN_CHECK(!seen_ellipsis, IndexError, "index: an index can only have a single ellipsis");
      seen_ellipsis = true;
    }
  }
  KILN_CHECK(specified <= self.dim(), IndexError,
             "index: too many indices for a tensor of dimension {} (shape {}): {} given",
             self.dim(), shape_str(self.sym_sizes()), specified);
  Translated out;
  out.view = self;
  int64_t dim = 0;     // the next dim of out.view to index
  int64_t listed = 0;  // dims of out.view covered by out.tensors so far
  auto record = [&](const Tensor& t, int64_t span) {
    while (listed < dim) {
      out.tensors.emplace_back();
      ++listed;
    }
    out.tensors.push_back(t);
    listed += span;
    dim += span;
    out.has_tensors = true;
  };
  for (const TensorIndex& i : indices) {
    if (i.is_tensor() && !(i.tensor().dtype() == kBool && i.tensor().dim() == 0)) {
      record(i.tensor(), consumed_dims(i));
    } else if (i.is_integer() && !i.is_tensor()) {
      out.view = out.view.select(dim, i.integer());
    } else if (i.is_slice()) {
      const indexing::Slice& s = i.slice();
      KILN_CHECK(s.step > 0, ValueError,
                 "index: slice step must be positive, got {} (negative "
                 "steps are not supported, as in PyTorch; use flip)",
                 s.step);
      out.view = out.view.slice(dim, s.start, s.stop, s.step);
      ++dim;
    } else if (i.is_none()) {
      out.view = out.view.unsqueeze(dim);
      ++dim;
    } else if (i.is_ellipsis()) {
      dim += self.dim() - specified;
    } else if (i.is_bool() ||
               (i.is_tensor() && i.tensor().dtype() == kBool && i.tensor().dim() == 0)) {
      // A bool value adds a dim of size 1 and keeps (true) or drops (false) it: index 0 or none.
      const bool keep = i.is_bool() ? i.boolean() : i.tensor().item<bool>();
      out.view = out.view.unsqueeze(dim);
      const Tensor idx = keep ? zeros({1}, TensorOptions(kInt64).device(self.device()))
                              : empty({0}, TensorOptions(kInt64).device(self.device()));
      record(idx, 1);
    }
  }
  return out;
}

}  // namespace

Tensor Tensor::index(const std::vector<TensorIndex>& indices) const {
  Translated t = translate(*this, indices);
  if (!t.has_tensors) return t.view;
  static const OpId id = op_id("index");
  return dispatch::call_tensor(id, t.view, std::move(t.tensors));
}

Tensor Tensor::index(std::initializer_list<TensorIndex> indices) const {
  return index(std::vector<TensorIndex>(indices));
}

const Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices,
                                 const Tensor& value) const {
  Translated t = translate(*this, std::vector<TensorIndex>(indices));
  if (!t.has_tensors) {
    t.view.copy_(value);
    return *this;
  }
  static const OpId id = op_id("index_put_");
  dispatch::call_boxed(id, t.view, std::move(t.tensors), value, false);
  return *this;
}

const Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices,
                                 const Scalar& value) const {
  // Under a trace `this` is a fake on Meta; the value is a constant the graph captures, so it is
  // made on the CPU (a Meta tensor made here would be one the tracer never saw).
  const Device where = current_tracing_hooks() != nullptr ? Device::CPU : device();
  Tensor v = scalar_to_tensor(value, dtype(), where);
  return index_put_(indices, v);
}

// index_put_ with accumulate, as torch.index_put_(self, indices, values, accumulate).
const Tensor& index_put_(const Tensor& self, const std::vector<Tensor>& indices,
                         const Tensor& values, bool accumulate) {
  static const OpId id = op_id("index_put_");
  dispatch::call_boxed(id, self, indices, values, accumulate);
  return self;
}

Tensor index(const Tensor& self, const std::vector<Tensor>& indices) {
  static const OpId id = op_id("index");
  return dispatch::call_tensor(id, self, indices);
}

}  // namespace kiln
