// Derivatives of the reductions and of the ops along one dim (scans, softmax, sort, topk), as
// PyTorch's derivatives.yaml defines them. A reduction's gradient has the output's shape; it is
// made broadcastable against the input again by re-inserting the reduced dims (unsqueeze_reduced)
// and expanded, which is a view: nothing of the input's size is written for sum and mean.
#include <algorithm>
#include <cmath>

#include "src/autograd/formulas/grad_utils.h"
#include "src/dispatch/dispatcher.h"

namespace kiln::autograd {
namespace {

int64_t rank_of(const GradContext& ctx) { return static_cast<int64_t>(ctx.sizes(0).size()); }

// Number of input elements that went into each output element of a reduction over `dims`.
int64_t reduced_count(IntArrayRef sizes, IntArrayRef dims) {
  int64_t count = 1;
  for (int64_t d : reduced_dims(dims, static_cast<int64_t>(sizes.size()))) count *= sizes[d];
  return count;
}

// Suffix sums along `dim`: out[k] = sum_{j >= k} t[j].
Tensor reversed_cumsum(const Tensor& t, int64_t dim) {
  return t.flip({dim}).cumsum(dim).flip({dim});
}

// sum(self, dim, keepdim, dtype)
void sum_backward(GradContext& ctx) {
  ctx.set_grad(0, expand_reduced(ctx.grad(), ctx.ints(1), ctx.sizes(0), ctx.bool_arg(2)));
}

// mean(self, dim, keepdim, dtype): divide the small gradient, then expand it (a view).
// With symbolic sizes the count is a symbol expression: the division reads it as a tensor the
// graph computes (sym_scalar_tensor), so a compiled backward serves every size without a guard.
void mean_backward(GradContext& ctx) {
  const SymIntArrayRef sizes = ctx.sizes(0);
  SymInt count = 1;
  for (int64_t d : reduced_dims(ctx.ints(1), static_cast<int64_t>(sizes.size())))
    count = count * sizes[d];
  Tensor g = ctx.grad();
  if (count.is_symbolic()) {
    static const OpId sym_scalar_tensor = op_id("sym_scalar_tensor");
    g = g / dispatch::call_tensor(sym_scalar_tensor, count, Device::CPU);
  } else {
    g = g / static_cast<double>(count.expect_int());
  }
  ctx.set_grad(0, expand_reduced(g, ctx.ints(1), sizes, ctx.bool_arg(2)));
}

// Note [prod backward with zeros]
// d prod(x) / d x_k is the product of the other elements. Without zeros that is result / x_k.
// With zeros, as PyTorch's prod_safe_zeros_backward: the reduced dims are moved last and
// flattened, and the product of the others is the exclusive prefix product times the exclusive
// suffix product (cumprod of the shifted line, forward and reversed). Written with ops, so double
// backward works there too.
Tensor prod_of_others(const Tensor& x, IntArrayRef reduced) {
  const int64_t rank = x.dim();
  std::vector<int64_t> perm, kept_sizes;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) {
      perm.push_back(d);
      kept_sizes.push_back(x.size(d));
    }
  }
  int64_t n = 1;
  for (int64_t d : reduced) {
    perm.push_back(d);
    n *= x.size(d);
  }
  std::vector<int64_t> line_shape = kept_sizes;
  line_shape.push_back(n);
  const Tensor lines = x.permute(perm).reshape(line_shape);
  const int64_t last = static_cast<int64_t>(kept_sizes.size());
  std::vector<int64_t> one_shape = kept_sizes;
  one_shape.push_back(1);
  const Tensor one = ones(one_shape, x.dtype());
  const Tensor before = cat({one, lines.slice(last, 0, n - 1)}, last).cumprod(last);
  const Tensor after =
      cat({one, lines.flip({last}).slice(last, 0, n - 1)}, last).cumprod(last).flip({last});
  std::vector<int64_t> permuted_sizes;
  for (int64_t d : perm) permuted_sizes.push_back(x.size(d));
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  return (before * after).reshape(permuted_sizes).permute(inverse);
}

