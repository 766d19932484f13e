// Derivatives of the reductions.
#include "src/autograd/formulas/grad_utils.h"

namespace kiln::autograd {
namespace {

// sum(Tensor self, int[] dim, bool keepdim, ScalarType? dtype)
void sum_backward(GradContext& ctx) {
  ctx.set_grad(0, expand_reduced(ctx.grad(), ctx.ints(1), ctx.sizes(0), ctx.bool_arg(2)));
}
// mean(Tensor self, int[] dim, bool keepdim, ScalarType? dtype)
void mean_backward(GradContext& ctx) {
  const IntArrayRef sizes = ctx.sizes(0);
  int64_t count = 1;
  for (int64_t d : reduced_dims(ctx.ints(1), static_cast<int64_t>(sizes.size()))) count *= sizes[d];
  ctx.set_grad(0, expand_reduced(ctx.grad(), ctx.ints(1), sizes, ctx.bool_arg(2)) /
                      static_cast<double>(count));
}

}  // namespace

void register_reduce_derivatives(OpRegistry& ops) {
  add_derivatives(ops, {
                           {.op = "sum", .backward = sum_backward},
                           {.op = "mean", .backward = mean_backward},
                       });
}

}  // namespace kiln::autograd
