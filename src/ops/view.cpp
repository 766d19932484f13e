// View ops: new metadata over the same storage, never a copy (DESIGN.md section 3). Each has only
// a meta function; it runs the same for CPU and Meta tensors.
#include <algorithm>
#include <numeric>
#include <optional>

#include "src/ops/registry.h"

namespace kiln {
namespace {

SymDimVector sym(IntArrayRef v) { return SymDimVector(v.begin(), v.end()); }

// Replaces a single -1 in `sizes` so the element count matches `numel`.
DimVector infer_size(std::string_view op, IntArrayRef sizes, int64_t numel) {
  DimVector out(sizes.begin(), sizes.end());
  std::optional<size_t> infer;
  int64_t known = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      KILN_CHECK(!infer, ShapeError, "{}: only one dimension can be -1, got shape {}", op,
                 shape_str(sizes));
      infer = i;
    } else {
      KILN_CHECK(out[i] >= 0, ValueError, "{}: invalid size {} in shape {}", op, out[i],
                 shape_str(sizes));
      known *= out[i];
    }
  }
  if (infer) {
    KILN_CHECK(known != 0 && numel % known == 0, ShapeError,
               "{}: shape {} is invalid for input of size {}", op, shape_str(sizes), numel);
    out[*infer] = numel / known;
  } else {
    KILN_CHECK(known == numel, ShapeError, "{}: shape {} is invalid for input of size {}", op,
               shape_str(sizes), numel);
  }
  return out;
}

// The strides that let `new_sizes` view memory laid out as (sizes, strides), or nullopt when the
// layout cannot be expressed without a copy. Groups of old dims that are contiguous with each
// other can be split and merged freely.
std::optional<DimVector> view_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef new_sizes) {
  DimVector out(new_sizes.size());
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel == 0 || sizes.empty()) {  // nothing to preserve: any layout is a valid view
    DimVector c = contiguous_strides(new_sizes);
    return c;
  }
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_base_stride = strides.empty() ? 1 : strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    if (d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

void meta_view(OpCall& call) {
  const Tensor& self = call.tensor(0);
  DimVector sizes = infer_size("view", call.ints(1), self.numel());
  auto strides = view_strides(self.sizes(), self.strides(), sizes);
  KILN_CHECK(strides.has_value(), ShapeError,
             "view: shape {} is not compatible with the input's size {} and stride {} (at least "
             "one dimension spans across two contiguous subspaces); use reshape(...) instead",
             shape_str(sizes), shape_str(self.sizes()), shape_str(self.strides()));
  call.set_output(0, make_view(self, sym(sizes), sym(*strides), self.impl()->sym_offset()));
}

void composite_reshape(OpCall& call) {
  const Tensor& self = call.tensor(0);
  DimVector sizes = infer_size("reshape", call.ints(1), self.numel());
  if (view_strides(self.sizes(), self.strides(), sizes)) {
    call.set_output(0, self.view(sizes));
  } else {
    call.set_output(0, self.clone().view(sizes));
  }
}

void meta_permute(OpCall& call) {
  const Tensor& self = call.tensor(0);
  IntArrayRef dims = call.ints(1);
  const int64_t nd = self.dim();
  KILN_CHECK(static_cast<int64_t>(dims.size()) == nd, ShapeError,
             "permute: got {} dims {} for a tensor with {} dims", dims.size(), shape_str(dims), nd);
  SymDimVector sizes(static_cast<size_t>(nd)), strides(static_cast<size_t>(nd));
  SmallVector<bool, 8> seen(static_cast<size_t>(nd), false);
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t d = wrap_dim("permute", dims[i], nd);
    KILN_CHECK(!seen[d], ValueError, "permute: dim {} appears twice in {}", d, shape_str(dims));
    seen[d] = true;
    sizes[i] = self.sym_sizes()[d];
    strides[i] = self.sym_strides()[d];
  }
  call.set_output(0, make_view(self, std::move(sizes), std::move(strides), self.impl()->sym_offset()));
}

