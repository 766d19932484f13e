// Derivatives of the view ops: the gradient of a view is the output gradient put back where the
// view's elements came from in the input.
#include <algorithm>
#include <functional>

#include "src/autograd/formulas/grad_utils.h"

namespace kiln::autograd {
namespace {

// Applies the forward view (same arguments) to a tensor shaped like the view's input.
using ViewFn = std::function<Tensor(const Tensor&)>;

// Note [Backward of a selecting view]
// slice, diagonal, unfold and as_strided select elements of their input; the gradient is a zero
// tensor of the input's shape with the output gradient written at those elements (summed where
// the view repeats an element, as unfold's overlapping windows do).
//  - Plain backward (no create_graph, or a gradient that is not tracked): zeros, then the same
//    view of them, copy_ the gradient in. One allocation and one copy.
//  - Double backward needs the result as a function of the gradient, which an in-place copy into
//    an untracked buffer would lose. The view of arange(n) (n = the input's numel) gives each
//    output element's linear position in the input, and scatter_add puts the gradient there; its
//    derivative in the gradient is a gather, the view itself.
Tensor embed_view_grad(const Tensor& g, IntArrayRef input_sizes, const ViewFn& view,
                       bool repeats_elements) {
  // Note [Functional backward formulas]: no write through a view while a graph is recorded.
  if (!repeats_elements && !functional_formulas() &&
      (!GradMode::is_enabled() || !g.requires_grad())) {
    Tensor out = zeros(input_sizes, g.dtype());
    view(out).copy_(g);
    return out;
  }
  const int64_t n = checked_numel("view backward", input_sizes);
  const Tensor positions = view(arange(n).view(input_sizes)).reshape({-1});
  return zeros({n}, g.dtype()).scatter_add(0, positions, g.reshape({-1})).view(input_sizes);
}

void view_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad().reshape(ctx.sizes(0))); }
void expand_backward(GradContext& ctx) { ctx.set_grad(0, ctx.grad()); }  // engine sums to shape
void transpose_backward(GradContext& ctx) {
  ctx.set_grad(0, ctx.grad().transpose(ctx.int_arg(1), ctx.int_arg(2)));
}
void permute_backward(GradContext& ctx) {
  const IntArrayRef dims = ctx.ints(1);
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> inverse(dims.size());
  for (int64_t i = 0; i < rank; ++i) inverse[wrap_dim("permute backward", dims[i], rank)] = i;
  ctx.set_grad(0, ctx.grad().permute(inverse));
}
// squeeze(self): re-insert every size-1 dim of the input (views, no copy).
void squeeze_backward(GradContext& ctx) {
  const SymIntArrayRef sizes = ctx.sizes(0);
  Tensor g = ctx.grad();
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] == 1) g = g.unsqueeze(static_cast<int64_t>(d));
  ctx.set_grad(0, g);
}
// squeeze.dim(self, dim): a no-op unless that dim had size 1.
void squeeze_dim_backward(GradContext& ctx) {
  const SymIntArrayRef sizes = ctx.sizes(0);
  const int64_t rank = static_cast<int64_t>(sizes.size());
  const Tensor g = ctx.grad();
  if (rank == 0) {
    ctx.set_grad(0, g);
    return;
  }
  const int64_t dim = wrap_dim("squeeze backward", ctx.int_arg(1), rank);
  ctx.set_grad(0, sizes[dim] == 1 ? g.unsqueeze(dim) : g);
}
void unsqueeze_backward(GradContext& ctx) {
  const int64_t rank = static_cast<int64_t>(ctx.sizes(0).size());
  ctx.set_grad(0, ctx.grad().squeeze(wrap_dim("unsqueeze backward", ctx.int_arg(1), rank + 1)));
}

// select(self, dim, index): the gradient unsqueezed at dim, kept at `index` by a comparison with
// the positions along dim (one `where`, differentiable in the gradient).
void select_backward(GradContext& ctx) {
  const DimVector sizes = ctx.int_sizes(0);
  const int64_t rank = static_cast<int64_t>(sizes.size());
  const int64_t dim = wrap_dim("select backward", ctx.int_arg(1), rank);
  int64_t index = ctx.int_arg(2);
  if (index < 0) index += sizes[dim];
  std::vector<int64_t> positions_shape(static_cast<size_t>(rank), 1);
  positions_shape[dim] = sizes[dim];
  const Tensor at_index = arange(sizes[dim]).view(positions_shape) == index;
  ctx.set_grad(0, where(at_index, ctx.grad().unsqueeze(dim), 0));
}

