#include "kiln/nn/loss.h"

#include "kiln/nn/functional.h"
#include "src/core/shape.h"
#include "src/nn/naming.h"

namespace kiln::nn {

namespace F = functional;

Loss::Loss(std::string name, std::string reduction, bool allow_batchmean)
    : Module(std::move(name)), reduction(std::move(reduction)) {
  KILN_CHECK(this->reduction == "none" || this->reduction == "mean" || this->reduction == "sum" ||
                 (allow_batchmean && this->reduction == "batchmean"),
             ValueError, "{}: reduction must be \"none\", \"mean\", \"sum\"{}, got \"{}\"",
             this->name(), allow_batchmean ? " or \"batchmean\"" : "", this->reduction);
}

CrossEntropyLoss::CrossEntropyLoss(CrossEntropyLossOptions options)
    : Loss("CrossEntropyLoss", options.reduction),
      ignore_index(options.ignore_index),
      label_smoothing(options.label_smoothing),
      weight(register_buffer("weight", options.weight)) {
  KILN_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0, ValueError,
             "CrossEntropyLoss: label_smoothing must be in [0, 1], got {}", label_smoothing);
}

Tensor CrossEntropyLoss::compute(const Tensor& input, const Tensor& target) {
  return with_context(*this, [&] {
    return cross_entropy(input, target, weight, reduction, ignore_index, label_smoothing);
  });
}

NLLLoss::NLLLoss(NLLLossOptions options)
    : Loss("NLLLoss", options.reduction),
      ignore_index(options.ignore_index),
      weight(register_buffer("weight", options.weight)) {}

Tensor NLLLoss::compute(const Tensor& input, const Tensor& target) {
  return with_context(*this,
                      [&] { return nll_loss(input, target, weight, reduction, ignore_index); });
}

Tensor MSELoss::compute(const Tensor& input, const Tensor& target) {
  return with_context(*this, [&] { return mse_loss(input, target, reduction); });
}

Tensor L1Loss::compute(const Tensor& input, const Tensor& target) {
  return with_context(*this, [&] { return F::l1_loss(input, target, reduction); });
}

SmoothL1Loss::SmoothL1Loss(std::string reduction, double beta)
    : Loss("SmoothL1Loss", std::move(reduction)), beta(beta) {
  KILN_CHECK(beta >= 0.0, ValueError, "SmoothL1Loss: beta must be >= 0, got {}", beta);
}

Tensor SmoothL1Loss::compute(const Tensor& input, const Tensor& target) {
  return with_context(*this, [&] { return F::smooth_l1_loss(input, target, reduction, beta); });
}

HuberLoss::HuberLoss(std::string reduction, double delta)
    : Loss("HuberLoss", std::move(reduction)), delta(delta) {
  KILN_CHECK(delta > 0.0, ValueError, "HuberLoss: delta must be > 0, got {}", delta);
}

Tensor HuberLoss::compute(const Tensor& input, const Tensor& target) {
  return with_context(*this, [&] { return F::huber_loss(input, target, reduction, delta); });
}

BCELoss::BCELoss(BCELossOptions options)
    : Loss("BCELoss", options.reduction), weight(register_buffer("weight", options.weight)) {}

Tensor BCELoss::compute(const Tensor& input, const Tensor& target) {
  return with_context(*this,
                      [&] { return F::binary_cross_entropy(input, target, weight, reduction); });
}

BCEWithLogitsLoss::BCEWithLogitsLoss(BCEWithLogitsLossOptions options)
    : Loss("BCEWithLogitsLoss", options.reduction),
      weight(register_buffer("weight", options.weight)),
      pos_weight(register_buffer("pos_weight", options.pos_weight)) {}

Tensor BCEWithLogitsLoss::compute(const Tensor& input, const Tensor& target) {
  // The op reports this as a ValueError (as PyTorch does); a shape mismatch is a ShapeError here,
  // as for the other losses.
  KILN_CHECK(shapes_equal(target.sym_sizes(), input.sym_sizes()), ShapeError,
             "BCEWithLogitsLoss: target must have the input's shape {}, got {}",
             shape_str(input.sym_sizes()), shape_str(target.sym_sizes()));
  return with_context(*this, [&] {
    return binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction);
  });
}

KLDivLoss::KLDivLoss(std::string reduction, bool log_target)
    : Loss("KLDivLoss", std::move(reduction), /*allow_batchmean=*/true), log_target(log_target) {}

Tensor KLDivLoss::compute(const Tensor& input, const Tensor& target) {
  return with_context(*this, [&] { return F::kl_div(input, target, reduction, log_target); });
}

}  // namespace kiln::nn
