#include "kiln/nn/norm.h"

#include <fmt/ranges.h>

#include "kiln/autograd.h"
#include "kiln/nn/init.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/nn.h"
#include "src/core/shape.h"
#include "src/nn/naming.h"

namespace kiln::nn {
namespace {

std::string py_tuple(const std::vector<int64_t>& v) {
  return v.size() == 1 ? fmt::format("({},)", v[0]) : fmt::format("({})", fmt::join(v, ", "));
}

}  // namespace

// ---- BatchNorm ----

BatchNormBase::BatchNormBase(std::string name, int64_t num_features, BatchNormOptions options)
    : Module(std::move(name)),
      num_features(check_positive(this->name(), "num_features", num_features)),
      options(options),
      weight(register_parameter("weight", options.affine ? empty({num_features}) : Tensor())),
      bias(register_parameter("bias", options.affine ? empty({num_features}) : Tensor())),
      running_mean(register_buffer("running_mean",
                                   options.track_running_stats ? empty({num_features}) : Tensor())),
      running_var(register_buffer("running_var",
                                  options.track_running_stats ? empty({num_features}) : Tensor())),
      num_batches_tracked(register_buffer(
          "num_batches_tracked", options.track_running_stats ? zeros({}, kInt64) : Tensor())) {
  KILN_CHECK(!options.momentum || (*options.momentum >= 0.0 && *options.momentum <= 1.0),
             ValueError, "{}: momentum must be in [0, 1], got {}", this->name(), *options.momentum);
  reset_parameters();
}

void BatchNormBase::reset_running_stats() {
  if (!options.track_running_stats) return;
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1.0);
  num_batches_tracked.zero_();
}

void BatchNormBase::reset_parameters() {
  reset_running_stats();
  if (options.affine) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

Tensor BatchNormBase::forward(const Tensor& input) {
  check_input_dim(input);
  KILN_CHECK(input.size(1) == num_features, ShapeError,
             "{}: expected {} channels in dim 1, got an input of shape {}", describe(*this),
             num_features, shape_str(input.sym_sizes()));
  double factor = options.momentum.value_or(0.0);
  if (is_training() && options.track_running_stats) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(1);
    if (!options.momentum) factor = 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
  }
  // Batch statistics in training, and always when there are no running statistics.
  const bool use_batch_stats = is_training() || !running_mean.defined();
  if (use_batch_stats) {
    const SymInt values_per_channel = input.sym_numel() / num_features;  // stays symbolic
    KILN_CHECK(values_per_channel > 1, ValueError,
               "{}: expected more than 1 value per channel when training, got an input of shape "
               "{}",
               describe(*this), shape_str(input.sym_sizes()));
  }
  const bool pass_stats = !is_training() || options.track_running_stats;
  return with_context(*this, [&] {
    return batch_norm(input, pass_stats ? running_mean : Tensor(),
                      pass_stats ? running_var : Tensor(), weight, bias, use_batch_stats, factor,
                      options.eps);
  });
}

std::string BatchNormBase::extra_repr() const {
  return fmt::format("{}, eps={}, momentum={}, affine={}, track_running_stats={}", num_features,
                     py_float(options.eps),
                     options.momentum ? py_float(*options.momentum) : std::string("None"),
                     py_bool(options.affine), py_bool(options.track_running_stats));
}

void BatchNorm1d::check_input_dim(const Tensor& input) const {
  KILN_CHECK(input.dim() == 2 || input.dim() == 3, ShapeError,
             "{}: expected a 2-D (N, C) or 3-D (N, C, L) input, got shape {}", describe(*this),
             shape_str(input.sym_sizes()));
}

void BatchNorm2d::check_input_dim(const Tensor& input) const {
  KILN_CHECK(input.dim() == 4, ShapeError, "{}: expected a 4-D (N, C, H, W) input, got shape {}",
             describe(*this), shape_str(input.sym_sizes()));
}

// ---- LayerNorm ----

LayerNorm::LayerNorm(std::vector<int64_t> normalized_shape, double eps, bool elementwise_affine)
    : Module("LayerNorm"),
      normalized_shape(std::move(normalized_shape)),
      eps(eps),
      elementwise_affine(elementwise_affine),
      weight(register_parameter(
          "weight", elementwise_affine ? kiln::empty(this->normalized_shape) : Tensor())),
      bias(register_parameter(
          "bias", elementwise_affine ? kiln::empty(this->normalized_shape) : Tensor())) {
  reset_parameters();
}

void LayerNorm::reset_parameters() {
  if (!elementwise_affine) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor LayerNorm::forward(const Tensor& input) {
  const int64_t n = static_cast<int64_t>(normalized_shape.size());
  KILN_CHECK(
      input.dim() >= n && shapes_equal(input.sym_sizes().slice(input.dim() - n), normalized_shape),
      ShapeError, "{}: the input's trailing dims must be {}, got an input of shape {}",
      describe(*this), shape_str(normalized_shape), shape_str(input.sym_sizes()));
  return with_context(*this,
                      [&] { return layer_norm(input, normalized_shape, weight, bias, eps); });
}

std::string LayerNorm::extra_repr() const {
  return fmt::format("{}, eps={}, elementwise_affine={}", py_tuple(normalized_shape), py_float(eps),
                     py_bool(elementwise_affine));
}

// ---- GroupNorm ----

GroupNorm::GroupNorm(int64_t num_groups, int64_t num_channels, double eps, bool affine)
    : Module("GroupNorm"),
      num_groups(check_positive("GroupNorm", "num_groups", num_groups)),
      num_channels(check_positive("GroupNorm", "num_channels", num_channels)),
      eps(eps),
      affine(affine),
      weight(register_parameter("weight", affine ? empty({num_channels}) : Tensor())),
      bias(register_parameter("bias", affine ? empty({num_channels}) : Tensor())) {
  KILN_CHECK(num_channels % num_groups == 0, ValueError,
             "GroupNorm: num_channels ({}) must be divisible by num_groups ({})", num_channels,
             num_groups);
  reset_parameters();
}

void GroupNorm::reset_parameters() {
  if (!affine) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor GroupNorm::forward(const Tensor& input) {
  KILN_CHECK(input.dim() >= 2 && input.size(1) == num_channels, ShapeError,
             "{}: expected an input (N, {}, *), got shape {}", describe(*this), num_channels,
             shape_str(input.sym_sizes()));
  return with_context(*this, [&] { return group_norm(input, num_groups, weight, bias, eps); });
}

std::string GroupNorm::extra_repr() const {
  return fmt::format("{}, {}, eps={}, affine={}", num_groups, num_channels, py_float(eps),
                     py_bool(affine));
}

}  // namespace kiln::nn
