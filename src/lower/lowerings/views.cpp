// Lowerings of the view ops: each is a TensorBox over the same storage with an index remapping
// (Note [Views never allocate] in ir.h). Output sizes come from the node's meta, which the op's
// meta function already resolved (-1 in view sizes, negative dims, clamped slice bounds).
#include "kiln/error.h"
#include "src/lower/lowerings/common.h"

namespace kiln::lower {
namespace {

std::vector<TensorBox> one(TensorBox b) { return {std::move(b)}; }

// Row-major flatten of `index` over `sizes`, then unflatten over `to`.
Index reshape_index(const Index& index, const std::vector<ExprPtr>& sizes,
                    const std::vector<ExprPtr>& to) {
  ExprPtr flat = sym::integer(0);
  for (size_t d = 0; d < sizes.size(); ++d) flat = sym::add(sym::mul(flat, sizes[d]), index[d]);
  Index out(to.size());
  ExprPtr stride = sym::integer(1);
  for (size_t d = to.size(); d-- > 0;) {
    ExprPtr q = sym::floordiv(flat, stride);
    out[d] = d == 0 ? q : sym::mod(q, to[d]);
    stride = sym::mul(stride, to[d]);
  }
  return out;
}

std::vector<TensorBox> lower_view(GraphLowering& l, const graph::Node& node) {
  const TensorBox& x = arg_box(l, node, 0);
  std::vector<ExprPtr> sizes = to_exprs(out_meta(node).sizes);
  if (sizes == x.sizes()) return one(x);
  std::vector<ExprPtr> from = x.sizes();
  // An empty view is never read; its index arithmetic would divide by a zero size.
  for (ExprPtr s : sizes) {
    if (s == sym::integer(0)) {
      return one(
          x.view(sizes, [n = from.size()](const Index&) { return Index(n, sym::integer(0)); }));
    }
  }
  return one(
      x.view(sizes, [sizes, from](const Index& i) { return reshape_index(i, sizes, from); }));
}

std::vector<TensorBox> lower_permute(GraphLowering& l, const graph::Node& node) {
  const TensorBox& x = arg_box(l, node, 0);
  const int64_t n = static_cast<int64_t>(x.dim());
  std::vector<int64_t> perm;
  for (int64_t d : arg_constant(node, 1).int_list()) perm.push_back(wrap_dim(d, n, "permute"));
  std::vector<ExprPtr> sizes = to_exprs(out_meta(node).sizes);
  return one(x.view(sizes, [perm](const Index& i) {
    Index in(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) in[perm[d]] = i[d];
    return in;
  }));
}

std::vector<TensorBox> lower_transpose(GraphLowering& l, const graph::Node& node) {
  const TensorBox& x = arg_box(l, node, 0);
  const int64_t n = static_cast<int64_t>(x.dim());
  if (n == 0) return one(x);
  const int64_t a = wrap_dim(arg_constant(node, 1).to_int(), n, "transpose");
  const int64_t b = wrap_dim(arg_constant(node, 2).to_int(), n, "transpose");
  std::vector<ExprPtr> sizes = to_exprs(out_meta(node).sizes);
  return one(x.view(sizes, [a, b](const Index& i) {
    Index in = i;
    std::swap(in[a], in[b]);
    return in;
  }));
}

std::vector<TensorBox> lower_expand(GraphLowering& l, const graph::Node& node) {
  const TensorBox& x = arg_box(l, node, 0);
  std::vector<ExprPtr> sizes = to_exprs(out_meta(node).sizes);
  if (sizes == x.sizes()) return one(x);
  const size_t n = sizes.size(), m = x.dim();
  const std::vector<ExprPtr> from = x.sizes();
  return one(x.view(sizes, [from, sizes, n, m](const Index& i) {
    Index in(m);
    for (size_t d = 0; d < m; ++d) in[d] = broadcast_index(from[d], sizes[n - m + d], i[n - m + d]);
    return in;
  }));
}

// slice(self, dim, start?, end?, step): index[dim] -> start + index[dim] * step.
std::vector<TensorBox> lower_slice(GraphLowering& l, const graph::Node& node) {
  const TensorBox& x = arg_box(l, node, 0);
  const int64_t n = static_cast<int64_t>(x.dim());
  const int64_t dim = wrap_dim(arg_constant(node, 1).to_int(), n, "slice");
  const graph::TensorMeta& out = out_meta(node);
  ExprPtr start = sym::integer(0);
  if (has_arg(node, 2)) {
    SymInt s = arg_constant(node, 2).to_sym_int();
    if (s.is_symbolic()) {
      start = s.expr();
    } else {
      // PyTorch's rules: a negative start counts from the end; the start is clamped to
      // [0, size]. On a symbolic size the clamp stays in the index as max(size + start, 0) (a
      // start past the end leaves no elements to index).
      int64_t v = s.raw();
      const ExprPtr size = x.sizes()[dim];
      if (!size->is_integer()) {
        start =
            v < 0 ? sym::max(sym::add(size, sym::integer(v)), sym::integer(0)) : sym::integer(v);
      } else {
        if (v < 0) v = std::max<int64_t>(v + size->value(), 0);
        start = sym::integer(std::min(v, size->value()));
      }
    }
  }
  ExprPtr step = to_expr(arg_constant(node, 4).to_sym_int());
  std::vector<ExprPtr> sizes = to_exprs(out.sizes);
  return one(x.view(sizes, [dim, start, step](const Index& i) {
    Index in = i;
    in[dim] = sym::add(start, sym::mul(i[dim], step));
    return in;
  }));
}

std::vector<TensorBox> lower_select(GraphLowering& l, const graph::Node& node) {
  const TensorBox& x = arg_box(l, node, 0);
  const int64_t n = static_cast<int64_t>(x.dim());
  const int64_t dim = wrap_dim(arg_constant(node, 1).to_int(), n, "select");
  SymInt idx = arg_constant(node, 2).to_sym_int();
  ExprPtr index;
  if (idx.is_symbolic()) {
    index = idx.expr();
  } else {
    int64_t v = idx.raw();
    if (v < 0)
      index = sym::add(x.sizes()[dim], sym::integer(v));
    else
      index = sym::integer(v);
  }
  std::vector<ExprPtr> sizes = to_exprs(out_meta(node).sizes);
  return one(x.view(sizes, [dim, index](const Index& i) {
    Index in = i;
    in.insert(in.begin() + dim, index);
    return in;
  }));
}

std::vector<TensorBox> lower_unsqueeze(GraphLowering& l, const graph::Node& node) {
  const TensorBox& x = arg_box(l, node, 0);
  const int64_t dim =
      wrap_dim(arg_constant(node, 1).to_int(), static_cast<int64_t>(x.dim()) + 1, "unsqueeze");
  std::vector<ExprPtr> sizes = to_exprs(out_meta(node).sizes);
  return one(x.view(sizes, [dim](const Index& i) {
    Index in = i;
    in.erase(in.begin() + dim);
    return in;
  }));
}

// squeeze / squeeze.dim: the removed dims are the size-1 dims the output lacks.
std::vector<TensorBox> lower_squeeze(GraphLowering& l, const graph::Node& node) {
  const TensorBox& x = arg_box(l, node, 0);
  std::vector<ExprPtr> sizes = to_exprs(out_meta(node).sizes);
  if (sizes.size() == x.dim()) return one(x);
  std::vector<bool> removed(x.dim(), false);
  const ExprPtr one_size = sym::integer(1);
  if (node.op_def().name == "squeeze.dim") {
    removed[wrap_dim(arg_constant(node, 1).to_int(), static_cast<int64_t>(x.dim()), "squeeze")] =
        true;
  } else {
    // The dims the meta function dropped: those of size 1, which includes a compound size such
    // as (s0 + 2) // 3 that a guard pinned to 1 (meta_squeeze). The kept dims are the output's
    // sizes in order, so walk both: an input size that is not the next output size was dropped.
    size_t j = 0;
    for (size_t d = 0; d < x.dim(); ++d) {
      const bool kept = j < sizes.size() && x.sizes()[d] == sizes[j] && sizes[j] != one_size;
      removed[d] = !kept;
      j += kept ? 1 : 0;
    }
    if (j != sizes.size()) return {};  // sizes in another form: the extern kernel decides
  }
  return one(x.view(sizes, [removed](const Index& i) {
    Index in;
    size_t j = 0;
    for (bool r : removed) in.push_back(r ? sym::integer(0) : i[j++]);
    return in;
  }));
}

}  // namespace

void register_view_lowerings() {
  register_lowering("view", lower_view);
  register_lowering("reshape", lower_view);
  register_lowering("permute", lower_permute);
  register_lowering("transpose", lower_transpose);
  register_lowering("expand", lower_expand);
  register_lowering("slice", lower_slice);
  register_lowering("select", lower_select);
  register_lowering("unsqueeze", lower_unsqueeze);
  register_lowering("squeeze", lower_squeeze);
  register_lowering("squeeze.dim", lower_squeeze);
}

}  // namespace kiln::lower