// slice(self, dim, start, end, step)
void slice_backward(GradContext& ctx) {
  const int64_t dim = ctx.int_arg(1);
  const bool symbolic_bounds = (!ctx.arg(2).is_none() && ctx.arg(2).to_sym_int().is_symbolic()) ||
                               (!ctx.arg(3).is_none() && ctx.arg(3).to_sym_int().is_symbolic());
  if (functional_formulas() && ctx.int_arg(4) == 1 && symbolic_bounds) {
    // The same cat with symbolic bounds (x.narrow(0, 0, u0) with u0 read by item<SymInt>()):
    // both zero pieces are kept (either may be empty when the graph runs), so nothing needs the
    // bounds' values while tracing.
    const SymIntArrayRef in = ctx.sizes(0);
    const int64_t d = dim < 0 ? dim + static_cast<int64_t>(in.size()) : dim;
    const SymInt size = in[static_cast<size_t>(d)];
    auto clamp = [&](const IValue& v, SymInt fallback) {
      SymInt x = v.is_none() ? fallback : v.to_sym_int();
      if (x < 0) x = x + size;
      return sym_min(sym_max(x, 0), size);
    };
    const SymInt lo = clamp(ctx.arg(2), 0), hi = sym_max(lo, clamp(ctx.arg(3), size));
    auto zeros_of = [&](SymInt n) {
      SymDimVector sizes(in.begin(), in.end());
      sizes[static_cast<size_t>(d)] = n;
      return zeros(sizes, ctx.grad().dtype());
    };
    ctx.set_grad(0, cat({zeros_of(lo), ctx.grad(), zeros_of(size - hi)}, d));
    return;
  }
  const std::optional<int64_t> start =
      ctx.arg(2).is_none() ? std::nullopt : std::optional(ctx.int_arg(2));
  const std::optional<int64_t> end =
      ctx.arg(3).is_none() ? std::nullopt : std::optional(ctx.int_arg(3));
  const int64_t step = ctx.int_arg(4);
  if (functional_formulas() && step == 1) {
    // Note [Functional backward formulas]: zeros around the gradient, as one cat (which the
    // code generator writes as one loop), not a scatter.
    const DimVector in = ctx.int_sizes(0);
    const int64_t d = dim < 0 ? dim + static_cast<int64_t>(in.size()) : dim;
    const int64_t size = in[d];
    auto clamp = [&](std::optional<int64_t> v, int64_t fallback) {
      int64_t x = v.value_or(fallback);
      if (x < 0) x += size;
      return std::clamp<int64_t>(x, 0, size);
    };
    const int64_t lo = clamp(start, 0), hi = std::max(lo, clamp(end, size));
    std::vector<Tensor> pieces;
    auto zeros_of = [&](int64_t n) {
      DimVector sizes = in;
      sizes[d] = n;
      return zeros(sizes, ctx.grad().dtype());
    };
    if (lo > 0) pieces.push_back(zeros_of(lo));
    pieces.push_back(ctx.grad());
    if (hi < size) pieces.push_back(zeros_of(size - hi));
    ctx.set_grad(0, pieces.size() == 1 ? ctx.grad() : cat(pieces, d));
    return;
  }
  ctx.set_grad(0, embed_view_grad(
                      ctx.grad(), ctx.int_sizes(0),
                      [&](const Tensor& t) { return t.slice(dim, start, end, step); }, false));
}

// diagonal(self, offset, dim1, dim2)
void diagonal_backward(GradContext& ctx) {
  const int64_t offset = ctx.int_arg(1), dim1 = ctx.int_arg(2), dim2 = ctx.int_arg(3);
  ctx.set_grad(0, embed_view_grad(
                      ctx.grad(), ctx.int_sizes(0),
                      [&](const Tensor& t) { return t.diagonal(offset, dim1, dim2); }, false));
}

// unfold(self, dimension, size, step): windows overlap when step < size.
void unfold_backward(GradContext& ctx) {
  const int64_t dim = ctx.int_arg(1), size = ctx.int_arg(2), step = ctx.int_arg(3);
  ctx.set_grad(0, embed_view_grad(
                      ctx.grad(), ctx.int_sizes(0),
                      [&](const Tensor& t) { return t.unfold(dim, size, step); }, step < size));
}

