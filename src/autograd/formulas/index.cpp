// Derivatives of the index ops. A gather's gradient scatter-adds (gather -> scatter_add,
// index_select -> scatter_add along the dim, index -> index_put_ with accumulate), and a
// scatter's gathers (scatter/scatter_add -> gather for src; the overwritten positions of self get
// no gradient). Index tensors are integers and never get gradients.
#include "src/autograd/formulas/grad_utils.h"

namespace kiln::autograd {
namespace {

// gather(self, dim, index)
void gather_backward(GradContext& ctx) {
  ctx.set_grad(0, zeros(ctx.sizes(0), ctx.grad().dtype())
                      .scatter_add(ctx.int_arg(1), ctx.input(2), ctx.grad()));
}

// index_select(self, dim, index): the index (0-dim or 1-D) viewed along `dim` and expanded to
// the gradient's shape makes it a scatter_add.
void index_select_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  const DimVector self = ctx.int_sizes(0);
  if (self.empty()) {  // a 0-dim self: every selected element is the one value
    ctx.set_grad(0, g.sum().reshape({}));
    return;
  }
  const int64_t d = wrap_dim("index_select", ctx.int_arg(1), static_cast<int64_t>(self.size()));
  DimVector shape(self.size(), 1);
  shape[static_cast<size_t>(d)] = g.size(d);
  const Tensor index = ctx.input(2).reshape(shape).expand(g.sizes());
  ctx.set_grad(0, zeros(self, g.dtype()).scatter_add(d, index, g));
}

// The gradient of a scatter's src: gather at the index, zero where src extends past the index
// (scatter reads only the part of src the index covers).
Tensor scatter_src_grad(const Tensor& g, int64_t dim, const Tensor& index, IntArrayRef src) {
  Tensor r = g.gather(dim, index);
  if (src.empty()) return r.reshape({});
  DimVector pads;
  bool padded = false;
  for (int64_t k = static_cast<int64_t>(src.size()) - 1; k >= 0; --k) {
    pads.push_back(0);
    pads.push_back(src[static_cast<size_t>(k)] - r.size(k));
    padded = padded || pads.back() != 0;
  }
  return padded ? pad(r, pads) : r;
}

// scatter.src(self, dim, index, src)
void scatter_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  const int64_t dim = ctx.int_arg(1);
  const Tensor index = ctx.input(2);
  if (ctx.needs_grad(0)) ctx.set_grad(0, g.scatter(dim, index, Scalar(0.0)));
  if (ctx.needs_grad(3)) ctx.set_grad(3, scatter_src_grad(g, dim, index, ctx.int_sizes(3)));
}

// scatter.value(self, dim, index, value)
void scatter_value_backward(GradContext& ctx) {
  ctx.set_grad(0, ctx.grad().scatter(ctx.int_arg(1), ctx.input(2), Scalar(0.0)));
}

// scatter_add(self, dim, index, src)
void scatter_add_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  if (ctx.needs_grad(0)) ctx.set_grad(0, g);
  if (ctx.needs_grad(3))
    ctx.set_grad(3, scatter_src_grad(g, ctx.int_arg(1), ctx.input(2), ctx.int_sizes(3)));
}

// index(self, indices): every indexed position gets the gradients of all result elements that
// read it (duplicates add up).
void index_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  const Tensor self_grad = zeros(ctx.sizes(0), g.dtype());
  ctx.set_grad(0, index_put_(self_grad, ctx.input_list(1), g, /*accumulate=*/true));
}

// index_put_(self, indices, values, accumulate): values' gradient is the gradient at the
// positions they went to (summed back to their shape by the engine when they were broadcast).
// self keeps its gradient where it was not overwritten; with accumulate it is never overwritten.
void index_put_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  const std::vector<Tensor> indices = ctx.input_list(1);
  if (ctx.needs_grad(0)) {
    ctx.set_grad(0, ctx.bool_arg(3) ? g
                                    : index_put_(g.clone(), indices, zeros({}, g.dtype()),
                                                 /*accumulate=*/false));
  }
  if (ctx.needs_grad(2)) ctx.set_grad(2, index(g, indices));
}

}  // namespace

void register_index_derivatives(OpRegistry& ops) {
  add_derivatives(
      ops, {
               {.op = "gather", .backward = gather_backward, .save_args = bits({2})},
               {.op = "index_select", .backward = index_select_backward, .save_args = bits({2})},
               {.op = "scatter.src", .backward = scatter_backward, .save_args = bits({2})},
               {.op = "scatter.value", .backward = scatter_value_backward, .save_args = bits({2})},
               {.op = "scatter_add", .backward = scatter_add_backward, .save_args = bits({2})},
               {.op = "index", .backward = index_backward, .save_args = bits({1})},
               {.op = "index_put_", .backward = index_put_backward, .save_args = bits({1})},
           });
}

}  // namespace kiln::autograd