void meta_transpose(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const int64_t nd = self.dim();
  const int64_t d0 = wrap_dim("transpose", call.int_arg(1), nd);
  const int64_t d1 = wrap_dim("transpose", call.int_arg(2), nd);
  SymDimVector sizes(self.sym_sizes().begin(), self.sym_sizes().end());
  SymDimVector strides(self.sym_strides().begin(), self.sym_strides().end());
  if (nd > 0) {
    std::swap(sizes[d0], sizes[d1]);
    std::swap(strides[d0], strides[d1]);
  }
  call.set_output(0, make_view(self, std::move(sizes), std::move(strides), self.impl()->sym_offset()));
}

void meta_slice(OpCall& call) {
  const Tensor& self = call.tensor(0);
  KILN_CHECK(self.dim() > 0, IndexError, "slice: cannot slice a 0-dim tensor");
  const int64_t d = wrap_dim("slice", call.int_arg(1), self.dim());
  const int64_t size = self.size(d);
  const int64_t step = call.int_arg(4);
  KILN_CHECK(step > 0, ValueError, "slice: step must be positive, got {}", step);
  auto clamp_bound = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v < 0 ? *v + size : *v;
    return std::clamp<int64_t>(x, 0, size);
  };
  const int64_t start = clamp_bound(call.arg(2).optional_int(), 0);
  const int64_t end = std::max(start, clamp_bound(call.arg(3).optional_int(), size));
  SymDimVector sizes(self.sym_sizes().begin(), self.sym_sizes().end());
  SymDimVector strides(self.sym_strides().begin(), self.sym_strides().end());
  sizes[d] = (end - start + step - 1) / step;
  const SymInt offset = self.impl()->sym_offset() + SymInt(start) * strides[d];
  strides[d] = strides[d] * SymInt(step);
  call.set_output(0, make_view(self, std::move(sizes), std::move(strides), offset));
}

void meta_select(OpCall& call) {
  const Tensor& self = call.tensor(0);
  KILN_CHECK(self.dim() > 0, IndexError, "select: cannot index a 0-dim tensor");
  const int64_t d = wrap_dim("select", call.int_arg(1), self.dim());
  const int64_t size = self.size(d);
  int64_t index = call.int_arg(2);
  KILN_CHECK(index >= -size && index < size, IndexError,
             "select: index {} is out of range for dimension {} of size {} (shape {})", index, d,
             size, shape_str(self.sizes()));
  if (index < 0) index += size;
  SymDimVector sizes(self.sym_sizes().begin(), self.sym_sizes().end());
  SymDimVector strides(self.sym_strides().begin(), self.sym_strides().end());
  const SymInt offset = self.impl()->sym_offset() + SymInt(index) * strides[d];
  sizes.erase(static_cast<size_t>(d));
  strides.erase(static_cast<size_t>(d));
  call.set_output(0, make_view(self, std::move(sizes), std::move(strides), offset));
}

void meta_expand(OpCall& call) {
  const Tensor& self = call.tensor(0);
  IntArrayRef target = call.ints(1);
  const int64_t nd = static_cast<int64_t>(target.size());
  KILN_CHECK(nd >= self.dim(), ShapeError,
             "expand: the number of sizes ({}) must be >= the tensor's dims ({}); shape {} to {}",
             nd, self.dim(), shape_str(self.sizes()), shape_str(target));
  SymDimVector sizes(static_cast<size_t>(nd)), strides(static_cast<size_t>(nd));
  for (int64_t i = nd - 1; i >= 0; --i) {
    const int64_t sd = i - (nd - self.dim());
    int64_t want = target[i];
    if (sd < 0) {
      KILN_CHECK(want >= 0, ValueError, "expand: size -1 is not allowed in a new leading dim ({})",
                 shape_str(target));
      sizes[i] = want;
      strides[i] = 0;
      continue;
    }
    const int64_t have = self.size(sd);
    if (want == -1) want = have;
    KILN_CHECK(have == want || have == 1, ShapeError,
               "expand: the size of dim {} ({}) must match the target {} or be 1 (shape {} to {})",
               sd, have, want, shape_str(self.sizes()), shape_str(target));
    sizes[i] = want;
    strides[i] = have == want ? self.sym_strides()[sd] : SymInt(0);
  }
  call.set_output(0, make_view(self, std::move(sizes), std::move(strides), self.impl()->sym_offset()));
}

