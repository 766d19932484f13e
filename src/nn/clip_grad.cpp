#include "kiln/nn/clip_grad.h"

#include <cmath>

#include "kiln/autograd.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"
#include "src/core/promotion.h"

namespace kiln::nn {
namespace {

std::vector<Tensor> defined_grads(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters)
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  return grads;
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  KILN_CHECK(norm_type > 0.0 && !std::isnan(norm_type), ValueError,
             "clip_grad_norm_: norm_type must be positive (or kInfNorm), got {}", norm_type);
  const std::vector<Tensor> grads = defined_grads(parameters);
  if (grads.empty()) return zeros({}, kFloat32);
  NoGradGuard no_grad;
  ScalarType dtype = grads.front().dtype();
  for (const Tensor& g : grads) dtype = promote_types(dtype, g.dtype());

  // The norm of the per-gradient norms, accumulated in float64.
  std::vector<Tensor> norms;
  norms.reserve(grads.size());
  const bool inf_norm = std::isinf(norm_type);
  for (const Tensor& g : grads) {
    const Tensor g64 = g.to(kFloat64);
    norms.push_back(inf_norm ? g64.abs().amax() : g64.norm(norm_type));
  }
  const Tensor all = stack(norms);
  const Tensor total = inf_norm ? all.amax() : all.norm(norm_type);
  if (error_if_nonfinite) {
    const double total_value = total.item<double>();
    KILN_CHECK(std::isfinite(total_value), ValueError,
               "clip_grad_norm_: the total norm of order {} of the gradients of {} parameter(s) is "
               "non-finite ({}), so it cannot be clipped. Pass error_if_nonfinite=false to clip "
               "anyway (the gradients become NaN), or look for the op that overflowed",
               norm_type, grads.size(), total_value);
  }
  // The coefficient stays a tensor, clamped to 1 rather than tested (as PyTorch): no item(), so
  // clipping inside kiln::compile is part of the graph, not a graph break; multiplying by exactly
  // 1 changes nothing, and NaN/inf stay visible in the gradients.
  const Tensor coef = (max_norm / (total + 1e-6)).clamp(std::nullopt, 1.0);
  for (const Tensor& g : grads) g.mul_(coef);
  return total.to(dtype);
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  KILN_CHECK(clip_value >= 0.0, ValueError, "clip_grad_value_: clip_value must be >= 0, got {}",
             clip_value);
  NoGradGuard no_grad;
  for (const Tensor& g : defined_grads(parameters)) g.clamp_(-clip_value, clip_value);
}

}  // namespace kiln::nn