// prod(self, dim, keepdim, dtype)
void prod_backward(GradContext& ctx) {
  const Tensor x = ctx.input(0);
  const Tensor g = ctx.grad();
  if (x.dim() == 0) {
    ctx.set_grad(0, g);
    return;
  }
  const bool keepdim = ctx.bool_arg(2);
  const Tensor gu = unsqueeze_reduced(g, ctx.ints(1), x.dim(), keepdim);
  if (!(x == 0).any().item<bool>()) {
    ctx.set_grad(0, gu * (unsqueeze_reduced(ctx.output(), ctx.ints(1), x.dim(), keepdim) / x));
    return;
  }
  ctx.set_grad(0, gu * prod_of_others(x, reduced_dims(ctx.ints(1), x.dim())));
}

// amax/amin(self, dim, keepdim): the gradient is split evenly among the elements equal to the
// result (ties), as PyTorch. A NaN result matches nothing: no gradient.
void amax_backward(GradContext& ctx) {
  const Tensor x = ctx.input(0);
  const IntArrayRef dims = ctx.ints(1);
  const bool keepdim = ctx.bool_arg(2);
  const Tensor mask = x == unsqueeze_reduced(ctx.output(), dims, x.dim(), keepdim);
  const Tensor count = mask.sum(dims, /*keepdim=*/true);
  ctx.set_grad(0, where(mask, unsqueeze_reduced(ctx.grad(), dims, x.dim(), keepdim) / count, 0));
}

// max()/min() over every element: the gradient is split evenly among the elements equal to the
// result, and when the result is NaN among the NaN elements (PyTorch's
// evenly_distribute_backward).
void full_extremum_backward(GradContext& ctx) {
  const Tensor x = ctx.input(0);
  const Tensor r = ctx.output();
  const Tensor mask = logical_or(x == r, logical_and(x.isnan(), r.isnan()));
  const Tensor count = mask.sum();
  ctx.set_grad(0, where(mask, ctx.grad() / count, 0));
}

// A gradient of shape `values` (keepdim or not) placed at `indices` along dim, zero elsewhere:
// max.dim/min.dim's backward. A comparison against the positions along dim builds the mask, so
// the result is one `where` (differentiable in the gradient, for double backward).
Tensor select_along_dim(const Tensor& g, const Tensor& indices, int64_t dim, SymIntArrayRef sizes,
                        bool keepdim) {
  const int64_t rank = static_cast<int64_t>(sizes.size());
  const Tensor gu = keepdim ? g : g.unsqueeze(dim);
  const Tensor iu = keepdim ? indices : indices.unsqueeze(dim);
  // Only the reduced dim's length is read as an int (a guard when symbolic: arange takes a
  // Scalar end); the other dims stay symbolic.
  const int64_t length = sizes[static_cast<size_t>(dim)].guard_int();
  std::vector<int64_t> positions_shape(static_cast<size_t>(rank), 1);
  positions_shape[static_cast<size_t>(dim)] = length;
  const Tensor positions = arange(length).view(positions_shape);
  return where(positions == iu, gu, 0);
}

// max.dim/min.dim(self, dim, keepdim) -> (values, indices)
void max_dim_backward(GradContext& ctx) {
  const SymIntArrayRef sizes = ctx.sizes(0);
  if (sizes.empty()) {
    ctx.set_grad(0, ctx.grad(0));
    return;
  }
  const int64_t dim = wrap_dim("max.dim backward", ctx.int_arg(1), rank_of(ctx));
  ctx.set_grad(0, select_along_dim(ctx.grad(0), ctx.output(1), dim, sizes, ctx.bool_arg(2)));
}

// var(self, dim, correction, keepdim): 2 / (N - correction) * (x - mean(x)).
Tensor var_grad(const Tensor& g, const Tensor& x, IntArrayRef dims, double correction,
                bool keepdim) {
  const double dof = static_cast<double>(reduced_count(x.sizes(), dims)) - correction;
  const Tensor gu = unsqueeze_reduced(g, dims, x.dim(), keepdim);
  return gu * (x - x.mean(dims, /*keepdim=*/true)) * (2 / std::max(0.0, dof));
}
void var_backward(GradContext& ctx) {
  ctx.set_grad(0,
               var_grad(ctx.grad(), ctx.input(0), ctx.ints(1), ctx.double_arg(2), ctx.bool_arg(3)));
}
// std = sqrt(var): d std = d var / (2 std); zero where std is 0 (a constant slice), as PyTorch.
void std_backward(GradContext& ctx) {
  const Tensor y = ctx.output();
  const Tensor g_var = masked_fill(ctx.grad() / (y * 2), y == 0, 0);
  ctx.set_grad(0, var_grad(g_var, ctx.input(0), ctx.ints(1), ctx.double_arg(2), ctx.bool_arg(3)));
}

