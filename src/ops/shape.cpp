// Shape ops: cat, stack, split, chunk, pad, flip, roll, repeat, tril, triu.
// Copying ops use the separable gather (Note [Separable gather] in src/kernels/cpu/shape.h).
#include <algorithm>

#include "kiln/ops/shape.h"
#include "src/kernels/cpu/copy.h"
#include "src/kernels/cpu/shape.h"
#include "src/ops/registry.h"

namespace kiln {
namespace {

using Tables = std::vector<std::vector<int64_t>>;

std::vector<int64_t> identity_table(int64_t size, int64_t stride) {
  std::vector<int64_t> t(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) t[static_cast<size_t>(i)] = i * stride;
  return t;
}

Tables identity_tables(const Tensor& src) {
  Tables tables;
  for (int64_t d = 0; d < src.dim(); ++d)
    tables.push_back(identity_table(src.size(d), src.stride(d)));
  return tables;
}

// ---- cat / stack ----

// PyTorch still skips 1-D tensors of shape [0] in cat, whatever the other inputs' ranks.
// (A symbolic size is never 0, so the test is structural.)
bool skipped_in_cat(const Tensor& t) { return t.dim() == 1 && same(t.size(0), 0); }

void meta_cat(OpCall& call) {
  const std::vector<Tensor>& ts = call.tensors(0);
  KILN_CHECK(!ts.empty(), ValueError, "cat: expected a non-empty list of tensors");
  ScalarType dtype = ts[0].dtype();
  const Tensor* ref = nullptr;
  for (const Tensor& t : ts) {
    dtype = promote_types(dtype, t.dtype());
    KILN_CHECK(t.dim() > 0, ShapeError,
               "cat: zero-dimensional tensor (at position {}) cannot be "
               "concatenated; unsqueeze it first",
               &t - ts.data());
    if (ref == nullptr && !skipped_in_cat(t)) ref = &t;
  }
  if (ref == nullptr) {
    wrap_dim("cat", call.int_arg(1), 1);
    call.set_output(0, dtype, {0});
    return;
  }
  const int64_t d = wrap_dim("cat", call.int_arg(1), ref->dim());
  SymDimVector sizes(ref->sym_sizes().begin(), ref->sym_sizes().end());
  sizes[d] = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor& t = ts[i];
    if (skipped_in_cat(t)) continue;
    KILN_CHECK(t.dim() == ref->dim(), ShapeError,
               "cat: tensors must have the same number of dims; got shape {} and shape {} (at "
               "position {})",
               shape_str(ref->sym_sizes()), shape_str(t.sym_sizes()), i);
    for (int64_t k = 0; k < t.dim(); ++k) {
      KILN_CHECK(k == d || sizes_equal(t.size(k), ref->size(k)), ShapeError,
                 "cat: sizes must match except in dim {}; got shape {} and shape {} (at position "
                 "{}), which differ in dim {}",
                 d, shape_str(ref->sym_sizes()), shape_str(t.sym_sizes()), i, k);
    }
    sizes[d] = sizes[d] + t.size(d);
  }
  call.set_output(0, dtype, sizes);
}

void cpu_cat(OpCall& call) {
  const Tensor& out = call.output(0);
  if (out.numel() == 0) return;
  const int64_t d = wrap_dim("cat", call.int_arg(1), out.dim());
  int64_t offset = 0;
  for (const Tensor& t : call.tensors(0)) {
    if (skipped_in_cat(t)) continue;
    const int64_t n = t.size(d);
    if (n > 0) cpu::copy_into(out.slice(d, offset, offset + n), t);
    offset += n;
  }
}

void composite_stack(OpCall& call) {
  const std::vector<Tensor>& ts = call.tensors(0);
  KILN_CHECK(!ts.empty(), ValueError, "stack: expected a non-empty list of tensors");
  const int64_t d = wrap_dim("stack", call.int_arg(1), ts[0].dim() + 1);
  std::vector<Tensor> parts;
  for (size_t i = 0; i < ts.size(); ++i) {
    KILN_CHECK(
        shapes_equal(ts[i].sym_sizes(), ts[0].sym_sizes()), ShapeError,
        "stack: expects each tensor to be equal size, but got {} at entry 0 and {} at entry {}",
        shape_str(ts[0].sym_sizes()), shape_str(ts[i].sym_sizes()), i);
    parts.push_back(ts[i].unsqueeze(d));
  }
  call.set_output(0, cat(parts, d));
}

// ---- split / chunk: views ----

std::vector<Tensor> split_views(const Tensor& self, int64_t d, SymIntArrayRef sizes) {
  std::vector<Tensor> out;
  SymInt offset = 0;
  for (SymInt s : sizes) {
    out.push_back(self.slice(d, offset, offset + s));
    offset = offset + s;
  }
  return out;
}

void composite_split(OpCall& call) {
  const Tensor& self = call.tensor(0);
  KILN_CHECK(self.dim() > 0, ShapeError, "split: expected a tensor with at least one dim");
  const SymInt split = call.sym_int_arg(1);
  const int64_t d = wrap_dim("split", call.int_arg(2), self.dim());
  const SymInt size = self.size(d);
  if (split.is_symbolic() || size.is_symbolic()) {
    // The number of pieces is the length of the output list: it is guarded (specialized), the
    // pieces stay symbolic (all `split` but the last, which takes the rest).
    KILN_CHECK(split > 0, ValueError,
               "split: split_size must be positive, got {} for dim {} of size {}", split, d, size);
    const int64_t pieces = ((size + split - 1) / split).guard_int();
    SymDimVector sizes;
    for (int64_t i = 0; i + 1 < pieces; ++i) sizes.push_back(split);
    if (pieces > 0) sizes.push_back(size - split * (pieces - 1));
    call.set_output_value(0, split_views(self, d, sizes));
    return;
  }
  const int64_t split_int = split.raw(), size_int = size.raw();
  KILN_CHECK(
      split_int > 0 || (split_int == 0 && size_int == 0), ValueError,
      "split: split_size must be positive (or 0 for an empty dim), got {} for dim {} of size {}",
      split_int, d, size_int);
  DimVector sizes;
  if (size_int == 0) sizes.push_back(0);
  for (int64_t off = 0; off < size_int; off += split_int)
    sizes.push_back(std::min(split_int, size_int - off));
  call.set_output_value(0, split_views(self, d, sizes));
}

void composite_split_with_sizes(OpCall& call) {
  const Tensor& self = call.tensor(0);
  KILN_CHECK(self.dim() > 0, ShapeError,
             "split_with_sizes: expected a tensor with at least one dim");
  SymIntArrayRef sizes = call.sym_ints(1);
  const int64_t d = wrap_dim("split_with_sizes", call.int_arg(2), self.dim());
  SymInt total = 0;
  for (SymInt s : sizes) {
    KILN_CHECK(s.is_symbolic() || s.raw() >= 0, ValueError,
               "split_with_sizes: negative size {} in {}", s, shape_str(sizes));
    total = total + s;
  }
  KILN_CHECK(sizes_equal(total, self.size(d)), ValueError,
             "split_with_sizes: split_sizes {} sum to {} but dim {} has size {}", shape_str(sizes),
             total, d, self.size(d));
  call.set_output_value(0, split_views(self, d, sizes));
}

void composite_chunk(OpCall& call) {
  const Tensor& self = call.tensor(0);
  KILN_CHECK(self.dim() > 0, ShapeError, "chunk: expected a tensor with at least one dim");
  const int64_t chunks = call.int_arg(1);
  KILN_CHECK(chunks > 0, ValueError, "chunk: number of chunks must be positive, got {}", chunks);
  const int64_t d = wrap_dim("chunk", call.int_arg(2), self.dim());
  const int64_t size = self.size(d);
  DimVector sizes;
  if (size == 0) {
    for (int64_t i = 0; i < chunks; ++i) sizes.push_back(0);  // as PyTorch: `chunks` empty pieces
  } else {
    const int64_t step = (size + chunks - 1) / chunks;
    for (int64_t off = 0; off < size; off += step) sizes.push_back(std::min(step, size - off));
  }
  call.set_output_value(0, split_views(self, d, sizes));
}

// ---- pad ----

enum class PadMode { Constant, Reflect, Replicate, Circular };

PadMode parse_pad_mode(const std::string& mode) {
  if (mode == "constant") return PadMode::Constant;
  if (mode == "reflect") return PadMode::Reflect;
  if (mode == "replicate") return PadMode::Replicate;
  if (mode == "circular") return PadMode::Circular;
  throw ValueError(
      fmt::format("pad: unknown mode '{}'; use constant, reflect, replicate or circular", mode));
}

// Output sizes; validates the padding for the mode.
DimVector pad_sizes(const Tensor& self, IntArrayRef pad, PadMode mode) {
  KILN_CHECK(pad.size() % 2 == 0, ValueError, "pad: padding length must be even, got {}",
             shape_str(pad));
  const int64_t npad = static_cast<int64_t>(pad.size()) / 2;
  KILN_CHECK(npad <= self.dim(), ValueError,
             "pad: padding {} pads {} dims but the input of shape {} has only {}", shape_str(pad),
             npad, shape_str(self.sym_sizes()), self.dim());
  DimVector sizes(self.sizes().begin(), self.sizes().end());
  for (int64_t k = 0; k < npad; ++k) {
    const int64_t d = self.dim() - 1 - k;
    const int64_t l = pad[2 * k], r = pad[2 * k + 1], n = self.size(d);
    const int64_t m = n + l + r;
    KILN_CHECK(m >= 0, ShapeError,
               "pad: input size {} of dim {} plus padding {} and {} is negative", n, d, l, r);
    if (mode == PadMode::Reflect) {
      KILN_CHECK(
          l < n && r < n, ValueError,
          "pad: reflect padding ({}, {}) must be smaller than the size {} of dim {} (shape {})", l,
          r, n, d, shape_str(self.sym_sizes()));
    } else if (mode != PadMode::Constant && m > 0) {
      KILN_CHECK(n > 0, ValueError, "pad: {} padding of dim {} needs a non-empty input (shape {})",
                 mode == PadMode::Replicate ? "replicate" : "circular", d,
                 shape_str(self.sym_sizes()));
      KILN_CHECK(mode != PadMode::Circular || (l <= n && r <= n), ValueError,
                 "pad: circular padding ({}, {}) must not exceed the size {} of dim {}", l, r, n,
                 d);
    }
    sizes[d] = m;
  }
  return sizes;
}

void meta_pad(OpCall& call) {
  const Tensor& self = call.tensor(0);
  call.set_output(0, self.dtype(),
                  pad_sizes(self, call.ints(1), parse_pad_mode(call.arg(2).string())));
}

void cpu_pad(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const Tensor& out = call.output(0);
  IntArrayRef pad = call.ints(1);
  const PadMode mode = parse_pad_mode(call.arg(2).string());
  Tables tables = identity_tables(self);
  const int64_t npad = static_cast<int64_t>(pad.size()) / 2;
  for (int64_t k = 0; k < npad; ++k) {
    const int64_t d = self.dim() - 1 - k;
    const int64_t l = pad[2 * k], n = self.size(d), m = out.size(d), stride = self.stride(d);
    std::vector<int64_t>& t = tables[static_cast<size_t>(d)];
    t.assign(static_cast<size_t>(m), 0);
    for (int64_t i = 0; i < m; ++i) {
      int64_t s = i - l;
      switch (mode) {
        case PadMode::Constant:
          break;
        case PadMode::Reflect:
          if (s < 0) s = -s;
          if (s >= n) s = 2 * (n - 1) - s;
          break;
        case PadMode::Replicate:
          s = std::clamp<int64_t>(s, 0, n - 1);
          break;
        case PadMode::Circular:
          s = ((s % n) + n) % n;
          break;
      }
      t[static_cast<size_t>(i)] = (s >= 0 && s < n) ? s * stride : cpu::kOutside;
    }
  }
  const double value = call.arg(3).is_none() ? 0.0 : call.double_arg(3);
  cpu::separable_gather(out, self, tables, Scalar(value));
}

// ---- flip / roll / repeat ----

void meta_same_shape(OpCall& call) {
  const Tensor& self = call.tensor(0);
  call.set_output(0, self.dtype(), self.sym_sizes());
}

SmallVector<bool, 8> dim_mask(std::string_view op, IntArrayRef dims, int64_t ndim) {
  SmallVector<bool, 8> mask(static_cast<size_t>(std::max<int64_t>(ndim, 1)), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(op, d, ndim);
    KILN_CHECK(!mask[w], ValueError, "{}: dim {} appears more than once in {}", op, w,
               shape_str(dims));
    mask[w] = true;
  }
  return mask;
}

void meta_flip(OpCall& call) {
  const Tensor& self = call.tensor(0);
  dim_mask("flip", call.ints(1), self.dim());
  meta_same_shape(call);
}

void cpu_flip(OpCall& call) {
  const Tensor& self = call.tensor(0);
  SmallVector<bool, 8> mask = dim_mask("flip", call.ints(1), self.dim());
  Tables tables = identity_tables(self);
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!mask[d]) continue;
    const int64_t n = self.size(d);
    for (int64_t i = 0; i < n; ++i) tables[d][i] = (n - 1 - i) * self.stride(d);
  }
  cpu::separable_gather(call.output(0), self, tables, 0);
}