void squeeze_dims(OpCall& call, const SmallVector<bool, 8>& drop) {
  const Tensor& self = call.tensor(0);
  SymDimVector sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (drop[d]) continue;
    sizes.push_back(self.sym_sizes()[d]);
    strides.push_back(self.sym_strides()[d]);
  }
  call.set_output(0, make_view(self, std::move(sizes), std::move(strides), self.impl()->sym_offset()));
}

void meta_squeeze(OpCall& call) {
  const Tensor& self = call.tensor(0);
  SmallVector<bool, 8> drop(static_cast<size_t>(self.dim()), false);
  for (int64_t d = 0; d < self.dim(); ++d) drop[d] = self.size(d) == 1;
  squeeze_dims(call, drop);
}

void meta_squeeze_dim(OpCall& call) {
  const Tensor& self = call.tensor(0);
  SmallVector<bool, 8> drop(static_cast<size_t>(self.dim()), false);
  if (self.dim() > 0) {
    const int64_t d = wrap_dim("squeeze", call.int_arg(1), self.dim());
    drop[d] = self.size(d) == 1;
  }
  squeeze_dims(call, drop);
}

void meta_unsqueeze(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const int64_t d = wrap_dim("unsqueeze", call.int_arg(1), self.dim() + 1);
  SymDimVector sizes(self.sym_sizes().begin(), self.sym_sizes().end());
  SymDimVector strides(self.sym_strides().begin(), self.sym_strides().end());
  const SymInt stride = d < self.dim() ? sizes[d] * strides[d] : SymInt(1);
  sizes.insert(static_cast<size_t>(d), SymInt(1));
  strides.insert(static_cast<size_t>(d), stride);
  call.set_output(0, make_view(self, std::move(sizes), std::move(strides), self.impl()->sym_offset()));
}

void meta_as_strided(OpCall& call) {
  const Tensor& self = call.tensor(0);
  IntArrayRef sizes = call.ints(1);
  IntArrayRef strides = call.ints(2);
  const int64_t offset = call.arg(3).optional_int().value_or(self.storage_offset());
  KILN_CHECK(sizes.size() == strides.size(), ShapeError,
             "as_strided: {} sizes {} but {} strides {}", sizes.size(), shape_str(sizes),
             strides.size(), shape_str(strides));
  checked_numel("as_strided", sizes);
  KILN_CHECK(offset >= 0, ValueError, "as_strided: negative storage offset {}", offset);
  int64_t max_index = offset;
  bool empty = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    KILN_CHECK(strides[i] >= 0, ValueError, "as_strided: negative stride {} in {}", strides[i],
               shape_str(strides));
    if (sizes[i] == 0) empty = true;
    max_index += (sizes[i] - 1) * strides[i];
  }
  const int64_t capacity =
      static_cast<int64_t>(self.impl()->storage()->nbytes()) / self.element_size();
  KILN_CHECK(empty || max_index < capacity, IndexError,
             "as_strided: sizes {} with strides {} and offset {} reach element {}, but the storage "
             "holds {} elements",
             shape_str(sizes), shape_str(strides), offset, max_index, capacity);
  call.set_output(0, make_view(self, sym(sizes), sym(strides), offset));
}