// ---- as_strided ----

struct Geometry {
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return n;
  }
  // The largest storage position it reaches (for numel() > 0; strides are never negative).
  int64_t last() const {
    int64_t p = offset;
    for (size_t d = 0; d < sizes.size(); ++d) p += (sizes[d] - 1) * strides[d];
    return p;
  }
  // Whether two elements share a storage position. Sorted by stride, each dim must step past
  // everything the smaller dims reach.
  bool overlaps() const {
    if (numel() <= 1) return false;
    std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
    for (size_t d = 0; d < sizes.size(); ++d)
      if (sizes[d] > 1) dims.push_back({strides[d], sizes[d]});
    std::sort(dims.begin(), dims.end());
    int64_t reach = 0;
    for (auto [stride, size] : dims) {
      if (stride <= reach) return true;
      reach += (size - 1) * stride;
    }
    return false;
  }
  std::string str() const {
    return fmt::format("sizes {} strides {} offset {}", shape_str(sizes), shape_str(strides),
                       offset);
  }
};

// Note [as_strided backward]
// as_strided reads storage positions, so its gradient lives on the storage: the output gradient is
// summed into a zero buffer covering every position the input or the output reaches (scatter_add,
// so an output that repeats positions sums them), and the input's gradient is the input's own
// geometry (sizes, strides, offset) viewed on that buffer, as PyTorch's as_strided_backward. An
// input whose elements share positions (an expanded tensor) has no well-defined split of the
// gradient: that raises NotImplementedError. The formula needs the input's strides and offset,
// which ArgMeta does not keep, so it saves the input itself.
void as_strided_backward(GradContext& ctx) {
  const Tensor self = ctx.input(0);
  const Tensor g = ctx.grad();
  const Geometry in{{self.sizes().begin(), self.sizes().end()},
                    {self.strides().begin(), self.strides().end()},
                    self.storage_offset()};
  KILN_CHECK(!in.overlaps(), NotImplementedError,
             "as_strided backward: the input ({}) has elements sharing memory, so its gradient "
             "is ambiguous; call .contiguous() on the input before as_strided",
             in.str());
  const Geometry out{ctx.ints(1).vec(), ctx.ints(2).vec(),
                     ctx.arg(3).is_none() ? in.offset : ctx.int_arg(3)};
  if (in.numel() == 0 || out.numel() == 0) {
    ctx.set_grad(0, zeros(in.sizes, g.dtype()));
    return;
  }
  const int64_t base = std::min(in.offset, out.offset);
  const int64_t n = std::max(in.last(), out.last()) - base + 1;
  Tensor storage = zeros({n}, g.dtype());
  if (!out.overlaps() && !functional_formulas() &&
      (!GradMode::is_enabled() || !g.requires_grad())) {
    storage.as_strided(out.sizes, out.strides, out.offset - base).copy_(g);
  } else {  // see Note [Backward of a selecting view]
    const Tensor positions =
        arange(n).as_strided(out.sizes, out.strides, out.offset - base).reshape({-1});
    storage = storage.scatter_add(0, positions, g.reshape({-1}));
  }
  ctx.set_grad(0, storage.as_strided(in.sizes, in.strides, in.offset - base));
}

}  // namespace

void register_view_derivatives(OpRegistry& ops) {
  add_derivatives(ops,
                  {
                      {.op = "view", .backward = view_backward},
                      {.op = "expand", .backward = expand_backward},
                      {.op = "transpose", .backward = transpose_backward},
                      {.op = "permute", .backward = permute_backward},
                      {.op = "squeeze", .backward = squeeze_backward},
                      {.op = "squeeze.dim", .backward = squeeze_dim_backward},
                      {.op = "unsqueeze", .backward = unsqueeze_backward},
                      {.op = "select", .backward = select_backward},
                      {.op = "slice", .backward = slice_backward},
                      {.op = "diagonal", .backward = diagonal_backward},
                      {.op = "unfold", .backward = unfold_backward},
                      {.op = "as_strided", .backward = as_strided_backward, .save_args = bits({0})},
                  });
}

}  // namespace kiln::autograd
