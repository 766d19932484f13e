// Decompositions of the normalization backward ops the joint graphs of issue 6 contain:
// native_layer_norm_backward, native_batch_norm_backward and native_group_norm_backward (below).
// For layer_norm, with xhat = (x
// - mean) rstd and a = grad_out * weight,
//   grad_input  = rstd (a - mean(a) - xhat mean(a xhat))   (means over the normalized dims),
//                 arranged as the eager kernel computes it: rstd a + c2 x + c3
//   grad_weight = sum(grad_out xhat), grad_bias = sum(grad_out)   (over the leading dims)
// computed in opmath; a gradient not in output_mask is an empty [0] tensor, as in eager.
#include "src/lower/decomp/table.h"

namespace kiln::lower {
namespace {

// (grad_out, input, normalized_shape, mean, rstd, weight?, output_mask)
std::vector<Value*> native_layer_norm_backward(DecompBuilder& b) {
  Value* x = b.input(1);
  const SymDimVector& sizes = x->meta().sizes;
  const int64_t rank = static_cast<int64_t>(sizes.size());
  const int64_t nd = static_cast<int64_t>(b.constant(2).sym_int_list().size());
  const IValue mask_arg = b.constant(6);  // holds the list `mask` views
  const IntArrayRef mask = mask_arg.int_list();
  const ScalarType dt = x->meta().dtype, acc = opmath_dtype(dt);
  const DimVector inner = dim_range(rank - nd, rank), outer = dim_range(0, rank - nd);
  SymDimVector stat_shape(sizes.begin(), sizes.end());
  for (int64_t d = rank - nd; d < rank; ++d) stat_shape[static_cast<size_t>(d)] = 1;
  const SymDimVector param_shape(sizes.end() - nd, sizes.end());
  Value* g = b.to(b.input(0), acc);
  Value* mean = b.reshape(b.to(b.input(3), acc), stat_shape);
  Value* rstd = b.reshape(b.to(b.input(4), acc), stat_shape);
  Value* xhat = b.mul(b.sub(b.to(x, acc), mean), rstd);
  std::vector<Value*> out;
  if (mask[0] != 0) {
    Value* weight = b.input(5);
    Value* a = weight == nullptr ? g : b.mul(g, b.reshape(b.to(weight, acc), param_shape));
    const DecompBuilder::Count n = b.count(x, inner);
    // The eager kernel's arrangement (dx_coefficients in src/kernels/cpu/norm_backward.cpp),
    // dx = rstd a + c2 x + c3, so that inf and NaN (an inf weight) land where eager puts them.
    Value* xa = b.to(x, acc);
    Value* sum_a = b.sum(a, inner, true);
    Value* sum_ax = b.sum(b.mul(a, xa), inner, true);
    Value* mean_a = b.div(sum_a, n);
    Value* mean_axhat = b.div(b.mul(rstd, b.sub(sum_ax, b.mul(mean, sum_a))), n);
    Value* c2 = b.neg(b.mul(b.mul(rstd, rstd), mean_axhat));
    Value* c3 = b.mul(rstd, b.sub(b.mul(b.mul(mean, rstd), mean_axhat), mean_a));
    Value* dx = b.add(b.add(b.mul(rstd, a), b.mul(c2, xa)), c3);
    out.push_back(b.to(dx, dt));
  } else {
    out.push_back(b.full({0}, Scalar(0.0), dt));
  }
  auto param_grad = [&](Value* terms) {
    // Over no leading dims (a 1-D input) the sum is the terms themselves.
    Value* s = outer.empty() ? b.add(terms, Scalar(0.0)) : b.sum(terms, outer, false);
    return b.to(s, dt);
  };
  out.push_back(mask[1] != 0 ? param_grad(b.mul(g, xhat)) : b.full({0}, Scalar(0.0), dt));
  out.push_back(mask[2] != 0 ? param_grad(g) : b.full({0}, Scalar(0.0), dt));
  return out;
}

// (grad_out, input, weight?, mean, invstd, training, output_mask), per channel (dim 1) with
// xc = x - mean, sum_g = sum(g), sum_gxc = sum(g xc) over the other dims:
//   training: grad_input = w invstd (g - sum_g / count - xc invstd^2 sum_gxc / count)
//   eval:     grad_input = w invstd g
//   grad_weight = sum_gxc invstd, grad_bias = sum_g.
std::vector<Value*> native_batch_norm_backward(DecompBuilder& b) {
  Value* x = b.input(1);
  const SymDimVector& sizes = x->meta().sizes;
  const int64_t rank = static_cast<int64_t>(sizes.size());
  const bool training = b.constant(5).to_bool();
  const IValue mask_arg = b.constant(6);  // holds the list `mask` views
  const IntArrayRef mask = mask_arg.int_list();
  const ScalarType dt = x->meta().dtype, acc = opmath_dtype(dt);
  SymDimVector cshape(sizes.size(), 1);
  cshape[1] = sizes[1];
  DimVector dims{0};
  for (int64_t d = 2; d < rank; ++d) dims.push_back(d);
  Value* g = b.to(b.input(0), acc);
  Value* mean = b.reshape(b.to(b.input(3), acc), cshape);
  Value* invstd = b.reshape(b.to(b.input(4), acc), cshape);
  Value* weight = b.input(2);
  Value* xc = b.sub(b.to(x, acc), mean);
  Value* sum_g = b.sum(g, dims, true);
  Value* sum_gxc = b.sum(b.mul(g, xc), dims, true);
  std::vector<Value*> out;
  if (mask[0] != 0) {
    Value* scale = weight == nullptr ? invstd : b.mul(invstd, b.reshape(b.to(weight, acc), cshape));
    Value* dx = g;
    if (training) {
      const DecompBuilder::Count n = b.count(x, dims);
      Value* proj = b.div(b.mul(b.mul(invstd, invstd), sum_gxc), n);
      dx = b.sub(b.sub(g, b.div(sum_g, n)), b.mul(xc, proj));
    }
    out.push_back(b.to(b.mul(dx, scale), dt));
  } else {
    out.push_back(b.full({0}, Scalar(0.0), dt));
  }
  const SymDimVector channels{sizes[1]};
  out.push_back(mask[1] != 0 ? b.to(b.view(b.mul(sum_gxc, invstd), channels), dt)
                             : b.full({0}, Scalar(0.0), dt));
  out.push_back(mask[2] != 0 ? b.to(b.view(sum_g, channels), dt) : b.full({0}, Scalar(0.0), dt));
  return out;
}

// (grad_out, input, mean, rstd, weight?, num_groups, output_mask): layer_norm's formulas per
// (sample, group) block of [channels of the group, spatial] values, with a per-channel weight;
// grad_weight and grad_bias sum over samples and spatial positions per channel.
std::vector<Value*> native_group_norm_backward(DecompBuilder& b) {
  Value* x = b.input(1);
  const SymDimVector& sizes = x->meta().sizes;
  const int64_t groups = b.constant(5).to_int();
  const IValue mask_arg = b.constant(6);  // holds the list `mask` views
  const IntArrayRef mask = mask_arg.int_list();
  const ScalarType dt = x->meta().dtype, acc = opmath_dtype(dt);
  SymInt spatial = 1;
  for (size_t d = 2; d < sizes.size(); ++d) spatial = spatial * sizes[d];
  const SymInt N = sizes[0], C = sizes[1], per_group = C / groups;
  const SymDimVector blocks{N, groups, per_group, spatial};
  Value* g = b.reshape(b.to(b.input(0), acc), blocks);
  Value* mean = b.reshape(b.to(b.input(2), acc), {N, groups, 1, 1});
  Value* rstd = b.reshape(b.to(b.input(3), acc), {N, groups, 1, 1});
  Value* xhat = b.mul(b.sub(b.reshape(b.to(x, acc), blocks), mean), rstd);
  std::vector<Value*> out;
  if (mask[0] != 0) {
    Value* weight = b.input(4);
    Value* a =
        weight == nullptr ? g : b.mul(g, b.reshape(b.to(weight, acc), {1, groups, per_group, 1}));
    const DecompBuilder::Count n = b.count(xhat, {2, 3});
    Value* mean_a = b.div(b.sum(a, {2, 3}, true), n);
    Value* mean_ax = b.div(b.sum(b.mul(a, xhat), {2, 3}, true), n);
    Value* dx = b.mul(b.sub(b.sub(a, mean_a), b.mul(xhat, mean_ax)), rstd);
    out.push_back(b.to(b.view(dx, sizes), dt));
  } else {
    out.push_back(b.full({0}, Scalar(0.0), dt));
  }
  const SymDimVector channels{C};
  out.push_back(mask[1] != 0 ? b.to(b.view(b.sum(b.mul(g, xhat), {0, 3}, false), channels), dt)
                             : b.full({0}, Scalar(0.0), dt));
  out.push_back(mask[2] != 0 ? b.to(b.view(b.sum(g, {0, 3}, false), channels), dt)
                             : b.full({0}, Scalar(0.0), dt));
  return out;
}

}  // namespace

void register_norm_backward_decompositions(DecompositionTable& t) {
  t.add("native_group_norm_backward", native_group_norm_backward);
  t.add("native_layer_norm_backward", native_layer_norm_backward);
  t.add("native_batch_norm_backward", native_batch_norm_backward);
}

}  // namespace kiln::lower
