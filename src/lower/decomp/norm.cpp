// Decompositions of the normalizations: native_layer_norm, native_batch_norm, native_group_norm
// (the ops captured graphs contain) and their composite forms layer_norm, batch_norm, group_norm
// (which only hand-built graphs contain; they become the native ops, then primitives). Statistics
// are the eager kernels' (src/kernels/cpu/norm.cpp): the mean, then the mean of squared
// deviations, computed in opmath (float32 for float16/bfloat16).
//
// Note [Running statistics in decomposed batch_norm]
// Training-mode native_batch_norm updates running_mean and running_var in place. The
// decomposition computes the new values, r * (1 - momentum) + batch_stat * momentum (with the
// unbiased variance), and writes them with `copy_` into the same values at the node's place, so
// the mutation keeps its program order; the lowering turns `copy_` into an input into an in-place
// store. As in eager, nothing is written when the batch has no values per channel.
#include <cmath>

#include "src/core/promotion.h"

#include "src/lower/decomp/table.h"

namespace kiln::lower {
namespace {

using graph::Arg;

// y * weight + bias with the parameters (optional) reshaped to `param_shape`.
Value* affine(DecompBuilder& b, Value* y, Value* weight, Value* bias,
              const SymDimVector& param_shape) {
  const ScalarType acc = y->meta().dtype;
  if (weight != nullptr) y = b.mul(y, b.reshape(b.to(weight, acc), param_shape));
  if (bias != nullptr) y = b.add(y, b.reshape(b.to(bias, acc), param_shape));
  return y;
}

// native_layer_norm(input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd): statistics
// over the trailing dims, kept as size-1 dims.
std::vector<Value*> native_layer_norm(DecompBuilder& b) {
  Value* x = b.input(0);
  const int64_t rank = static_cast<int64_t>(x->meta().sizes.size());
  const int64_t nd = static_cast<int64_t>(b.constant(1).sym_int_list().size());
  const double eps = b.constant(4).to_double();
  const ScalarType dt = x->meta().dtype, acc = opmath_dtype(dt);
  const DimVector dims = dim_range(rank - nd, rank);
  Value* xc = b.to(x, acc);
  const DecompBuilder::Count n = b.count(xc, dims);
  Value* mean = b.div(b.sum(xc, dims, true), n);
  Value* d = b.sub(xc, mean);
  Value* var = b.div(b.sum(b.mul(d, d), dims, true), n);
  Value* rstd = b.rsqrt(b.add(var, Scalar(eps)));
  const SymDimVector param_shape(x->meta().sizes.end() - nd, x->meta().sizes.end());
  Value* y = affine(b, b.mul(d, rstd), b.input(2), b.input(3), param_shape);
  return {b.to(y, dt), b.to(mean, dt), b.to(rstd, dt)};
}

// The shape [1, C, 1, ...] that broadcasts a per-channel value against x.
SymDimVector channel_shape(const Value* x) {
  SymDimVector shape(x->meta().sizes.size(), 1);
  shape[1] = x->meta().sizes[1];
  return shape;
}

// The running-statistic update of Note [Running statistics in decomposed batch_norm].
void update_running(DecompBuilder& b, Value* running, Value* stat, double momentum) {
  if (running == nullptr) return;
  const ScalarType acc = opmath_dtype(running->meta().dtype);
  Value* old = b.mul(b.to(running, acc), Scalar(1.0 - momentum));
  Value* updated = b.add(old, b.mul(b.to(stat, acc), Scalar(momentum)));
  b.copy_into(running, updated);
}

// native_batch_norm(input, weight?, bias?, running_mean?, running_var?, training, momentum, eps)
// -> (out, save_mean, save_invstd); the saved statistics are empty in eval mode.
std::vector<Value*> native_batch_norm(DecompBuilder& b) {
  Value* x = b.input(0);
  Value *running_mean = b.input(3), *running_var = b.input(4);
  const bool training = b.constant(5).to_bool();
  const double momentum = b.constant(6).to_double(), eps = b.constant(7).to_double();
  const SymDimVector& sizes = x->meta().sizes;
  const int64_t rank = static_cast<int64_t>(sizes.size());
  const ScalarType dt = x->meta().dtype;
  // The eager kernel keeps the statistics in double; computing in opmath matches it within the
  // input's precision, but running statistics of a wider dtype get the wider precision.
  ScalarType acc = opmath_dtype(dt);
  for (const Value* r : {running_mean, running_var})
    if (r != nullptr) acc = promote_types(acc, r->meta().dtype);
  const SymDimVector cshape = channel_shape(x);
  Value* xc = b.to(x, acc);
  Value *mean, *invstd;
  if (training) {
    DimVector dims{0};
    for (int64_t d = 2; d < rank; ++d) dims.push_back(d);
    bool no_values = false;  // statically: symbolic sizes are never 0
    for (int64_t d : dims) no_values |= same(sizes[static_cast<size_t>(d)], 0);
    if (no_values) {
      // The eager kernel's statistics of an empty batch: mean 0, variance 0, no update.
      return {b.copy_as(x, dt), b.full({sizes[1]}, Scalar(0.0), dt),
              b.full({sizes[1]}, Scalar(1.0 / std::sqrt(eps)), dt)};
    }
    const DecompBuilder::Count n = b.count(xc, dims);
    mean = b.div(b.sum(xc, dims, false), n);
    Value* d = b.sub(xc, b.view(mean, cshape));
    Value* ss = b.sum(b.mul(d, d), dims, false);
    Value* var = b.div(ss, n);
    invstd = b.rsqrt(b.add(var, Scalar(eps)));
    Value* y = affine(b, b.mul(d, b.view(invstd, cshape)), b.input(1), b.input(2), cshape);
    update_running(b, running_mean, mean, momentum);
    if (running_var != nullptr) {
      // The unbiased variance (the biased one for a single value per channel, as eager).
      Value* unbiased = var;
      if (!n.value) {
        unbiased = b.div(ss, b.to(b.sub(n.tensor, Scalar(int64_t{1})), acc));
      } else if (*n.value > 1) {
        unbiased = b.div(ss, Scalar(*n.value - 1));
      }
      update_running(b, running_var, unbiased, momentum);
    }
    return {b.to(y, dt), b.to(mean, dt), b.to(invstd, dt)};
  }
  mean = b.to(running_mean, acc);
  invstd = b.rsqrt(b.add(b.to(running_var, acc), Scalar(eps)));
  Value* d = b.sub(xc, b.reshape(mean, cshape));
  Value* y = affine(b, b.mul(d, b.reshape(invstd, cshape)), b.input(1), b.input(2), cshape);
  return {b.to(y, dt), b.full({0}, Scalar(0.0), dt), b.full({0}, Scalar(0.0), dt)};
}

// native_group_norm(input, weight?, bias?, num_groups, eps) -> (out, mean, rstd): statistics per
// sample and group of channels ([N, G]).
std::vector<Value*> native_group_norm(DecompBuilder& b) {
  Value* x = b.input(0);
  const int64_t groups = b.constant(3).to_int();
  const double eps = b.constant(4).to_double();
  const SymDimVector& sizes = x->meta().sizes;
  const ScalarType dt = x->meta().dtype, acc = opmath_dtype(dt);
  SymInt per_group = sizes[1] / groups;
  for (size_t d = 2; d < sizes.size(); ++d) per_group = per_group * sizes[d];
  Value* xg = b.reshape(b.to(x, acc), {sizes[0], groups, per_group});
  const DecompBuilder::Count n = b.count(xg, {2});
  Value* mean = b.div(b.sum(xg, {2}, true), n);
  Value* d = b.sub(xg, mean);
  Value* var = b.div(b.sum(b.mul(d, d), {2}, true), n);
  Value* rstd = b.rsqrt(b.add(var, Scalar(eps)));
  Value* y = b.view(b.mul(d, rstd), sizes);
  y = affine(b, y, b.input(1), b.input(2), channel_shape(x));
  const SymDimVector stat{sizes[0], groups};
  return {b.to(y, dt), b.to(b.view(mean, stat), dt), b.to(b.view(rstd, stat), dt)};
}

// The composite forms: the native op's first output.
std::vector<Value*> layer_norm(DecompBuilder& b) {
  return {b.call("native_layer_norm", {b.arg(0), b.arg(1), b.arg(2), b.arg(3), b.arg(4)})[0]};
}
std::vector<Value*> batch_norm(DecompBuilder& b) {
  return {b.call("native_batch_norm", {b.arg(0), b.arg(3), b.arg(4), b.arg(1), b.arg(2), b.arg(5),
                                       b.arg(6), b.arg(7)})[0]};
}
std::vector<Value*> group_norm(DecompBuilder& b) {
  return {b.call("native_group_norm", {b.arg(0), b.arg(2), b.arg(3), b.arg(1), b.arg(4)})[0]};
}

}  // namespace

void register_norm_decompositions(DecompositionTable& t) {
  t.add("native_layer_norm", native_layer_norm);
  t.add("native_batch_norm", native_batch_norm);
  t.add("native_group_norm", native_group_norm);
  t.add("layer_norm", layer_norm);
  t.add("batch_norm", batch_norm);
  t.add("group_norm", group_norm);
}

}  // namespace kiln::lower