// logsumexp(self, dim, keepdim): softmax of the input times the gradient.
void logsumexp_backward(GradContext& ctx) {
  const Tensor x = ctx.input(0);
  const IntArrayRef dims = ctx.ints(1);
  const bool keepdim = ctx.bool_arg(2);
  const Tensor y = unsqueeze_reduced(ctx.output(), dims, x.dim(), keepdim);
  ctx.set_grad(0, unsqueeze_reduced(ctx.grad(), dims, x.dim(), keepdim) * (x - y).exp());
}

// norm(self, p, dim, keepdim), as PyTorch's norm_backward: p = 0 has zero gradient; p = 1 is
// sign(x); p = 2 is x / norm; p = +-inf splits the gradient evenly among the elements whose |x| is
// the norm; other p: sign(x) |x|^(p-1) / norm^(p-1). A zero norm gives zero gradient (for p < 1,
// zero elements do).
void norm_backward(GradContext& ctx) {
  const Tensor x = ctx.input(0);
  const double p = ctx.scalar(1).to_double();
  const IntArrayRef dims = ctx.ints(2);
  const bool keepdim = ctx.bool_arg(3);
  if (p == 0) {
    ctx.set_grad(0, zeros_like(x));
    return;
  }
  const Tensor g = unsqueeze_reduced(ctx.grad(), dims, x.dim(), keepdim);
  if (p == 1) {
    ctx.set_grad(0, x.sign() * g);
    return;
  }
  const Tensor norm = unsqueeze_reduced(ctx.output(), dims, x.dim(), keepdim);
  if (p == 2) {
    ctx.set_grad(0, g * masked_fill(x / norm, norm == 0, 0));
  } else if (std::isinf(p)) {
    const Tensor mask = (x.abs() == norm) | x.isnan();
    const Tensor count = mask.sum(dims, /*keepdim=*/true);
    ctx.set_grad(0, where(mask, x.sign() * (g / count), 0));
  } else if (p < 1) {
    const Tensor scaled = x.sign() * masked_fill(x.abs().pow(p - 1), x == 0, 0);
    ctx.set_grad(0, scaled * g * norm.pow(1 - p));
  } else {
    const Tensor scaled = p < 2 ? x.sign() * x.abs().pow(p - 1) : x * x.abs().pow(p - 2);
    ctx.set_grad(0, scaled * masked_fill(g / norm.pow(p - 1), norm == 0, 0));
  }
}

// softmax(self, dim, dtype): y * (g - sum(g * y)). Four vectorized ops, in terms of the output.
void softmax_backward(GradContext& ctx) {
  const Tensor y = ctx.output();
  const Tensor g = ctx.grad();
  const int64_t dim = ctx.int_arg(1);
  ctx.set_grad(0, y * (g - (g * y).sum({dim}, /*keepdim=*/true)));
}
// log_softmax(self, dim, dtype): g - exp(y) * sum(g).
void log_softmax_backward(GradContext& ctx) {
  const Tensor y = ctx.output();
  const Tensor g = ctx.grad();
  const int64_t dim = ctx.int_arg(1);
  ctx.set_grad(0, g - y.exp() * g.sum({dim}, /*keepdim=*/true));
}

// cumsum(self, dim, dtype): each input element feeds every later output.
void cumsum_backward(GradContext& ctx) {
  const Tensor g = ctx.grad();
  if (rank_of(ctx) == 0) {
    ctx.set_grad(0, g);
    return;
  }
  ctx.set_grad(0, reversed_cumsum(g, wrap_dim("cumsum backward", ctx.int_arg(1), rank_of(ctx))));
}