void meta_diagonal(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const int64_t off = call.int_arg(1);
  const int64_t d1 = wrap_dim("diagonal", call.int_arg(2), self.dim());
  const int64_t d2 = wrap_dim("diagonal", call.int_arg(3), self.dim());
  KILN_CHECK(d1 != d2, ValueError, "diagonal: dim1 and dim2 must differ, both are {}", d1);
  int64_t len, start;
  if (off >= 0) {
    len = std::max<int64_t>(0, std::min(self.size(d1), self.size(d2) - off));
    start = off * self.stride(d2);
  } else {
    len = std::max<int64_t>(0, std::min(self.size(d1) + off, self.size(d2)));
    start = -off * self.stride(d1);
  }
  if (len == 0) start = 0;
  SymDimVector sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d == d1 || d == d2) continue;
    sizes.push_back(self.size(d));
    strides.push_back(self.stride(d));
  }
  sizes.push_back(len);
  strides.push_back(self.stride(d1) + self.stride(d2));
  call.set_output(0, make_view(self, std::move(sizes), std::move(strides),
                               self.storage_offset() + start));
}

void meta_unfold(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const int64_t d = wrap_dim("unfold", call.int_arg(1), self.dim());
  const int64_t size = call.int_arg(2);
  const int64_t step = call.int_arg(3);
  const int64_t have = self.dim() == 0 ? 1 : self.size(d);
  KILN_CHECK(size >= 0 && size <= have, ValueError,
             "unfold: window size {} must be in [0, {}] (size of dim {})", size, have, d);
  KILN_CHECK(step > 0, ValueError, "unfold: step must be positive, got {}", step);
  SymDimVector sizes(self.sym_sizes().begin(), self.sym_sizes().end());
  SymDimVector strides(self.sym_strides().begin(), self.sym_strides().end());
  const int64_t stride = self.dim() == 0 ? 1 : self.stride(d);
  if (self.dim() > 0) {
    sizes[d] = (have - size) / step + 1;
    strides[d] = stride * step;
  }
  sizes.push_back(size);
  strides.push_back(stride);
  call.set_output(0, make_view(self, std::move(sizes), std::move(strides), self.impl()->sym_offset()));
}

OpDef view_op(const char* name, const char* schema, MetaFn meta) {
  return {.name = name, .schema = schema, .family = "view", .meta = meta, .tags = kTagView};
}

}  // namespace

void register_view_ops(OpRegistry& r) {
  r.add(view_op("view", "view(Tensor(a) self, SymInt[] size) -> Tensor(a)", meta_view));
  r.add({.name = "reshape",
         .schema = "reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)",
         .family = "view",
         .composite = composite_reshape});
  r.add(view_op("permute", "permute(Tensor(a) self, int[] dims) -> Tensor(a)", meta_permute));
  r.add(view_op("transpose", "transpose(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
                meta_transpose));
  r.add(view_op("slice",
                "slice(Tensor(a) self, int dim, SymInt? start, SymInt? end, SymInt step) -> Tensor(a)",
                meta_slice));
  r.add(view_op("select", "select(Tensor(a) self, int dim, SymInt index) -> Tensor(a)", meta_select));
  r.add(view_op("expand", "expand(Tensor(a) self, SymInt[] size) -> Tensor(a)", meta_expand));
  r.add(view_op("squeeze", "squeeze(Tensor(a) self) -> Tensor(a)", meta_squeeze));
  r.add(view_op("squeeze.dim", "squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)", meta_squeeze_dim));
  r.add(view_op("unsqueeze", "unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", meta_unsqueeze));
  r.add(view_op("as_strided",
                "as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset) "
                "-> Tensor(a)",
                meta_as_strided));
  r.add(view_op("diagonal", "diagonal(Tensor(a) self, int offset, int dim1, int dim2) -> Tensor(a)",
                meta_diagonal));
  r.add(view_op("unfold", "unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)",
                meta_unfold));
}

// ---- wrappers ----

