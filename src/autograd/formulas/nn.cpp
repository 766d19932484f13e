// Derivatives of the nn ops: normalizations, losses, embedding, attention, dropout, and of the
// backward ops their formulas call (double backward).
//
// Note [Backward ops and double backward]
// The hot gradients (normalizations, cross_entropy, embedding) come from dedicated backward ops
// (src/ops/nn_backward.cpp). Each backward op has a derivative of its own, written with ordinary
// ops, so a create_graph backward records it and higher derivatives work. A backward op's
// derivative treats all its tensor inputs as independent: the saved statistics (mean, rstd) the
// norm formulas pass in are outputs of the forward node, so their gradients flow back through the
// forward formula's handling of those outputs, which completes the chain rule through the
// statistics. Rare gradients (class weights, targets, running statistics in eval mode) are
// composites.
#include <cmath>

#include "src/autograd/formulas/grad_utils.h"
#include "src/ops/nn_backward.h"

namespace kiln::autograd {
namespace {

// An optional tensor argument (Tensor?): undefined when it was None. (A None argument has no
// tensor metadata, so ctx.defined(i) does not apply to it.)
Tensor optional_input(GradContext& ctx, size_t i) {
  const std::vector<ArgMeta>& m = ctx.list_meta(i);
  return m.size() == 1 && m[0].defined ? ctx.input(i) : Tensor();
}

// a + b where either may be undefined (an absent gradient term).
Tensor add_term(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return a + b;
}

// The gradient `g` (of some broadcastable shape) as a tensor of exactly `sizes`.
Tensor expand_to(const Tensor& g, IntArrayRef view, IntArrayRef sizes) {
  return g.expand(view).reshape(sizes);
}

DimVector all_dims_but(int64_t keep, int64_t rank) {
  DimVector dims;
  for (int64_t d = 0; d < rank; ++d)
    if (d != keep) dims.push_back(d);
  return dims;
}

// ---- normalizations ----

// A normalization seen in a canonical shape (Note [Normalization backward] in
// src/kernels/cpu/norm_backward.cpp): layer_norm as [M, N], batch_norm as [N, C, S], group_norm
// as [N, G, C / G, S]; statistics and per-feature parameters as broadcastable views.
struct NormView {
  DimVector x, stat, param;  // shapes
  DimVector stat_dims;       // dims of `x` a statistic reduces over
  DimVector param_dims;      // dims of `x` a parameter's gradient sums over
  int64_t count = 0;         // values per statistic
};

int64_t numel_of(IntArrayRef s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

NormView layer_norm_view(IntArrayRef input, IntArrayRef normalized_shape) {
  const int64_t N = numel_of(normalized_shape);
  const int64_t M = numel_of(input.slice(0, input.size() - normalized_shape.size()));
  return {{M, N}, {M, 1}, {1, N}, {1}, {0}, N};
}

NormView batch_norm_view(IntArrayRef input) {
  const int64_t N = input[0], C = input[1], S = numel_of(input.slice(2));
  return {{N, C, S}, {1, C, 1}, {1, C, 1}, {0, 2}, {0, 2}, N * S};
}

NormView group_norm_view(IntArrayRef input, int64_t groups) {
  const int64_t N = input[0], C = input[1], S = numel_of(input.slice(2));
  return {{N, groups, C / groups, S},
          {N, groups, 1, 1},
          {1, groups, C / groups, 1},
          {2, 3},
          {0, 3},
          C / groups * S};
}

// The part of d(input) that comes through the statistics outputs (mean, rstd) of a training-mode
// normalization: mean = mean(x), rstd = (var(x) + eps)^-1/2, so
// d mean / dx = 1 / n and d rstd / dx = -rstd^3 (x - mean) / n. Undefined when neither has a
// gradient.
Tensor statistics_input_grad(GradContext& ctx, const NormView& v, const Tensor& x,
                             const Tensor& mean, const Tensor& rstd) {
  const double n = static_cast<double>(v.count);
  Tensor r;
  if (ctx.has_grad(1)) r = ctx.grad(1).reshape(v.stat) / n;
  if (ctx.has_grad(2)) {
    const Tensor rs = rstd.reshape(v.stat);
    const Tensor k = ctx.grad(2).reshape(v.stat) * rs * rs * rs / (-n);
    r = add_term(r, k * (x.reshape(v.x) - mean.reshape(v.stat)));
  }
  return r.defined() ? expand_to(r, v.x, x.sizes()) : r;
}

// Gradients of S = <u, dx> + <vw, dw> + <vb, db> where (dx, dw, db) is the normalization backward
// of Note [Normalization backward] as a function of (g, x, mean, rstd, w), all independent. With
// xhat = (x - mean) rstd, a = g w, and q = u - mean(u) - xhat mean(u xhat) (batch statistics; q =
// u in eval mode):
//   dS/dg = rstd q w + vw xhat + vb,   dS/dw = sum(rstd q g),
//   h = dS/dxhat = vw g - rstd (u mean(a xhat) + a mean(u xhat))   (the second term: batch stats),
//   dS/dx = h rstd,  dS/dmean = -rstd sum(h),  dS/drstd = sum(a q) + sum(h (x - mean)),
// means and sums over a statistic's group, except dS/dw's, over a parameter's.
struct NormBackwardGrads {
  Tensor grad_out, input, mean, rstd, weight;  // in the NormView's shapes; undefined = zero
};

NormBackwardGrads norm_backward_grads(const NormView& v, bool batch_stats, const Tensor& g,
                                      const Tensor& x, const Tensor& mean, const Tensor& rstd,
                                      const Tensor& weight, const Tensor& u_in, const Tensor& vw_in,
                                      const Tensor& vb_in) {
  const Tensor gv = g.reshape(v.x), rs = rstd.reshape(v.stat);
  const Tensor xc = x.reshape(v.x) - mean.reshape(v.stat);
  const Tensor xhat = xc * rs;
  const Tensor w = weight.defined() ? weight.reshape(v.param) : Tensor();
  const Tensor a = w.defined() ? gv * w : gv;
  const Tensor u = u_in.defined() ? u_in.reshape(v.x) : Tensor();
  const Tensor vw = vw_in.defined() ? vw_in.reshape(v.param) : Tensor();
  const Tensor vb = vb_in.defined() ? vb_in.reshape(v.param) : Tensor();
  NormBackwardGrads r;
  Tensor q, h;
  if (u.defined()) {
    q = u;
    if (batch_stats) {
      const Tensor p = (u * xhat).mean(v.stat_dims, true);
      q = u - u.mean(v.stat_dims, true) - xhat * p;
      h = -(rs * (u * (a * xhat).mean(v.stat_dims, true) + a * p));
    }
    const Tensor rq = rs * q;
    r.grad_out = w.defined() ? rq * w : rq;
    if (w.defined()) r.weight = (rq * gv).sum(v.param_dims, true);
    r.rstd = (a * q).sum(v.stat_dims, true);
  }
  if (vw.defined()) {
    r.grad_out = add_term(r.grad_out, vw * xhat);
    h = add_term(h, vw * gv);
  }
  if (vb.defined()) r.grad_out = add_term(r.grad_out, vb.expand(v.x));
  if (h.defined()) {
    r.input = h * rs;
    r.mean = -(rs * h.sum(v.stat_dims, true));
    r.rstd = add_term(r.rstd, (h * xc).sum(v.stat_dims, true));
  }
  return r;
}

// Sets argument i's gradient, reshaped to its sizes (or expanded, for a broadcast view).
void set_reshaped(GradContext& ctx, size_t i, const Tensor& g, IntArrayRef view) {
  if (!ctx.needs_grad(i) || !g.defined()) return;
  ctx.set_grad(i, expand_to(g, view, ctx.int_sizes(i)));
}

// The incoming gradient of a backward op's output i, or undefined when the mask left it empty.
Tensor masked_grad(GradContext& ctx, size_t i, bool computed) {
  return computed && ctx.has_grad(i) ? ctx.grad(i) : Tensor();
}

NormGradMask read_mask(GradContext& ctx, size_t i) {
  const IntArrayRef m = ctx.ints(i);
  return {m[0] != 0, m[1] != 0, m[2] != 0};
}

// native_layer_norm(input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd)
void native_layer_norm_backward_formula(GradContext& ctx) {
  const Tensor x = ctx.input(0);
  const Tensor mean = ctx.output(1), rstd = ctx.output(2);
  const NormView v = layer_norm_view(x.sizes(), ctx.ints(1));
  Tensor gx;
  if (ctx.has_grad(0)) {
    const NormGradMask mask{ctx.needs_grad(0), ctx.needs_grad(2), ctx.needs_grad(3)};
    auto [dx, dw, db] = native_layer_norm_backward(ctx.grad(0), x, ctx.ints(1), mean, rstd,
                                                   optional_input(ctx, 2), mask);
    if (mask[0]) gx = dx;
    if (mask[1]) ctx.set_grad(2, dw);
    if (mask[2]) ctx.set_grad(3, db);
  }
  if (ctx.needs_grad(0)) {
    gx = add_term(gx, statistics_input_grad(ctx, v, x, mean, rstd));
    if (gx.defined()) ctx.set_grad(0, gx);
  }
}

// native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight?, mask)
void native_layer_norm_double_backward(GradContext& ctx) {
  const NormGradMask mask = read_mask(ctx, 6);
  const NormView v = layer_norm_view(ctx.int_sizes(1), ctx.ints(2));
  const NormBackwardGrads r = norm_backward_grads(
      v, true, ctx.input(0), ctx.input(1), ctx.input(3), ctx.input(4), optional_input(ctx, 5),
      masked_grad(ctx, 0, mask[0]), masked_grad(ctx, 1, mask[1]), masked_grad(ctx, 2, mask[2]));
  set_reshaped(ctx, 0, r.grad_out, v.x);
  set_reshaped(ctx, 1, r.input, v.x);
  set_reshaped(ctx, 3, r.mean, v.stat);
  set_reshaped(ctx, 4, r.rstd, v.stat);
  set_reshaped(ctx, 5, r.weight, v.param);
}

// native_batch_norm(input, weight?, bias?, running_mean?, running_var?, training, momentum, eps)
// -> (out, save_mean, save_invstd). Running statistics are buffers the op updates in training;
// they never get gradients there (the output does not depend on them). In eval mode the output
// is an affine function of them, and a running statistic that requires grad gets its gradient.
void native_batch_norm_backward_formula(GradContext& ctx) {
  const Tensor x = ctx.input(0);
  const Tensor w = optional_input(ctx, 1);
  const bool training = ctx.bool_arg(5);
  const NormView v = batch_norm_view(x.sizes());
  Tensor mean, invstd;
  if (training) {
    mean = ctx.output(1);
    invstd = ctx.output(2);
  } else {
    mean = ctx.input(3);
    invstd = (ctx.input(4) + ctx.double_arg(7)).rsqrt();
  }
  const bool eval_rm = !training && ctx.needs_grad(3), eval_rv = !training && ctx.needs_grad(4);
  Tensor gx;
  if (ctx.has_grad(0)) {
    const NormGradMask mask{ctx.needs_grad(0) || eval_rm, ctx.needs_grad(1) || eval_rv,
                            ctx.needs_grad(2)};
    auto [dx, dw, db] = native_batch_norm_backward(ctx.grad(0), x, w, mean, invstd, training, mask);
    if (mask[0]) gx = dx;
    if (ctx.needs_grad(1)) ctx.set_grad(1, dw);
    if (ctx.needs_grad(2)) ctx.set_grad(2, db);
    // Eval: out = (x - rm) * invstd * w + b, invstd = (rv + eps)^-1/2, so
    // d/d rm = -sum(g w invstd) = -sum(dx) and d/d rv = -w invstd^2 sum(g xhat) / 2 = -w invstd^2
    // dw / 2.
    if (eval_rm) ctx.set_grad(3, -dx.sum(all_dims_but(1, x.dim())));
    if (eval_rv) {
      const Tensor k = invstd * invstd * -0.5;
      ctx.set_grad(4, w.defined() ? k * w * dw : k * dw);
    }
  }
  if (training && ctx.needs_grad(0))
    gx = add_term(gx, statistics_input_grad(ctx, v, x, mean, invstd));
  if (ctx.needs_grad(0) && gx.defined()) ctx.set_grad(0, gx);
}

// native_batch_norm_backward(grad_out, input, weight?, mean, invstd, training, mask)
void native_batch_norm_double_backward(GradContext& ctx) {
  const NormGradMask mask = read_mask(ctx, 6);
  const NormView v = batch_norm_view(ctx.int_sizes(1));
  const NormBackwardGrads r =
      norm_backward_grads(v, ctx.bool_arg(5), ctx.input(0), ctx.input(1), ctx.input(3),
                          ctx.input(4), optional_input(ctx, 2), masked_grad(ctx, 0, mask[0]),
                          masked_grad(ctx, 1, mask[1]), masked_grad(ctx, 2, mask[2]));
  set_reshaped(ctx, 0, r.grad_out, v.x);
  set_reshaped(ctx, 1, r.input, v.x);
  set_reshaped(ctx, 2, r.weight, v.param);
  set_reshaped(ctx, 3, r.mean, v.stat);
  set_reshaped(ctx, 4, r.rstd, v.stat);
}

// native_group_norm(input, weight?, bias?, num_groups, eps) -> (out, mean, rstd)
void native_group_norm_backward_formula(GradContext& ctx) {
  const Tensor x = ctx.input(0);
  const Tensor mean = ctx.output(1), rstd = ctx.output(2);
  const int64_t groups = ctx.int_arg(3);
  const NormView v = group_norm_view(x.sizes(), groups);
  Tensor gx;
  if (ctx.has_grad(0)) {
    const NormGradMask mask{ctx.needs_grad(0), ctx.needs_grad(1), ctx.needs_grad(2)};
    auto [dx, dw, db] = native_group_norm_backward(ctx.grad(0), x, mean, rstd,
                                                   optional_input(ctx, 1), groups, mask);
    if (mask[0]) gx = dx;
    if (mask[1]) ctx.set_grad(1, dw);
    if (mask[2]) ctx.set_grad(2, db);
  }
  if (ctx.needs_grad(0)) {
    gx = add_term(gx, statistics_input_grad(ctx, v, x, mean, rstd));
    if (gx.defined()) ctx.set_grad(0, gx);
  }
}

// native_group_norm_backward(grad_out, input, mean, rstd, weight?, num_groups, mask)
void native_group_norm_double_backward(GradContext& ctx) {
  const NormGradMask mask = read_mask(ctx, 6);
  const NormView v = group_norm_view(ctx.int_sizes(1), ctx.int_arg(5));
  const NormBackwardGrads r = norm_backward_grads(
      v, true, ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), optional_input(ctx, 4),
      masked_grad(ctx, 0, mask[0]), masked_grad(ctx, 1, mask[1]), masked_grad(ctx, 2, mask[2]));
  set_reshaped(ctx, 0, r.grad_out, v.x);
  set_reshaped(ctx, 1, r.input, v.x);
  set_reshaped(ctx, 2, r.mean, v.stat);
  set_reshaped(ctx, 3, r.rstd, v.stat);
  set_reshaped(ctx, 4, r.weight, v.param);
}

// ---- class-index losses ----

// The per-class quantities of Note [Cross-entropy gradient] as tensors of the input's shape
// (class dim `cdim`): for sample s and class k,
//   onehot[s, k] = [k == target_s],  E[s, k] = valid_s ((1 - eps) onehot[s, k] + eps / C),
// so that loss_s = -sum_k w_k E[s, k] log p[s, k] and T = w E is the target distribution.
struct ClassTerms {
  int64_t cdim = 0, C = 0;
  Tensor valid;     // float, the sample shape: 1 where the target is not ignored
  Tensor safe;      // int64, the sample shape: the target, 0 where ignored
  Tensor onehot;    // float, the input's shape
  Tensor weight;    // the class weights viewed along cdim, or undefined (all ones)
  Tensor target_w;  // float, the sample shape: valid * w[target]
};

ClassTerms class_terms(const Tensor& input, const Tensor& target, const Tensor& weight,
                       int64_t ignore_index, bool with_onehot) {
  ClassTerms t;
  t.cdim = input.dim() == 1 ? 0 : 1;
  t.C = input.size(t.cdim);
  const Tensor tgt = target.to(kInt64);
  const Tensor valid = tgt.ne(Scalar(ignore_index));
  t.valid = valid.to(input.dtype());
  t.safe = tgt.masked_fill(valid.logical_not(), Scalar(int64_t{0}));
  if (with_onehot) {
    Tensor oh = one_hot(t.safe, t.C).to(input.dtype());
    if (input.dim() > 2) {  // (N, d..., C) -> (N, C, d...)
      DimVector perm{0, input.dim() - 1};
      for (int64_t d = 1; d < input.dim() - 1; ++d) perm.push_back(d);
      oh = oh.permute(perm);
    }
    t.onehot = oh;
  }
  if (weight.defined()) {
    DimVector shape(static_cast<size_t>(input.dim()), 1);
    shape[static_cast<size_t>(t.cdim)] = t.C;
    t.weight = weight.reshape(shape);
    t.target_w = t.valid * weight.index_select(0, t.safe.reshape({-1})).reshape(t.safe.sizes());
  } else {
    t.target_w = t.valid;
  }
  return t;
}

Tensor smoothed_targets(const ClassTerms& t, double eps) {
  const Tensor valid = t.valid.unsqueeze(t.cdim);
  return eps > 0 ? valid * (t.onehot * (1.0 - eps) + eps / static_cast<double>(t.C))
                 : valid * t.onehot;
}

// The summed weight of the non-ignored targets, the 'mean' denominator; 1 where it is 0 (every
// target ignored: all gradients are zero then, not NaN).
Tensor mean_denominator(const ClassTerms& t) {
  const Tensor w = t.target_w.sum();
  return w + w.eq(Scalar(0.0)).to(w.dtype());
}

// The incoming gradient as a per-sample scale broadcastable against the input.
Tensor sample_scale(const Tensor& g, std::string_view reduction, const ClassTerms& t) {
  if (reduction == "none") return g.unsqueeze(t.cdim);
  if (reduction == "sum") return g;
  return g / mean_denominator(t);
}

// Sums a tensor of the input's shape over everything but the class dim: one value per class.
Tensor per_class(const Tensor& t, int64_t cdim) {
  return t.dim() == 1 ? t : t.sum(all_dims_but(cdim, t.dim()));
}

// d L / d weight for a class-index loss L = reduce(loss_s), loss_s = sum_k w_k D[s, k]:
// sum_s scale_s D[s, k], and for 'mean' (L = S / W, W = sum_s valid_s w[target_s]) minus
// L count_k / W, count_k = the number of valid targets of class k.
Tensor class_weight_grad(const Tensor& g, std::string_view reduction, const ClassTerms& t,
                         const Tensor& d, const Tensor& loss) {
  Tensor r = sample_scale(g, reduction, t) * d;
  if (reduction == "mean")
    r = r - (g * loss / mean_denominator(t)) * (t.valid.unsqueeze(t.cdim) * t.onehot);
  return per_class(r, t.cdim);
}

// cross_entropy(input, target, weight?, reduction, ignore_index, label_smoothing)
void cross_entropy_probability_backward(GradContext& ctx);

void cross_entropy_backward_formula(GradContext& ctx) {
  const Tensor x = ctx.input(0), target = ctx.input(1), weight = optional_input(ctx, 2);
  if (is_floating(target.dtype())) return cross_entropy_probability_backward(ctx);
  const std::string& red = ctx.string_arg(3);
  const double eps = ctx.double_arg(5);
  const Tensor g = ctx.grad(0);
  if (ctx.needs_grad(0))
    ctx.set_grad(0, cross_entropy_backward(g, x, target, weight, red, ctx.int_arg(4), eps));
  if (ctx.needs_grad(2)) {
    const ClassTerms t = class_terms(x, target, weight, ctx.int_arg(4), true);
    const Tensor d = -(x.log_softmax(t.cdim) * smoothed_targets(t, eps));
    ctx.set_grad(2, class_weight_grad(g, red, t, d, ctx.output(0)));
  }
}

// Probability targets: loss_s = -sum_c w_c t'_c log p_c, t' = (1 - eps) t + eps / C; 'mean'
// divides by the number of samples. d/dx = scale (p sum_c w_c t'_c - w t'), d/dt =
// -(1 - eps) scale w log p, d/dw = -sum_s scale t' log p.
void cross_entropy_probability_backward(GradContext& ctx) {
  const Tensor x = ctx.input(0), target = ctx.input(1), weight = optional_input(ctx, 2);
  const std::string& red = ctx.string_arg(3);
  const double eps = ctx.double_arg(5);
  const int64_t cdim = x.dim() == 1 ? 0 : 1, C = x.size(cdim);
  Tensor scale = ctx.grad(0);
  if (red == "none") scale = scale.unsqueeze(cdim);
  if (red == "mean") scale = scale / static_cast<double>(C == 0 ? 0 : x.numel() / C);
  const Tensor smoothed = eps > 0 ? target * (1.0 - eps) + eps / static_cast<double>(C) : target;
  Tensor w;
  if (weight.defined()) {
    DimVector shape(static_cast<size_t>(x.dim()), 1);
    shape[static_cast<size_t>(cdim)] = C;
    w = weight.reshape(shape);
  }
  const Tensor dist = w.defined() ? smoothed * w : smoothed;
  if (ctx.needs_grad(0)) ctx.set_grad(0, scale * (x.softmax(cdim) * dist.sum({cdim}, true) - dist));
  if (ctx.needs_grad(1) || ctx.needs_grad(2)) {
    const Tensor lp = x.log_softmax(cdim);
    if (ctx.needs_grad(1)) {
      const Tensor k = scale * (eps - 1.0);
      ctx.set_grad(1, w.defined() ? k * w * lp : k * lp);
    }
    if (ctx.needs_grad(2)) ctx.set_grad(2, per_class(-(scale * smoothed * lp), cdim));
  }
}

// cross_entropy_backward(grad_output, input, target, weight?, reduction, ignore_index, eps):
// R = scale (alpha p - T) (Note [Cross-entropy gradient]). For a cotangent V:
//   d/dx = scale alpha p (V - <V, p>),  d/d grad_output: <V, alpha p - T> per sample (reduced
//   as the loss was), d/dw_k = sum_s scale E[s, k] (<V, p>_s - V[s, k]) minus, for 'mean',
//   count_k <V, R> / W (the denominator depends on w too).
void cross_entropy_double_backward(GradContext& ctx) {
  const Tensor g = ctx.input(0), x = ctx.input(1), weight = optional_input(ctx, 3);
  const std::string& red = ctx.string_arg(4);
  const double eps = ctx.double_arg(6);
  const ClassTerms t = class_terms(x, ctx.input(2), weight, ctx.int_arg(5), true);
  const Tensor V = ctx.grad(0);
  const Tensor p = x.softmax(t.cdim);
  const Tensor e = smoothed_targets(t, eps);
  const Tensor dist = t.weight.defined() ? e * t.weight : e;
  const Tensor alpha = dist.sum({t.cdim}, true);
  const Tensor scale = sample_scale(g, red, t);
  const Tensor vp = (V * p).sum({t.cdim}, true);
  if (ctx.needs_grad(1)) ctx.set_grad(1, scale * alpha * p * (V - vp));
  if (ctx.needs_grad(0)) {
    const Tensor per_sample = (V * (p * alpha - dist)).sum({t.cdim}, false);
    if (red == "none") {
      ctx.set_grad(0, per_sample);
    } else {
      const Tensor total = per_sample.sum();
      ctx.set_grad(0, red == "sum" ? total : total / mean_denominator(t));
    }
  }
  if (ctx.needs_grad(3)) {
    Tensor r = per_class(scale * e * (vp - V), t.cdim);
    if (red == "mean") {
      const Tensor count = per_class(t.valid.unsqueeze(t.cdim) * t.onehot, t.cdim);
      r = r - count * ((V * ctx.output(0)).sum() / mean_denominator(t));
    }
    ctx.set_grad(3, r);
  }
}

// nll_loss(input, target, weight?, reduction, ignore_index): loss_s = -w[t_s] x[s, t_s].
void nll_loss_backward_formula(GradContext& ctx) {
  const Tensor x = ctx.input(0), weight = optional_input(ctx, 2);
  const std::string& red = ctx.string_arg(3);
  const ClassTerms t = class_terms(x, ctx.input(1), weight, ctx.int_arg(4), ctx.needs_grad(2));
  const Tensor g = ctx.grad(0);
  const Tensor scale = sample_scale(g, red, t);
  if (ctx.needs_grad(0)) {
    // One value per sample, scattered to its target's class.
    const Tensor per_sample = red == "none" ? scale.squeeze(t.cdim) : scale.expand(t.safe.sizes());
    const Tensor src = (-(per_sample * t.target_w)).to(x.dtype());
    ctx.set_grad(0, zeros_like(x).scatter(t.cdim, t.safe.unsqueeze(t.cdim), src.unsqueeze(t.cdim)));
  }
  if (ctx.needs_grad(2)) {
    const Tensor d = -(x * (t.valid.unsqueeze(t.cdim) * t.onehot));
    ctx.set_grad(2, class_weight_grad(g, red, t, d, ctx.output(0)));
  }
}

// ---- elementwise losses ----

// The incoming gradient of an elementwise loss over `n` elements as an elementwise scale.
Tensor elementwise_scale(const Tensor& g, std::string_view reduction, int64_t n) {
  return reduction == "mean" ? g / static_cast<double>(n) : g;
}

// mse_loss(input, target, reduction): d/dx = 2 (x - y) scale = -d/dy.
void mse_loss_backward_formula(GradContext& ctx) {
  const Tensor diff = ctx.input(0) - ctx.input(1);
  const Tensor gx = diff * elementwise_scale(ctx.grad(0), ctx.string_arg(2), diff.numel()) * 2.0;
  if (ctx.needs_grad(0)) ctx.set_grad(0, gx);
  if (ctx.needs_grad(1)) ctx.set_grad(1, -gx);
}

// binary_cross_entropy_with_logits(input, target, weight?, pos_weight?, reduction):
// l = w ((1 - t) x - lw log sigmoid(x)), lw = 1 + (pw - 1) t. So d/dx = w (lw sigmoid(x) - pw t),
// d/dt = w (-x - (pw - 1) log sigmoid(x)), d/dw = l / w, d/dpw = -w t log sigmoid(x).
void bce_with_logits_backward_formula(GradContext& ctx) {
  const Tensor x = ctx.input(0), t = ctx.input(1);
  const Tensor w = optional_input(ctx, 2), pw = optional_input(ctx, 3);
  const Tensor scale = elementwise_scale(ctx.grad(0), ctx.string_arg(4), x.numel());
  const Tensor ws = w.defined() ? scale * w : scale;
  const Tensor log_sig = -softplus(-x);
  if (ctx.needs_grad(0)) {
    const Tensor sig = x.sigmoid();
    const Tensor d = pw.defined() ? (1.0 + (pw - 1.0) * t) * sig - pw * t : sig - t;
    ctx.set_grad(0, ws * d);
  }
  if (ctx.needs_grad(1)) {
    const Tensor d = pw.defined() ? -x - (pw - 1.0) * log_sig : -x;
    ctx.set_grad(1, ws * d);
  }
  if (ctx.needs_grad(2)) {
    const Tensor lw = pw.defined() ? 1.0 + (pw - 1.0) * t : Tensor();
    const Tensor l = (1.0 - t) * x - (lw.defined() ? lw * log_sig : log_sig);
    ctx.set_grad(2, scale * l);
  }
  if (ctx.needs_grad(3)) ctx.set_grad(3, -(ws * t * log_sig));
}

// ---- embedding, attention, dropout ----

// embedding(weight, indices, padding_idx?)
void embedding_backward_formula(GradContext& ctx) {
  ctx.set_grad(0, embedding_dense_backward(ctx.grad(0), ctx.input(1), ctx.sizes(0)[0],
                                           ctx.arg(2).optional_int()));
}

// embedding_dense_backward(grad_output, indices, num_weights, padding_idx?): linear in
// grad_output, its adjoint is the row gather itself, with the padding rows' positions zeroed.
void embedding_dense_double_backward(GradContext& ctx) {
  const Tensor indices = ctx.input(1);
  Tensor r = embedding(ctx.grad(0), indices);
  if (const std::optional<int64_t> pad = ctx.arg(3).optional_int()) {
    const int64_t rows = ctx.int_arg(2);
    const int64_t p = *pad < 0 ? *pad + rows : *pad;
    r = r * indices.to(kInt64).ne(Scalar(p)).unsqueeze(-1).to(r.dtype());
  }
  ctx.set_grad(0, r);
}

// scaled_dot_product_attention(q, k, v, attn_mask?, dropout_p, is_causal, scale?): recomputes
// P = softmax(scale q k^T + mask) (rows with every key masked are zeros, as in the forward), then
//   dv = P^T g, dS = P (g v^T - rowsum(g v^T P)), dq = scale dS k, dk = scale dS^T q,
//   d(float mask) = dS.
// Broadcast batch dims are summed back by the engine.
//
// Without create_graph and without a float mask's gradient this is one call of the
// scaled_dot_product_attention_backward op (Note [Attention backward]), which is also what a
// compiled backward runs; double backward needs the composite form below, whose ops have
// derivatives of their own.
void sdpa_backward_formula(GradContext& ctx) {
  const Tensor q = ctx.input(0), k = ctx.input(1), v = ctx.input(2);
  const Tensor mask = optional_input(ctx, 3);
  const std::optional<double> given_scale =
      ctx.arg(6).is_none() ? std::nullopt : std::optional(ctx.double_arg(6));
  const Tensor g = ctx.grad(0);
  if (!GradMode::is_enabled() && !ctx.needs_grad(3)) {
    const auto [dq, dk, dv] = scaled_dot_product_attention_backward(
        g, q, k, v, mask, ctx.bool_arg(5), given_scale,
        {ctx.needs_grad(0), ctx.needs_grad(1), ctx.needs_grad(2)});
    if (ctx.needs_grad(0)) ctx.set_grad(0, dq);
    if (ctx.needs_grad(1)) ctx.set_grad(1, dk);
    if (ctx.needs_grad(2)) ctx.set_grad(2, dv);
    return;
  }
  const double scale =
      given_scale ? *given_scale : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  Tensor s = q.matmul(k.transpose(-2, -1)) * scale;
  if (ctx.bool_arg(5)) {
    const Tensor above = ones({s.size(-2), s.size(-1)}, kBool).triu(1);
    s = s.masked_fill(above, -INFINITY);
  }
  if (mask.defined()) {
    s = mask.dtype() == kBool ? s.masked_fill(mask.logical_not(), -INFINITY) : s + mask;
  }
  const Tensor dead = s.eq(Scalar(-INFINITY)).all(-1, true);
  const Tensor p = s.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0);
  if (ctx.needs_grad(2)) ctx.set_grad(2, p.transpose(-2, -1).matmul(g));
  const bool want_scores = ctx.needs_grad(0) || ctx.needs_grad(1) || ctx.needs_grad(3);
  if (!want_scores) return;
  const Tensor gp = g.matmul(v.transpose(-2, -1));
  const Tensor ds = p * (gp - (gp * p).sum({-1}, true));
  if (ctx.needs_grad(0)) ctx.set_grad(0, ds.matmul(k) * scale);
  if (ctx.needs_grad(1)) ctx.set_grad(1, ds.transpose(-2, -1).matmul(q) * scale);
  if (ctx.needs_grad(3)) ctx.set_grad(3, ds);
}

// dropout(input, p, seed, offset) is linear in the input with the mask the (seed, offset) pair
// fixes: the gradient is the same dropout of the incoming gradient (same mask, same 1 / (1 - p)).
void dropout_backward_formula(GradContext& ctx) {
  static const OpId id = op_id("dropout");
  ctx.set_grad(
      0, dispatch::call_tensor(id, ctx.grad(0), ctx.double_arg(1), ctx.int_arg(2), ctx.int_arg(3)));
}

// dropout.state(input, p, rng_state): as dropout, with the (seed, offset) pair read from the
// rng_state tensor (Note [Random ops under a trace], src/ops/random.cpp), saved for the backward.
void dropout_state_backward_formula(GradContext& ctx) {
  static const OpId id = op_id("dropout.state");
  ctx.set_grad(0, dispatch::call_tensor(id, ctx.grad(0), ctx.double_arg(1), ctx.input(2)));
}

}  // namespace