void check_roll(const Tensor& self, IntArrayRef shifts, IntArrayRef dims) {
  if (dims.empty()) {
    KILN_CHECK(shifts.size() == 1, ValueError,
               "roll: without dims, shifts must hold one value (the tensor is flattened), got {}",
               shape_str(shifts));
  } else {
    KILN_CHECK(shifts.size() == dims.size(), ValueError,
               "roll: shifts {} and dims {} must have the same length", shape_str(shifts),
               shape_str(dims));
    for (int64_t d : dims) wrap_dim("roll", d, self.dim());
  }
}

void meta_roll(OpCall& call) {
  check_roll(call.tensor(0), call.ints(1), call.ints(2));
  meta_same_shape(call);
}

std::vector<int64_t> roll_table(int64_t n, int64_t shift, int64_t stride) {
  std::vector<int64_t> t(static_cast<size_t>(n));
  if (n == 0) return t;
  const int64_t s = ((shift % n) + n) % n;
  for (int64_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = ((i - s + n) % n) * stride;
  return t;
}

void cpu_roll(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const Tensor& out = call.output(0);
  IntArrayRef shifts = call.ints(1), dims = call.ints(2);
  if (dims.empty()) {
    // Rolling the flattened tensor: a 1-D gather over contiguous views of both.
    const int64_t n = self.numel();
    const Tensor flat = self.contiguous().as_strided({n}, {1});
    cpu::separable_gather(out.as_strided({n}, {1}), flat, {roll_table(n, shifts[0], 1)}, 0);
    return;
  }
  Tables tables = identity_tables(self);
  for (size_t k = 0; k < dims.size(); ++k) {
    const int64_t d = wrap_dim("roll", dims[k], self.dim());
    // Repeated dims add up, as in PyTorch (roll is applied once per entry).
    int64_t shift = 0;
    for (size_t j = 0; j < dims.size(); ++j)
      if (wrap_dim("roll", dims[j], self.dim()) == d)
        shift += shifts[j] % std::max<int64_t>(self.size(d), 1);
    tables[d] = roll_table(self.size(d), shift, self.stride(d));
  }
  cpu::separable_gather(out, self, tables, 0);
}

void meta_repeat(OpCall& call) {
  const Tensor& self = call.tensor(0);
  SymIntArrayRef reps = call.sym_ints(1);
  KILN_CHECK(
      static_cast<int64_t>(reps.size()) >= self.dim(), ShapeError,
      "repeat: the number of repeats ({}) cannot be smaller than the tensor's dims ({}, shape {})",
      reps.size(), self.dim(), shape_str(self.sym_sizes()));
  const int64_t lead = static_cast<int64_t>(reps.size()) - self.dim();
  SymDimVector sizes;
  for (int64_t i = 0; i < static_cast<int64_t>(reps.size()); ++i) {
    KILN_CHECK(reps[i].is_symbolic() || reps[i].raw() >= 0, ValueError,
               "repeat: negative repeat {} in {}", reps[i], shape_str(reps));
    const SymInt n = i < lead ? SymInt(1) : self.size(i - lead);
    sizes.push_back(n * reps[i]);
  }
  sym_checked_numel("repeat", sizes);
  call.set_output(0, self.dtype(), sizes);
}

void cpu_repeat(OpCall& call) {
  const Tensor& self = call.tensor(0);
  const Tensor& out = call.output(0);
  const int64_t lead = out.dim() - self.dim();
  Tables tables;
  for (int64_t i = 0; i < out.dim(); ++i) {
    const int64_t m = out.size(i);
    std::vector<int64_t> t(static_cast<size_t>(m), 0);
    if (i >= lead) {
      const int64_t n = self.size(i - lead), stride = self.stride(i - lead);
      for (int64_t j = 0; j < m; ++j) t[static_cast<size_t>(j)] = (j % n) * stride;
    }
    tables.push_back(std::move(t));
  }
  cpu::separable_gather(out, self, tables, 0);
}

// ---- tril / triu ----

void meta_triangle(OpCall& call) {
  const Tensor& self = call.tensor(0);
  KILN_CHECK(self.dim() >= 2, ShapeError, "{}: input must have at least 2 dims, got shape {}",
             call.name(), shape_str(self.sym_sizes()));
  meta_same_shape(call);
}
void cpu_tril(OpCall& call) {
  cpu::triangle(call.output(0), call.tensor(0), call.int_arg(1), true);
}
void cpu_triu(OpCall& call) {
  cpu::triangle(call.output(0), call.tensor(0), call.int_arg(1), false);
}

OpDef shape_op(const char* name, const char* schema, MetaFn meta, KernelFn cpu) {
  return {.name = name, .schema = schema, .family = "shape", .meta = meta, .cpu = cpu};
}
OpDef composite_op(const char* name, const char* schema, CompositeFn fn) {
  return {.name = name, .schema = schema, .family = "shape", .composite = fn};
}

}  // namespace