// Note [cumprod backward with zeros]
// d y_j / d x_k = prod_{i <= j, i != k} x_i for j >= k, so grad_k = sum_{j >= k} g_j y_j / x_k
// wherever x_k != 0 (also after a zero, where it is 0 and its derivatives come out right through
// y). At a zero x_k, y_j is linear in x_k, so grad_k = sum_{j >= k} g_j y'_j with y' the cumprod
// of the line with x_k replaced by 1: one cumprod per zero rank (the r-th zero of every line at
// once). Only the first zero of a line has a nonzero gradient (the others keep it as a factor),
// so a plain backward stops there; a create_graph backward needs them all, as functions of the
// other elements, for double backward.
void cumprod_backward(GradContext& ctx) {
  const Tensor x = ctx.input(0);
  const Tensor g = ctx.grad();
  if (x.dim() == 0 || x.numel() <= 1) {
    ctx.set_grad(0, g);
    return;
  }
  const int64_t dim = wrap_dim("cumprod backward", ctx.int_arg(1), x.dim());
  const Tensor y = ctx.output();
  const Tensor is_zero = x == 0;
  if (!is_zero.any().item<bool>()) {
    ctx.set_grad(0, reversed_cumsum(g * y, dim) / x);
    return;
  }
  Tensor grad = where(is_zero, 0, reversed_cumsum(g * y, dim) / where(is_zero, 1, x));
  const Tensor zero_rank = is_zero.cumsum(dim);
  const int64_t ranks = GradMode::is_enabled() ? zero_rank.amax().item<int64_t>() : 1;
  for (int64_t r = 1; r <= ranks; ++r) {
    const Tensor at_rank = is_zero & (zero_rank == r);
    grad = where(at_rank, reversed_cumsum(g * where(at_rank, 1, x).cumprod(dim), dim), grad);
  }
  ctx.set_grad(0, grad);
}

// sort(self, dim, descending, stable) and topk(self, k, dim, largest, sorted): each value's
// gradient goes back to where the value came from.
void scatter_values_backward(GradContext& ctx, int64_t dim_arg) {
  const Tensor g = ctx.grad(0);
  const DimVector sizes = ctx.int_sizes(0);
  if (sizes.empty()) {
    ctx.set_grad(0, g);
    return;
  }
  const int64_t dim = wrap_dim("sort backward", ctx.int_arg(dim_arg), rank_of(ctx));
  ctx.set_grad(0, zeros(sizes, g.dtype()).scatter(dim, ctx.output(1), g));
}
void sort_backward(GradContext& ctx) { scatter_values_backward(ctx, 1); }
void topk_backward(GradContext& ctx) { scatter_values_backward(ctx, 2); }

}  // namespace

void register_reduce_derivatives(OpRegistry& ops) {
  const uint32_t self = bits({0}), result = bits({0}), indices = bits({1});
  add_derivatives(
      ops, {
               {.op = "sum", .backward = sum_backward},
               {.op = "mean", .backward = mean_backward},
               {.op = "prod", .backward = prod_backward, .save_args = self, .save_outputs = result},
               {.op = "amax", .backward = amax_backward, .save_args = self, .save_outputs = result},
               {.op = "amin", .backward = amax_backward, .save_args = self, .save_outputs = result},
               {.op = "max",
                .backward = full_extremum_backward,
                .save_args = self,
                .save_outputs = result},
               {.op = "min",
                .backward = full_extremum_backward,
                .save_args = self,
                .save_outputs = result},
               {.op = "max.dim", .backward = max_dim_backward, .save_outputs = indices},
               {.op = "min.dim", .backward = max_dim_backward, .save_outputs = indices},
               {.op = "var", .backward = var_backward, .save_args = self},
               {.op = "std", .backward = std_backward, .save_args = self, .save_outputs = result},
               {.op = "logsumexp",
                .backward = logsumexp_backward,
                .save_args = self,
                .save_outputs = result},
               {.op = "norm", .backward = norm_backward, .save_args = self, .save_outputs = result},
               {.op = "softmax", .backward = softmax_backward, .save_outputs = result},
               {.op = "log_softmax", .backward = log_softmax_backward, .save_outputs = result},
               {.op = "cumsum", .backward = cumsum_backward},
               {.op = "cumprod",
                .backward = cumprod_backward,
                .save_args = self,
                .save_outputs = result},
               {.op = "sort", .backward = sort_backward, .save_outputs = indices},
               {.op = "topk", .backward = topk_backward, .save_outputs = indices},
           });
}

}  // namespace kiln::autograd
