// Lowerings of factories (full, empty, arange) and of cat.
#include "kiln/error.h"
#include "src/lower/handlers/dependency_handler.h"
#include "src/lower/index_simplify.h"
#include "src/lower/lowerings/common.h"

namespace kiln::lower {
namespace {

std::vector<TensorBox> one(TensorBox b) { return {std::move(b)}; }

// full(size, value, dtype, device); empty gives zeros (its contents are unspecified).
std::vector<TensorBox> lower_full(GraphLowering&, const graph::Node& node) {
  const graph::TensorMeta& out = out_meta(node);
  const bool is_full = node.op_def().name == "full";
  const Scalar value = is_full ? arg_constant(node, 1).scalar() : Scalar(0);
  const ScalarType dtype = out.dtype, c = compute_type(dtype);
  return one(make_pointwise(dtype, to_exprs(out.sizes),
                            [=](const Index&) { return cast(scalar_constant(value, c), dtype); }));
}

// arange(start, end, step, dtype, device): value i is start + i*step, in int64 when start and
// step are integers and in double otherwise (as the eager kernel).
std::vector<TensorBox> lower_arange(GraphLowering&, const graph::Node& node) {
  const graph::TensorMeta& out = out_meta(node);
  const Scalar start = arg_constant(node, 0).scalar(), step = arg_constant(node, 2).scalar();
  const bool integral = start.is_integral() && step.is_integral();
  const ScalarType dtype = out.dtype;
  return one(make_pointwise(dtype, to_exprs(out.sizes), [=](const Index& i) {
    if (integral) {
      return cast(ops().index_expr(sym::add(sym::integer(start.to_int64()),
                                            sym::mul(i[0], sym::integer(step.to_int64()))),
                                   kInt64),
                  dtype);
    }
    Val x = ops().to_dtype(ops().index_expr(i[0], kInt64), kFloat64);
    Val v = binary(BinaryOp::add, constant(start.to_double(), kFloat64),
                   binary(BinaryOp::mul, x, constant(step.to_double(), kFloat64)));
    return cast(v, dtype);
  }));
}

// Note [Computed pieces of a cat]
// The where() chain below evaluates every piece at every output index and keeps one, so a piece
// whose body computes (the gradient of an LSTM's four gates, each a chain of sigmoids and
// products, concatenated by chunk's backward) would be computed once per piece of the cat:
// four times the work, in scalar code (the clamped indices do not vectorize). A piece of more
// than kMaxInlineCatPieceOps operations, or with an expensive one, is therefore realized first:
// its own kernel computes it once, and the cat reads it back (one more store and load of the
// piece, far cheaper than recomputing it). Pieces that only load, or add a little, stay inline.
constexpr int kMaxInlineCatPieceOps = 4;

bool computes_too_much_to_inline(const TensorBox& box) {
  if (box.storage()->is_realized()) return false;
  DependencyHandler deps;
  {
    HandlerScope scope(deps);
    box.storage()->pointwise().inner_fn(loop_vars('i', box.storage()->sizes().size()));
  }
  return deps.op_count() > kMaxInlineCatPieceOps || deps.expensive_op_count() > 0;
}

// cat(tensors, dim): along `dim`, input k covers [offset_k, offset_k + size_k). Each input is
// read at an index clamped into its own range, so every load is in bounds, and a chain of
// where() picks the input the index falls in (See Note [Computed pieces of a cat]).
std::vector<TensorBox> lower_cat(GraphLowering& l, const graph::Node& node) {
  const graph::TensorMeta& out = out_meta(node);
  const std::vector<ExprPtr> sizes = to_exprs(out.sizes);
  const int64_t n = static_cast<int64_t>(sizes.size());
  const int64_t dim =
      wrap_dim(node.args().size() > 1 ? arg_constant(node, 1).to_int() : 0, n, "cat");
  struct Piece {
    Loader loader;
    ExprPtr offset;
    ExprPtr size;
  };
  // A 1-dim empty input is skipped by cat (legacy rule); so is any input of size 0 along dim.
  std::vector<const TensorBox*> inputs;
  for (const graph::Value* v : node.args()[0].as_list()) {
    const TensorBox& b = l.box(v);
    if (b.dim() == sizes.size() && b.sizes()[dim] != sym::integer(0)) inputs.push_back(&b);
  }
  if (inputs.size() > 1) {
    for (const TensorBox* b : inputs)
      if (computes_too_much_to_inline(*b)) b->storage()->realize(l);
  }
  std::vector<Piece> pieces;
  ExprPtr offset = sym::integer(0);
  for (const TensorBox* b : inputs) {
    ExprPtr size = b->sizes()[dim];
    pieces.push_back({b->make_loader(), offset, size});
    offset = sym::add(offset, size);
  }
  const ScalarType dtype = out.dtype, c = compute_type(dtype);
  if (pieces.empty()) {
    return one(make_pointwise(dtype, sizes, [=](const Index&) { return constant(0, dtype); }));
  }
  return one(make_pointwise(dtype, sizes, [=](const Index& i) {
    auto piece_value = [&](const Piece& p) {
      Index j = i;
      ExprPtr local = sym::sub(i[dim], p.offset);
      j[dim] = sym::max(sym::min(local, sym::sub(p.size, sym::integer(1))), sym::integer(0));
      return cast(p.loader(j), c);
    };
    Val v = piece_value(pieces.back());
    for (size_t k = pieces.size() - 1; k-- > 0;) {
      Val in_piece =
          ops().index_expr(sym::lt(i[dim], sym::add(pieces[k].offset, pieces[k].size)), kBool);
      v = where(in_piece, piece_value(pieces[k]), v);
    }
    return cast(v, dtype);
  }));
}

// copy_(self, src) and fill_(self, value) as the value they write into self (the in-place part is
// Note [Mutation lowering] in graph_lowering.cpp).
std::vector<TensorBox> lower_copy_(GraphLowering& l, const graph::Node& node) {
  const graph::TensorMeta& out = out_meta(node);
  const std::vector<ExprPtr> sizes = to_exprs(out.sizes);
  Loader src = broadcast_loader(arg_box(l, node, 1), sizes);
  const ScalarType dtype = out.dtype;
  return one(make_pointwise(dtype, sizes, [=](const Index& i) { return cast(src(i), dtype); }));
}

std::vector<TensorBox> lower_fill_(GraphLowering&, const graph::Node& node) {
  const graph::TensorMeta& out = out_meta(node);
  const Scalar value = arg_constant(node, 1).scalar();
  const ScalarType dtype = out.dtype;
  return one(make_pointwise(dtype, to_exprs(out.sizes), [=](const Index&) {
    return cast(scalar_constant(value, compute_type(dtype)), dtype);
  }));
}

}  // namespace

void register_misc_lowerings() {
  register_lowering("copy_", lower_copy_);
  register_lowering("fill_", lower_fill_);
  register_lowering("full", lower_full);
  register_lowering("empty", lower_full);
  register_lowering("arange", lower_arange);
  register_lowering("cat", lower_cat);
}

}  // namespace kiln::lower
