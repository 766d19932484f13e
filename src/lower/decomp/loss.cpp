// Decompositions of the losses: cross_entropy (class indices with weight, ignore_index and
// label_smoothing, or class probabilities), nll_loss, mse_loss, binary_cross_entropy_with_logits,
// each with reduction 'none', 'sum' or 'mean', following the eager kernels'
// formulas (src/kernels/cpu/loss.cpp). Class indices are read with `gather`, which raises the
// same IndexError as eager for an index out of range that is not ignore_index.
#include "src/lower/decomp/table.h"

namespace kiln::lower {
namespace {

// Reduces a per-sample loss: 'none' keeps it, 'sum' sums, 'mean' divides the sum by `denom`
// (the summed weights of nll_loss) or, when null, by the number of samples.
Value* reduce(DecompBuilder& b, Value* loss, const std::string& reduction, Value* denom) {
  if (reduction == "none") return loss;
  Value* total = b.sum(loss, {}, false);
  if (reduction == "sum") return total;
  if (denom != nullptr) return b.div(total, b.sum(denom, {}, false));
  return b.div(total, b.count(loss, {}));
}

// The class-index losses. loss_s = -w[t_s] * lp[s, t_s] for the samples whose target is not
// ignore_index (0 otherwise), with lp = log_softmax(x) for cross_entropy and x for nll_loss.
// With label smoothing eps, cross_entropy adds eps/C times the smoothing term
// -sum_c w_c lp[s, c] to (1 - eps) times that loss; 'mean' divides both sums by the summed
// weights of the non-ignored targets (NaN when every target is ignored), as eager.
Value* index_loss(DecompBuilder& b, Value* lp, double eps, int64_t class_dim) {
  Value* target = b.input(1);
  Value* weight = b.input(2);
  const std::string reduction = b.constant(3).string();
  const int64_t ignore_index = b.constant(4).to_int();
  const ScalarType acc = lp->meta().dtype;
  Value* valid = b.binary("ne", target, Scalar(ignore_index));
  Value* index = b.to(b.where(valid, target, Scalar(int64_t{0})), kInt64);
  Value* picked = b.call1("gather", {DecompBuilder::V(lp), DecompBuilder::C(IValue(class_dim)),
                                     DecompBuilder::V(b.unsqueeze(index, class_dim))});
  picked = b.squeeze(picked, class_dim);
  Value* wc = weight == nullptr ? nullptr : b.to(weight, acc);
  Value* loss = b.neg(picked);
  Value* sample_weight = nullptr;  // w[t_s], 0 for ignored samples
  if (wc != nullptr) {
    Value* wt = b.call1("index", {DecompBuilder::V(wc), graph::Arg::list({index})});
    loss = b.mul(loss, wt);
    sample_weight = b.where(valid, wt, Scalar(0.0));
  } else {
    sample_weight = b.to(valid, acc);
  }
  loss = b.where(valid, loss, Scalar(0.0));
  if (eps > 0) {
    const DecompBuilder::Count classes = b.count(lp, {class_dim});
    Value* terms = lp;
    if (wc != nullptr) {
      SymDimVector cshape(lp->meta().sizes.size(), 1);
      cshape[static_cast<size_t>(class_dim)] = lp->meta().sizes[static_cast<size_t>(class_dim)];
      terms = b.mul(lp, b.reshape(wc, cshape));
    }
    Value* smooth = b.neg(b.sum(terms, {class_dim}, false));
    smooth = b.where(valid, smooth, Scalar(0.0));
    smooth = b.div(b.mul(smooth, Scalar(eps)), classes);
    loss = b.mul(loss, Scalar(1.0 - eps));
    if (reduction == "none") return b.add(loss, smooth);
    const bool mean = reduction == "mean";
    return b.add(reduce(b, loss, reduction, mean ? sample_weight : nullptr),
                 reduce(b, smooth, reduction, mean ? sample_weight : nullptr));
  }
  return reduce(b, loss, reduction, reduction == "mean" ? sample_weight : nullptr);
}

// cross_entropy with class probabilities: loss_s = -sum_c w_c t'[s, c] lp[s, c] with
// t' = t (1 - eps) + eps / C; 'mean' divides by the number of samples.
Value* probs_loss(DecompBuilder& b, Value* lp, double eps, int64_t class_dim) {
  const ScalarType acc = lp->meta().dtype;
  Value* t = b.to(b.input(1), acc);
  Value* weight = b.input(2);
  if (eps > 0)
    t = b.add(b.mul(t, Scalar(1.0 - eps)),
              b.div(b.full({}, Scalar(eps), acc), b.count(lp, {class_dim})));
  Value* terms = b.mul(lp, t);
  if (weight != nullptr) {
    SymDimVector cshape(lp->meta().sizes.size(), 1);
    cshape[static_cast<size_t>(class_dim)] = lp->meta().sizes[static_cast<size_t>(class_dim)];
    terms = b.mul(terms, b.reshape(b.to(weight, acc), cshape));
  }
  Value* loss = b.neg(b.sum(terms, {class_dim}, false));
  return reduce(b, loss, b.constant(3).string(), nullptr);
}

// The class dim: 0 for an input of shape (C), else 1.
int64_t class_dim_of(const Value* x) { return x->meta().sizes.size() == 1 ? 0 : 1; }

std::vector<Value*> cross_entropy(DecompBuilder& b) {
  Value* x = b.input(0);
  const int64_t class_dim = class_dim_of(x);
  const double eps = b.constant(5).to_double();
  Value* lp = b.call1("log_softmax", {DecompBuilder::V(b.to(x, opmath_dtype(x->meta().dtype))),
                                      DecompBuilder::C(IValue(class_dim)), DecompBuilder::None()});
  const bool probs = is_floating(b.input(1)->meta().dtype);
  return {
      b.as_output(probs ? probs_loss(b, lp, eps, class_dim) : index_loss(b, lp, eps, class_dim))};
}

std::vector<Value*> nll_loss(DecompBuilder& b) {
  Value* x = b.input(0);
  Value* lp = b.to(x, opmath_dtype(x->meta().dtype));
  return {b.as_output(index_loss(b, lp, 0.0, class_dim_of(x)))};
}

// The compute dtype of an elementwise loss: the output's (input and target promoted), widened.
ScalarType elementwise_dtype(DecompBuilder& b) { return opmath_dtype(b.output_meta().dtype); }

// mse_loss = reduce((input - target)^2), broadcast.
std::vector<Value*> mse_loss(DecompBuilder& b) {
  const ScalarType acc = elementwise_dtype(b);
  Value* d = b.sub(b.to(b.input(0), acc), b.to(b.input(1), acc));
  return {b.as_output(reduce(b, b.mul(d, d), b.constant(2).string(), nullptr))};
}

// binary_cross_entropy_with_logits: l = (1 - t) x - lw log(sigmoid(x)) with
// log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)) and lw = 1 + (pos_weight - 1) t; times weight.
std::vector<Value*> bce_with_logits(DecompBuilder& b) {
  const ScalarType acc = elementwise_dtype(b);
  Value* x = b.to(b.input(0), acc);
  Value* t = b.to(b.input(1), acc);
  Value* weight = b.input(2);
  Value* pos_weight = b.input(3);
  Value* log_sig =
      b.sub(b.clamp(x, std::nullopt, Scalar(int64_t{0})), b.unary("log1p", b.exp(b.neg(b.abs(x)))));
  Value* one_minus_t = b.add(b.neg(t), Scalar(int64_t{1}));
  Value* weighted_log_sig = log_sig;
  if (pos_weight != nullptr) {
    Value* lw =
        b.add(b.mul(b.sub(b.to(pos_weight, acc), Scalar(int64_t{1})), t), Scalar(int64_t{1}));
    weighted_log_sig = b.mul(lw, log_sig);
  }
  Value* loss = b.sub(b.mul(one_minus_t, x), weighted_log_sig);
  if (weight != nullptr) loss = b.mul(loss, b.to(weight, acc));
  return {b.as_output(reduce(b, loss, b.constant(4).string(), nullptr))};
}

// cross_entropy_backward(grad_output, input, target, weight?, reduction, ignore_index,
// label_smoothing): Note [Cross-entropy gradient] in src/kernels/cpu/loss_backward.cpp. Per
// sample s with scale g_s (g_s, g or g / W for 'none', 'sum', 'mean'; 0 when ignored):
//   grad = g_s alpha_s softmax(x_s) - g_s (eps / C) w - g_s (1 - eps) w_t onehot(t)
// with alpha_s = (1 - eps) w_t + (eps / C) sum(w). The one-hot term is a `scatter`, which raises
// eager's IndexError for a target out of range; ignored rows are exactly 0.
std::vector<Value*> cross_entropy_backward(DecompBuilder& b) {
  Value* x = b.input(1);
  Value* target = b.input(2);
  Value* weight = b.input(3);
  const std::string reduction = b.constant(4).string();
  const int64_t ignore_index = b.constant(5).to_int();
  const double eps = b.constant(6).to_double();
  const int64_t class_dim = class_dim_of(x);
  const ScalarType acc = opmath_dtype(x->meta().dtype);
  Value* valid = b.binary("ne", target, Scalar(ignore_index));
  Value* index = b.to(b.where(valid, target, Scalar(int64_t{0})), kInt64);
  Value* wc = weight == nullptr ? nullptr : b.to(weight, acc);
  Value* wt =
      wc == nullptr ? nullptr : b.call1("index", {DecompBuilder::V(wc), graph::Arg::list({index})});
  Value* scale = b.to(b.input(0), acc);
  if (reduction == "mean") {
    Value* sample_weight = wt == nullptr ? b.to(valid, acc) : b.where(valid, wt, Scalar(0.0));
    scale = b.div(scale, b.sum(sample_weight, {}, false));
  }
  scale = b.where(valid, scale, Scalar(0.0));
  Value* target_coef = wt == nullptr ? scale : b.mul(scale, wt);  // g_s w_t
  const DecompBuilder::Count classes = b.count(x, {class_dim});
  Value* p_coef = target_coef;  // g_s alpha_s
  if (eps > 0) {
    // (eps / C) sum(w): eps itself without weights.
    Value* smooth_total = wc == nullptr ? b.full({}, Scalar(eps), acc)
                                        : b.div(b.mul(b.sum(wc, {}, false), Scalar(eps)), classes);
    p_coef = b.add(b.mul(target_coef, Scalar(1.0 - eps)), b.mul(scale, smooth_total));
  }
  Value* p = b.call1("softmax", {DecompBuilder::V(b.to(x, acc)),
                                 DecompBuilder::C(IValue(class_dim)), DecompBuilder::None()});
  Value* grad = b.mul(p, b.unsqueeze(p_coef, class_dim));
  if (eps > 0) {
    Value* per_class = b.div(b.full({}, Scalar(eps), acc), classes);
    if (wc != nullptr) {
      SymDimVector cshape(x->meta().sizes.size(), 1);
      cshape[static_cast<size_t>(class_dim)] = x->meta().sizes[static_cast<size_t>(class_dim)];
      per_class = b.mul(b.reshape(wc, cshape), per_class);
    }
    grad = b.sub(grad, b.mul(b.unsqueeze(scale, class_dim), per_class));
  }
  Value* hot_value =
      b.unsqueeze(eps > 0 ? b.mul(target_coef, Scalar(1.0 - eps)) : target_coef, class_dim);
  Value* hot = b.call1("scatter.src", {DecompBuilder::V(b.full(x->meta().sizes, Scalar(0.0), acc)),
                                       DecompBuilder::C(IValue(class_dim)),
                                       DecompBuilder::V(b.unsqueeze(index, class_dim)),
                                       DecompBuilder::V(hot_value)});
  grad = b.where(b.unsqueeze(valid, class_dim), b.sub(grad, hot), Scalar(0.0));
  return {b.as_output(grad)};
}

}  // namespace

void register_loss_decompositions(DecompositionTable& t) {
  t.add("cross_entropy_backward", cross_entropy_backward);
  t.add("cross_entropy", cross_entropy);
  t.add("nll_loss", nll_loss);
  t.add("mse_loss", mse_loss);
  t.add("binary_cross_entropy_with_logits", bce_with_logits);
}

}  // namespace kiln::lower