Tensor Tensor::view(IntArrayRef sizes) const {
  static const OpId id = op_id("view");
  return dispatch::call_tensor(id, *this, sizes);
}
Tensor Tensor::reshape(IntArrayRef sizes) const {
  static const OpId id = op_id("reshape");
  return dispatch::call_tensor(id, *this, sizes);
}
Tensor Tensor::permute(IntArrayRef dims) const {
  static const OpId id = op_id("permute");
  return dispatch::call_tensor(id, *this, dims);
}
Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  static const OpId id = op_id("transpose");
  return dispatch::call_tensor(id, *this, dim0, dim1);
}
Tensor Tensor::t() const {
  KILN_CHECK(dim() <= 2, ShapeError, "t: expects a tensor with <= 2 dims, got shape {}; use "
             "transpose(dim0, dim1) or permute", shape_str(sizes()));
  return dim() < 2 ? *this : transpose(0, 1);
}
Tensor Tensor::slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                     int64_t step) const {
  static const OpId id = op_id("slice");
  return dispatch::call_tensor(id, *this, dim, start, end, step);
}
Tensor Tensor::select(int64_t dim, int64_t index) const {
  static const OpId id = op_id("select");
  return dispatch::call_tensor(id, *this, dim, index);
}
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  KILN_CHECK(this->dim() > 0, IndexError, "narrow: cannot narrow a 0-dim tensor");
  const int64_t d = wrap_dim("narrow", dim, this->dim());
  const int64_t size = this->size(d);
  if (start < 0) start += size;
  KILN_CHECK(start >= 0 && length >= 0 && start + length <= size, IndexError,
             "narrow: start {} with length {} is out of range for dim {} of size {}", start, length,
             d, size);
  return slice(d, start, start + length, 1);
}
Tensor Tensor::expand(IntArrayRef sizes) const {
  static const OpId id = op_id("expand");
  return dispatch::call_tensor(id, *this, sizes);
}
Tensor Tensor::expand_as(const Tensor& other) const { return expand(other.sizes()); }
Tensor Tensor::squeeze() const {
  static const OpId id = op_id("squeeze");
  return dispatch::call_tensor(id, *this);
}
Tensor Tensor::squeeze(int64_t dim) const {
  static const OpId id = op_id("squeeze.dim");
  return dispatch::call_tensor(id, *this, dim);
}
Tensor Tensor::unsqueeze(int64_t dim) const {
  static const OpId id = op_id("unsqueeze");
  return dispatch::call_tensor(id, *this, dim);
}
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  const int64_t s = wrap_dim("flatten", start_dim, dim());
  const int64_t e = wrap_dim("flatten", end_dim, dim());
  KILN_CHECK(s <= e, ValueError, "flatten: start_dim {} must not come after end_dim {}", s, e);
  DimVector shape;
  for (int64_t d = 0; d < s; ++d) shape.push_back(size(d));
  int64_t merged = 1;
  for (int64_t d = s; d <= e; ++d) merged *= size(d);
  shape.push_back(merged);
  for (int64_t d = e + 1; d < dim(); ++d) shape.push_back(size(d));
  return reshape(shape);
}
Tensor Tensor::unflatten(int64_t dim, IntArrayRef sizes) const {
  const int64_t d = wrap_dim("unflatten", dim, this->dim());
  DimVector shape;
  for (int64_t i = 0; i < d; ++i) shape.push_back(size(i));
  DimVector inner = infer_size("unflatten", sizes, size(d));
  for (int64_t s : inner) shape.push_back(s);
  for (int64_t i = d + 1; i < this->dim(); ++i) shape.push_back(size(i));
  return view(shape);
}
Tensor Tensor::as_strided(IntArrayRef sizes, IntArrayRef strides,
                          std::optional<int64_t> storage_offset) const {
  static const OpId id = op_id("as_strided");
  return dispatch::call_tensor(id, *this, sizes, strides, storage_offset);
}
Tensor Tensor::diagonal(int64_t offset, int64_t dim1, int64_t dim2) const {
  static const OpId id = op_id("diagonal");
  return dispatch::call_tensor(id, *this, offset, dim1, dim2);
}
Tensor Tensor::unfold(int64_t dim, int64_t size, int64_t step) const {
  static const OpId id = op_id("unfold");
  return dispatch::call_tensor(id, *this, dim, size, step);
}

}  // namespace kiln