void register_shape_ops(OpRegistry& r) {
  r.add(shape_op("cat", "cat(Tensor[] tensors, int dim=0) -> Tensor", meta_cat, cpu_cat));
  r.add(composite_op("stack", "stack(Tensor[] tensors, int dim=0) -> Tensor", composite_stack));
  r.add(composite_op("split",
                     "split(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
                     composite_split));
  r.add(composite_op(
      "split_with_sizes",
      "split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]",
      composite_split_with_sizes));
  r.add(composite_op("chunk", "chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]",
                     composite_chunk));
  r.add(shape_op(
      "pad", "pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor",
      meta_pad, cpu_pad));
  r.add(shape_op("flip", "flip(Tensor self, int[] dims) -> Tensor", meta_flip, cpu_flip));
  r.add(shape_op("roll", "roll(Tensor self, SymInt[] shifts, int[] dims=[]) -> Tensor", meta_roll,
                 cpu_roll));
  r.add(shape_op("repeat", "repeat(Tensor self, SymInt[] repeats) -> Tensor", meta_repeat,
                 cpu_repeat));
  r.add(shape_op("tril", "tril(Tensor self, int diagonal=0) -> Tensor", meta_triangle, cpu_tril));
  r.add(shape_op("triu", "triu(Tensor self, int diagonal=0) -> Tensor", meta_triangle, cpu_triu));
}

