// The nn::functional compositions: activations and losses that are not ops of their own.
#include "kiln/nn/functional.h"

#include "kiln/ops/binary.h"
#include "kiln/ops/ternary.h"
#include "src/core/shape.h"

namespace kiln::nn::functional {
namespace {

void check_reduction(std::string_view loss, std::string_view reduction, bool allow_batchmean) {
  KILN_CHECK(reduction == "none" || reduction == "mean" || reduction == "sum" ||
                 (allow_batchmean && reduction == "batchmean"),
             ValueError, "{}: reduction must be \"none\", \"mean\", \"sum\"{}, got \"{}\"", loss,
             allow_batchmean ? " or \"batchmean\"" : "", reduction);
}

Tensor reduce(const Tensor& pointwise, std::string_view reduction) {
  if (reduction == "mean") return pointwise.mean();
  if (reduction == "sum") return pointwise.sum();
  return pointwise;
}

void check_floating(std::string_view loss, const Tensor& input) {
  KILN_CHECK(is_floating(input.dtype()), DTypeError,
             "{}: input must be a floating tensor, got dtype {}", loss, dtype_name(input.dtype()));
}

// The regression losses broadcast input and target, as PyTorch (which also warns that a size
// mismatch is likely a bug); shapes that do not broadcast raise ShapeError naming the loss.
void check_pair(std::string_view loss, const Tensor& input, const Tensor& target,
                std::string_view reduction) {
  check_reduction(loss, reduction, false);
  check_floating(loss, input);
  sym_broadcast_shapes(loss, input.sym_sizes(), target.sym_sizes());
}

// log(x) clamped at -100 for x in [0, 1], with a zero (not NaN) gradient at x = 0.
Tensor clamped_log(const Tensor& x) {
  const Tensor positive = x > 0.0;
  return where(positive, where(positive, x, 1.0).log().clamp(-100.0), -100.0);
}

}  // namespace

Tensor leaky_relu(const Tensor& input, double negative_slope) {
  return where(input > 0.0, input, input * negative_slope);
}

Tensor elu(const Tensor& input, double alpha) {
  // expm1 only sees the non-positive side, so a large positive input cannot make inf * 0 = NaN in
  // the gradient of the branch where() discards.
  return where(input > 0.0, input, input.clamp(std::nullopt, 0.0).expm1() * alpha);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, std::string_view reduction) {
  check_pair("l1_loss", input, target, reduction);
  return reduce((input - target).abs(), reduction);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, std::string_view reduction,
                      double beta) {
  check_pair("smooth_l1_loss", input, target, reduction);
  KILN_CHECK(beta >= 0.0, ValueError, "smooth_l1_loss: beta must be >= 0, got {}", beta);
  const Tensor d = (input - target).abs();
  if (beta == 0.0) return reduce(d, reduction);
  return reduce(where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, std::string_view reduction,
                  double delta) {
  check_pair("huber_loss", input, target, reduction);
  KILN_CHECK(delta > 0.0, ValueError, "huber_loss: delta must be > 0, got {}", delta);
  const Tensor d = (input - target).abs();
  return reduce(where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta), reduction);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            std::string_view reduction) {
  check_reduction("binary_cross_entropy", reduction, false);
  check_floating("binary_cross_entropy", input);
  KILN_CHECK(shapes_equal(target.sym_sizes(), input.sym_sizes()), ShapeError,
             "binary_cross_entropy: target must have the input's shape {}, got {}; reshape the "
             "target (e.g. unsqueeze or view)",
             shape_str(input.sym_sizes()), shape_str(target.sym_sizes()));
  if (weight.defined())
    sym_broadcast_shapes("binary_cross_entropy (weight)", weight.sym_sizes(), input.sym_sizes());
  KILN_CHECK(logical_and(input >= 0.0, input <= 1.0).all().item<bool>(), ValueError,
             "binary_cross_entropy: every input must be a probability in [0, 1] (input of shape "
             "{}); for logits use binary_cross_entropy_with_logits",
             shape_str(input.sym_sizes()));
  Tensor loss = -(target * clamped_log(input) + (1.0 - target) * clamped_log(1.0 - input));
  if (weight.defined()) loss = loss * weight;
  return reduce(loss, reduction);
}

Tensor kl_div(const Tensor& input, const Tensor& target, std::string_view reduction,
              bool log_target) {
  check_reduction("kl_div", reduction, true);
  check_floating("kl_div", input);
  sym_broadcast_shapes("kl_div", input.sym_sizes(), target.sym_sizes());
  Tensor loss;
  if (log_target) {
    loss = target.exp() * (target - input);
  } else {
    // xlogy(target, target) - target * input: 0 where target is 0.
    const Tensor zero = target == 0.0;
    loss = where(zero, 0.0, target * where(zero, 1.0, target).log()) - target * input;
  }
  if (reduction == "batchmean") {
    Tensor sum = loss.sum();
    return input.dim() == 0 ? sum : sum / static_cast<double>(input.size(0));
  }
  return reduce(loss, reduction);
}

}  // namespace kiln::nn::functional
