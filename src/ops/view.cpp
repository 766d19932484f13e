// View ops: new metadata over the same storage, never a copy (DESIGN.md section 3). Each has only
// a meta function; it runs the same for CPU and Meta tensors.
#include <algorithm>
#include <numeric>
#include <optional>

#include "src/ops/registry.h"

namespace kiln {
namespace {

// Replaces a single -1 in `sizes` so the element count matches `numel`. With a symbolic numel the
// inferred size is an expression (`view(-1)` of [s0, 4] is [4*s0]); divisibility is decided by the
// simplifier when it can, else guarded.
SymDimVector infer_size(std::string_view op, SymIntArrayRef sizes, SymInt numel) {
  SymDimVector out(sizes.begin(), sizes.end());
  std::optional<size_t> infer;
  SymInt known = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (same(out[i], -1)) {
      KILN_CHECK(!infer, ShapeError, "{}: only one dimension can be -1, got shape {}", op,
                 shape_str(sizes));
      infer = i;
    } else {
      KILN_CHECK(out[i].is_symbolic() || out[i].raw() >= 0, ValueError,
                 "{}: invalid size {} in shape {}", op, out[i], shape_str(sizes));
      known = known * out[i];
    }
  }
  if (infer) {
    KILN_CHECK(!same(known, 0) && sizes_equal(numel % known, 0), ShapeError,
               "{}: shape {} is invalid for input of size {}", op, shape_str(sizes), numel);
    out[*infer] = numel / known;
  } else {
    KILN_CHECK(sizes_equal(known, numel), ShapeError,
               "{}: shape {} is invalid for input of size {}", op, shape_str(sizes), numel);
  }
  return out;
}

// The strides that let `new_sizes` view memory laid out as (sizes, strides), or nullopt when the
// layout cannot be expressed without a copy. Groups of old dims that are contiguous with each
// other can be split and merged freely.
std::optional<DimVector> view_strides(IntArrayRef sizes, IntArrayRef strides,
                                      IntArrayRef new_sizes) {
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

bool all_concrete(SymIntArrayRef v) {
  for (SymInt s : v)
    if (s.is_symbolic()) return false;
  return true;
}
IntArrayRef concrete(SymIntArrayRef v) {
  return IntArrayRef(reinterpret_cast<const int64_t*>(v.data()), v.size());
}

// One run of the view algorithm on SymInts (Note [Symbolic view strides]). A size-1 dim may
// have any stride, so the algorithm skips those; `guard_ones` also counts as 1 a size that is 1
// only at this call's sizes (its hint), which guards it.
std::optional<SymDimVector> sym_view_strides_once(SymIntArrayRef sizes, SymIntArrayRef strides,
                                                  SymIntArrayRef new_sizes, bool guard_ones) {
  auto is_one = [guard_ones](const SymInt& s) {
    return same(s, 1) || (guard_ones && static_cast<bool>(s == 1));
  };
  SymDimVector out(new_sizes.size());
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  SymInt chunk_base_stride = strides.back();
  SymInt tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel = tensor_numel * sizes[d];
    if (d == 0 ||
        (!is_one(sizes[d - 1]) && !sizes_equal(strides[d - 1], tensor_numel * chunk_base_stride))) {
      while (view_d >= 0 &&
             (is_one(new_sizes[view_d]) || static_cast<bool>(view_numel < tensor_numel))) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel = view_numel * new_sizes[view_d];
        --view_d;
      }
      if (!sizes_equal(view_numel, tensor_numel)) return std::nullopt;
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

// Note [Symbolic view strides]
// view_strides on symbolic shapes: a contiguous input (decided structurally, TensorImpl::
// is_contiguous) views as the contiguous strides of the new shape, with no guard; that is the
// common case (flatten, view(-1), splitting heads). Otherwise the same algorithm runs on SymInts,
// where each comparison of sizes is guarded unless the expressions are identical.
std::optional<SymDimVector> sym_view_strides(const Tensor& self, SymIntArrayRef new_sizes) {
  SymIntArrayRef sizes = self.sym_sizes(), strides = self.sym_strides();
  if (all_concrete(sizes) && all_concrete(strides) && all_concrete(new_sizes)) {
    auto out = view_strides(concrete(sizes), concrete(strides), concrete(new_sizes));
    if (!out) return std::nullopt;
    return SymDimVector(out->begin(), out->end());
  }
  if (self.is_contiguous()) return contiguous_strides(new_sizes);
  // An empty tensor views as any shape of no elements, as eager does (view_strides above); a
  // symbolic element count is decided on its hint, with a guard (kiln-fuzz --dynamic seed 993002
  // index 280: a slice to size 6 - s1 viewed as [0]).
  const SymInt numel = self.sym_numel();
  if (sizes.empty() || static_cast<bool>(numel == 0)) return contiguous_strides(new_sizes);
  // Sizes that are 1 structurally first; only if that fails, sizes that are 1 at this call (an
  // expression such as (s0 + 1) // 2), under a guard, so the common views add no guards.
  if (auto out = sym_view_strides_once(sizes, strides, new_sizes, false)) return out;
  return sym_view_strides_once(sizes, strides, new_sizes, true);
}

void meta_view(OpCall& call) {
  const Tensor& self = call.tensor(0);
  SymDimVector sizes = infer_size("view", call.sym_ints(1), self.sym_numel());
  auto strides = sym_view_strides(self, sizes);
  KILN_CHECK(strides.has_value(), ShapeError,
             "view: shape {} is not compatible with the input's size {} and stride {} (at least "
             "one dimension spans across two contiguous subspaces); use reshape(...) instead",
             shape_str(sizes), shape_str(self.sym_sizes()), shape_str(self.sym_strides()));
  call.set_output(
      0, make_view(self, std::move(sizes), std::move(*strides), self.impl()->sym_offset()));
}

void composite_reshape(OpCall& call) {
  const Tensor& self = call.tensor(0);
  SymDimVector sizes = infer_size("reshape", call.sym_ints(1), self.sym_numel());
  if (sym_view_strides(self, sizes)) {
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
  call.set_output(0,
                  make_view(self, std::move(sizes), std::move(strides), self.impl()->sym_offset()));
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
  call.set_output(0,
                  make_view(self, std::move(sizes), std::move(strides), self.impl()->sym_offset()));
}

void meta_slice(OpCall& call) {
  const Tensor& self = call.tensor(0);
  KILN_CHECK(self.dim() > 0, IndexError, "slice: cannot slice a 0-dim tensor");
  const int64_t d = wrap_dim("slice", call.int_arg(1), self.dim());
  const SymInt size = self.size(d);
  const SymInt step = call.sym_int_arg(4);
  KILN_CHECK(step > 0, ValueError, "slice: step must be positive, got {}", step);
  // Python's slice bounds: negative counts from the end, then clamped to [0, size]. On symbolic
  // values each comparison guards unless the bound is the size itself.
  auto clamp_bound = [&](std::optional<SymInt> v, SymInt dflt) {
    if (!v) return dflt;
    if (same(*v, size)) return size;
    SymInt x = *v;
    if (x < 0) x = x + size;
    if (x < 0) return SymInt(0);
    if (x > size) return size;
    return x;
  };
  const SymInt start = clamp_bound(call.arg(2).optional_sym_int(), 0);
  SymInt end = clamp_bound(call.arg(3).optional_sym_int(), size);
  if (!same(start, 0) && end < start) end = start;
  SymDimVector sizes(self.sym_sizes().begin(), self.sym_sizes().end());
  SymDimVector strides(self.sym_strides().begin(), self.sym_strides().end());
  sizes[d] = same(step, 1) ? end - start : (end - start + step - 1) / step;
  const SymInt offset = self.impl()->sym_offset() + start * strides[d];
  strides[d] = strides[d] * step;
  call.set_output(0, make_view(self, std::move(sizes), std::move(strides), offset));
}

void meta_select(OpCall& call) {
  const Tensor& self = call.tensor(0);
  KILN_CHECK(self.dim() > 0, IndexError, "select: cannot index a 0-dim tensor");
  const int64_t d = wrap_dim("select", call.int_arg(1), self.dim());
  const SymInt size = self.size(d);
  SymInt index = call.sym_int_arg(2);
  KILN_CHECK(index >= -size && index < size, IndexError,
             "select: index {} is out of range for dimension {} of size {} (shape {})", index, d,
             size, shape_str(self.sym_sizes()));
  if (index < 0) index = index + size;
  SymDimVector sizes(self.sym_sizes().begin(), self.sym_sizes().end());
  SymDimVector strides(self.sym_strides().begin(), self.sym_strides().end());
  const SymInt offset = self.impl()->sym_offset() + index * strides[d];
  sizes.erase(static_cast<size_t>(d));
  strides.erase(static_cast<size_t>(d));
  call.set_output(0, make_view(self, std::move(sizes), std::move(strides), offset));
}

void meta_expand(OpCall& call) {
  const Tensor& self = call.tensor(0);
  SymIntArrayRef target = call.sym_ints(1);
  const int64_t nd = static_cast<int64_t>(target.size());
  KILN_CHECK(nd >= self.dim(), ShapeError,
             "expand: the number of sizes ({}) must be >= the tensor's dims ({}); shape {} to {}",
             nd, self.dim(), shape_str(self.sym_sizes()), shape_str(target));
  SymDimVector sizes(static_cast<size_t>(nd)), strides(static_cast<size_t>(nd));
  for (int64_t i = nd - 1; i >= 0; --i) {
    const int64_t sd = i - (nd - self.dim());
    SymInt want = target[i];
    if (sd < 0) {
      KILN_CHECK(want.is_symbolic() || want.raw() >= 0, ValueError,
                 "expand: size -1 is not allowed in a new leading dim ({})", shape_str(target));
      sizes[i] = want;
      strides[i] = 0;
      continue;
    }
    const SymInt have = self.size(sd);
    if (same(want, -1)) want = have;
    // A dim of size 1 broadcasts (Note [Broadcasting symbolic sizes]); otherwise sizes must match.
    const bool broadcast = !same(have, want) && static_cast<bool>(have == 1);
    KILN_CHECK(broadcast || sizes_equal(have, want), ShapeError,
               "expand: the size of dim {} ({}) must match the target {} or be 1 (shape {} to {})",
               sd, have, want, shape_str(self.sym_sizes()), shape_str(target));
    sizes[i] = want;
    strides[i] = broadcast ? SymInt(0) : self.sym_strides()[sd];
  }
  call.set_output(0,
                  make_view(self, std::move(sizes), std::move(strides), self.impl()->sym_offset()));
}

void squeeze_dims(OpCall& call, const SmallVector<bool, 8>& drop) {
  const Tensor& self = call.tensor(0);
  SymDimVector sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (drop[d]) continue;
    sizes.push_back(self.sym_sizes()[d]);
    strides.push_back(self.sym_strides()[d]);
  }
  call.set_output(0,
                  make_view(self, std::move(sizes), std::move(strides), self.impl()->sym_offset()));
}

void meta_squeeze(OpCall& call) {
  const Tensor& self = call.tensor(0);
  SmallVector<bool, 8> drop(static_cast<size_t>(self.dim()), false);
  // A symbolic size is compared as a condition: a plain symbol is known to be >= 2 under 0/1
  // specialization (no guard), but an expression such as (s0 + 2) // 3, or a symbol without
  // that specialization, may be 1, and the comparison then guards on its value at the hint.
  for (int64_t d = 0; d < self.dim(); ++d) drop[d] = static_cast<bool>(self.size(d) == 1);
  squeeze_dims(call, drop);
}

void meta_squeeze_dim(OpCall& call) {
  const Tensor& self = call.tensor(0);
  SmallVector<bool, 8> drop(static_cast<size_t>(self.dim()), false);
  if (self.dim() > 0) {
    const int64_t d = wrap_dim("squeeze", call.int_arg(1), self.dim());
    drop[d] = static_cast<bool>(self.size(d) == 1);  // guards, as meta_squeeze
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
  call.set_output(0,
                  make_view(self, std::move(sizes), std::move(strides), self.impl()->sym_offset()));
}

void meta_as_strided(OpCall& call) {
  const Tensor& self = call.tensor(0);
  SymIntArrayRef sym_sizes = call.sym_ints(1);
  SymIntArrayRef sym_strides = call.sym_ints(2);
  const SymInt sym_offset = call.arg(3).optional_sym_int().value_or(self.impl()->sym_offset());
  KILN_CHECK(sym_sizes.size() == sym_strides.size(), ShapeError,
             "as_strided: {} sizes {} but {} strides {}", sym_sizes.size(), shape_str(sym_sizes),
             sym_strides.size(), shape_str(sym_strides));
  if (!all_concrete(sym_sizes) || !all_concrete(sym_strides) || sym_offset.is_symbolic()) {
    // Symbolic: no bounds check against the Meta storage (Note [Meta storage of symbolic
    // tensors]); the eager run of the compiled graph checks the real storage.
    sym_checked_numel("as_strided", sym_sizes);
    call.set_output(0, make_view(self, SymDimVector(sym_sizes.begin(), sym_sizes.end()),
                                 SymDimVector(sym_strides.begin(), sym_strides.end()), sym_offset));
    return;
  }
  IntArrayRef sizes = concrete(sym_sizes);
  IntArrayRef strides = concrete(sym_strides);
  const int64_t offset = sym_offset.raw();
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
  call.set_output(0, make_view(self, SymDimVector(sym_sizes.begin(), sym_sizes.end()),
                               SymDimVector(sym_strides.begin(), sym_strides.end()), offset));
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
  call.set_output(
      0, make_view(self, std::move(sizes), std::move(strides), self.storage_offset() + start));
}

void meta_unfold(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const int64_t d = wrap_dim("unfold", call.int_arg(1), self.dim());
  const int64_t size = call.int_arg(2);
  const int64_t step = call.int_arg(3);
  const int64_t have = self.dim() == 0 ? 1 : int64_t{self.size(d)};
  KILN_CHECK(size >= 0 && size <= have, ValueError,
             "unfold: window size {} must be in [0, {}] (size of dim {})", size, have, d);
  KILN_CHECK(step > 0, ValueError, "unfold: step must be positive, got {}", step);
  SymDimVector sizes(self.sym_sizes().begin(), self.sym_sizes().end());
  SymDimVector strides(self.sym_strides().begin(), self.sym_strides().end());
  const int64_t stride = self.dim() == 0 ? 1 : int64_t{self.stride(d)};
  if (self.dim() > 0) {
    sizes[d] = (have - size) / step + 1;
    strides[d] = stride * step;
  }
  sizes.push_back(size);
  strides.push_back(stride);
  call.set_output(0,
                  make_view(self, std::move(sizes), std::move(strides), self.impl()->sym_offset()));
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
  r.add(view_op(
      "slice",
      "slice(Tensor(a) self, int dim, SymInt? start, SymInt? end, SymInt step) -> Tensor(a)",
      meta_slice));
  r.add(
      view_op("select", "select(Tensor(a) self, int dim, SymInt index) -> Tensor(a)", meta_select));
  r.add(view_op("expand", "expand(Tensor(a) self, SymInt[] size) -> Tensor(a)", meta_expand));
  r.add(view_op("squeeze", "squeeze(Tensor(a) self) -> Tensor(a)", meta_squeeze));
  r.add(view_op("squeeze.dim", "squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)",
                meta_squeeze_dim));
  r.add(view_op("unsqueeze", "unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", meta_unsqueeze));
  r.add(
      view_op("as_strided",
              "as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset) "
              "-> Tensor(a)",
              meta_as_strided));
  r.add(view_op("diagonal", "diagonal(Tensor(a) self, int offset, int dim1, int dim2) -> Tensor(a)",
                meta_diagonal));
  r.add(view_op("unfold", "unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)",
                meta_unfold));
}

// ---- wrappers ----

Tensor Tensor::view(SymIntArrayRef sizes) const {
  static const OpId id = op_id("view");
  return dispatch::call_tensor(id, *this, sizes);
}
Tensor Tensor::reshape(SymIntArrayRef sizes) const {
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
  KILN_CHECK(dim() <= 2, ShapeError,
             "t: expects a tensor with <= 2 dims, got shape {}; use "
             "transpose(dim0, dim1) or permute",
             shape_str(sym_sizes()));
  return dim() < 2 ? *this : transpose(0, 1);
}
Tensor Tensor::slice(int64_t dim, std::optional<SymInt> start, std::optional<SymInt> end,
                     SymInt step) const {
  static const OpId id = op_id("slice");
  return dispatch::call_tensor(id, *this, dim, start, end, step);
}
Tensor Tensor::select(int64_t dim, SymInt index) const {
  static const OpId id = op_id("select");
  return dispatch::call_tensor(id, *this, dim, index);
}
Tensor Tensor::narrow(int64_t dim, SymInt start, SymInt length) const {
  KILN_CHECK(this->dim() > 0, IndexError, "narrow: cannot narrow a 0-dim tensor");
  const int64_t d = wrap_dim("narrow", dim, this->dim());
  const SymInt size = this->size(d);
  if (start < 0) start = start + size;
  KILN_CHECK(start >= 0 && length >= 0 && start + length <= size, IndexError,
             "narrow: start {} with length {} is out of range for dim {} of size {}", start, length,
             d, size);
  return slice(d, start, start + length, 1);
}
Tensor Tensor::expand(SymIntArrayRef sizes) const {
  static const OpId id = op_id("expand");
  return dispatch::call_tensor(id, *this, sizes);
}
Tensor Tensor::expand_as(const Tensor& other) const { return expand(other.sym_sizes()); }
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
  SymDimVector shape;
  for (int64_t d = 0; d < s; ++d) shape.push_back(size(d));
  SymInt merged = 1;
  for (int64_t d = s; d <= e; ++d) merged = merged * size(d);
  shape.push_back(merged);
  for (int64_t d = e + 1; d < dim(); ++d) shape.push_back(size(d));
  return reshape(shape);
}
Tensor Tensor::unflatten(int64_t dim, SymIntArrayRef sizes) const {
  const int64_t d = wrap_dim("unflatten", dim, this->dim());
  SymDimVector shape;
  for (int64_t i = 0; i < d; ++i) shape.push_back(size(i));
  SymDimVector inner = infer_size("unflatten", sizes, size(d));
  for (SymInt s : inner) shape.push_back(s);
  for (int64_t i = d + 1; i < this->dim(); ++i) shape.push_back(size(i));
  return view(shape);
}
Tensor Tensor::as_strided(SymIntArrayRef sizes, SymIntArrayRef strides,
                          std::optional<SymInt> storage_offset) const {
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