void register_nn_derivatives(OpRegistry& ops) {
  add_derivatives(
      ops, {
               {.op = "native_layer_norm",
                .backward = native_layer_norm_backward_formula,
                .save_args = bits({0, 2}),
                .save_outputs = bits({1, 2})},
               {.op = "native_layer_norm_backward",
                .backward = native_layer_norm_double_backward,
                .save_args = bits({0, 1, 3, 4, 5})},
               {.op = "native_batch_norm",
                .backward = native_batch_norm_backward_formula,
                .save_args = bits({0, 1, 3, 4}),
                .save_outputs = bits({1, 2})},
               {.op = "native_batch_norm_backward",
                .backward = native_batch_norm_double_backward,
                .save_args = bits({0, 1, 2, 3, 4})},
               {.op = "native_group_norm",
                .backward = native_group_norm_backward_formula,
                .save_args = bits({0, 1}),
                .save_outputs = bits({1, 2})},
               {.op = "native_group_norm_backward",
                .backward = native_group_norm_double_backward,
                .save_args = bits({0, 1, 2, 3, 4})},
               {.op = "cross_entropy",
                .backward = cross_entropy_backward_formula,
                .save_args = bits({0, 1, 2}),
                .save_outputs = bits({0})},
               {.op = "cross_entropy_backward",
                .backward = cross_entropy_double_backward,
                .save_args = bits({0, 1, 2, 3}),
                .save_outputs = bits({0})},
               {.op = "nll_loss",
                .backward = nll_loss_backward_formula,
                .save_args = bits({0, 1, 2}),
                .save_outputs = bits({0})},
               {.op = "mse_loss", .backward = mse_loss_backward_formula, .save_args = bits({0, 1})},
               {.op = "binary_cross_entropy_with_logits",
                .backward = bce_with_logits_backward_formula,
                .save_args = bits({0, 1, 2, 3})},
               {.op = "embedding",
                .backward = embedding_backward_formula,
                .save_args = bits({1}),
                .nondifferentiable_args = bits({1})},
               {.op = "embedding_dense_backward",
                .backward = embedding_dense_double_backward,
                .save_args = bits({1}),
                .nondifferentiable_args = bits({1})},
               {.op = "scaled_dot_product_attention",
                .backward = sdpa_backward_formula,
                .save_args = bits({0, 1, 2, 3})},
               {.op = "dropout", .backward = dropout_backward_formula},
               {.op = "dropout.state",
                .backward = dropout_state_backward_formula,
                .save_args = bits({2}),
                .nondifferentiable_args = bits({2})},
           });
}

}  // namespace kiln::autograd