// ---- wrappers ----

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  static const OpId id = op_id("cat");
  return dispatch::call_tensor(id, tensors, dim);
}
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  static const OpId id = op_id("stack");
  return dispatch::call_tensor(id, tensors, dim);
}
Tensor pad(const Tensor& input, IntArrayRef pad, std::string_view mode,
           std::optional<double> value) {
  static const OpId id = op_id("pad");
  return dispatch::call_tensor(id, input, pad, mode, value);
}

std::vector<Tensor> Tensor::split(SymInt split_size, int64_t dim) const {
  static const OpId id = op_id("split");
  return dispatch::call_boxed(id, *this, split_size, dim)[0].tensor_list();
}
std::vector<Tensor> Tensor::split(SymIntArrayRef split_sizes, int64_t dim) const {
  static const OpId id = op_id("split_with_sizes");
  return dispatch::call_boxed(id, *this, split_sizes, dim)[0].tensor_list();
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  static const OpId id = op_id("chunk");
  return dispatch::call_boxed(id, *this, chunks, dim)[0].tensor_list();
}
Tensor Tensor::flip(IntArrayRef dims) const {
  static const OpId id = op_id("flip");
  return dispatch::call_tensor(id, *this, dims);
}
Tensor Tensor::roll(IntArrayRef shifts, IntArrayRef dims) const {
  static const OpId id = op_id("roll");
  return dispatch::call_tensor(id, *this, shifts, dims);
}
Tensor Tensor::repeat(SymIntArrayRef repeats) const {
  static const OpId id = op_id("repeat");
  return dispatch::call_tensor(id, *this, repeats);
}
Tensor Tensor::tril(int64_t diagonal) const {
  static const OpId id = op_id("tril");
  return dispatch::call_tensor(id, *this, diagonal);
}
Tensor Tensor::triu(int64_t diagonal) const {
  static const OpId id = op_id("triu");
  return dispatch::call_tensor(id, *this, diagonal);
}

}  // namespace kiln
