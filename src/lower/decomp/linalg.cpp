// Decompositions of the matrix-product composites into mm/bmm (extern kernels) and views:
// addmm -> mm + add, so the bias add is a pointwise epilogue the scheduler can fuse into the
// consumer of the product; linear and matmul (composites that only hand-built graphs contain)
// as their eager composites build them (src/ops/linalg.cpp).
#include "src/core/shape.h"
#include "src/lower/decomp/table.h"

namespace kiln::lower {
namespace {

bool is_one(const Scalar& s) { return s.is_floating() ? s.to_double() == 1.0 : s.to_int64() == 1; }

// addmm(self, mat1, mat2, beta, alpha) = alpha * (mat1 @ mat2) + beta * self; beta = 0 never
// reads self (NaNs in it do not leak), as the eager kernel.
std::vector<Value*> addmm(DecompBuilder& b) {
  const Scalar beta = b.constant(3).scalar(), alpha = b.constant(4).scalar();
  Value* prod = b.call1("mm", {b.arg(1), b.arg(2)});
  if (!is_one(alpha)) prod = b.mul(prod, alpha);
  const bool use_self = beta.is_floating() ? beta.to_double() != 0.0 : beta.to_bool();
  if (!use_self) return {prod};
  Value* self = b.input(0);
  if (!is_one(beta)) self = b.mul(self, beta);
  return {b.add(prod, self)};
}

SymInt numel_of(const SymDimVector& shape) {
  SymInt n = 1;
  for (SymInt s : shape) n = n * s;
  return n;
}

Value* transpose(DecompBuilder& b, Value* x) {
  return b.call1("transpose", {DecompBuilder::V(x), DecompBuilder::C(IValue(int64_t{0})),
                               DecompBuilder::C(IValue(int64_t{1}))});
}
Value* mm(DecompBuilder& b, Value* x, Value* y) {
  return b.call1("mm", {DecompBuilder::V(x), DecompBuilder::V(y)});
}

// linear(input, weight, bias?) = input @ weight^T (+ bias) over the rows of input's leading dims.
std::vector<Value*> linear(DecompBuilder& b) {
  Value* input = b.input(0);
  Value* weight = b.input(1);
  Value* bias = b.input(2);
  const SymDimVector& in = input->meta().sizes;
  const SymDimVector lead(in.begin(), in.end() - 1);
  const SymInt in_features = in.back();
  SymDimVector out_shape = lead;
  out_shape.push_back(weight->meta().sizes[0]);
  Value* rows = in.size() == 2 ? input : b.reshape(input, {numel_of(lead), in_features});
  Value* wt = transpose(b, weight);
  Value* prod =
      bias != nullptr
          ? b.call1("addmm", {DecompBuilder::V(bias), DecompBuilder::V(rows), DecompBuilder::V(wt),
                              DecompBuilder::C(IValue(Scalar(int64_t{1}))),
                              DecompBuilder::C(IValue(Scalar(int64_t{1})))})
          : mm(b, rows, wt);
  return {in.size() == 2 ? prod : b.view(prod, out_shape)};
}

// matmul(a, b) by the ranks of its operands, as torch.matmul.
std::vector<Value*> matmul(DecompBuilder& b) {
  Value* x = b.input(0);
  Value* y = b.input(1);
  const SymDimVector &xs = x->meta().sizes, &ys = y->meta().sizes;
  const size_t dx = xs.size(), dy = ys.size();
  if (dx == 1 && dy == 1) return {b.view(mm(b, b.unsqueeze(x, 0), b.unsqueeze(y, 1)), {})};
  if (dx == 2 && dy == 1) return {b.squeeze(mm(b, x, b.unsqueeze(y, 1)), 1)};
  if (dx == 1 && dy == 2) return {b.squeeze(mm(b, b.unsqueeze(x, 0), y), 0)};
  if (dx == 2 && dy == 2) return {mm(b, x, y)};
  const SymInt k = xs[dx - 1];
  if (dx >= 3 && dy <= 2) {
    SymDimVector out_shape(xs.begin(), xs.end() - 1);
    Value* rows = b.reshape(x, {numel_of(out_shape), k});
    Value* prod = mm(b, rows, dy == 1 ? b.unsqueeze(y, 1) : y);
    if (dy == 2) out_shape.push_back(ys[1]);
    return {b.view(prod, out_shape)};
  }
  Value* x3 = dx == 1 ? b.unsqueeze(x, 0) : x;
  Value* y3 = dy == 1 ? b.unsqueeze(y, 1) : y;
  const SymDimVector &x3s = x3->meta().sizes, &y3s = y3->meta().sizes;
  const SymInt n = x3s[x3s.size() - 2], p = y3s[y3s.size() - 1];
  const SymDimVector batch =
      sym_broadcast_shapes("matmul", SymIntArrayRef(x3s.data(), x3s.size() - 2),
                           SymIntArrayRef(y3s.data(), y3s.size() - 2));
  const SymInt nbatch = numel_of(batch);
  SymDimVector ex = batch, ey = batch;
  ex.push_back(n);
  ex.push_back(k);
  ey.push_back(k);
  ey.push_back(p);
  Value* xe = b.reshape(b.call1("expand", {DecompBuilder::V(x3), DecompBuilder::C(IValue(ex))}),
                        {nbatch, n, k});
  Value* ye = b.reshape(b.call1("expand", {DecompBuilder::V(y3), DecompBuilder::C(IValue(ey))}),
                        {nbatch, k, p});
  Value* prod = b.call1("bmm", {DecompBuilder::V(xe), DecompBuilder::V(ye)});
  SymDimVector out_shape = batch;
  if (dx > 1) out_shape.push_back(n);
  if (dy > 1) out_shape.push_back(p);
  return {b.view(prod, out_shape)};
}

}  // namespace

void register_linalg_decompositions(DecompositionTable& t) {
  t.add("addmm", addmm);
  t.add("linear", linear);
  t.add("matmul", matmul);
}

}  // namespace kiln::lower
