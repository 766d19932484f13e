#include "kiln/nn/instance_norm.h"

#include "kiln/autograd.h"
#include "kiln/nn/init.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/nn.h"
#include "src/core/shape.h"
#include "src/nn/naming.h"

namespace kiln::nn {

InstanceNormBase::InstanceNormBase(std::string name, int64_t num_features, int64_t spatial_dims,
                                   InstanceNormOptions options)
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
          "num_batches_tracked", options.track_running_stats ? zeros({}, kInt64) : Tensor())),
      spatial_dims_(spatial_dims) {
  KILN_CHECK(options.momentum >= 0.0 && options.momentum <= 1.0, ValueError,
             "{}: momentum must be in [0, 1], got {}", this->name(), options.momentum);
  reset_parameters();
}

void InstanceNormBase::reset_running_stats() {
  if (!options.track_running_stats) return;
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1.0);
  num_batches_tracked.zero_();
}

void InstanceNormBase::reset_parameters() {
  reset_running_stats();
  if (options.affine) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

Tensor InstanceNormBase::forward(const Tensor& input) {
  const int64_t batched = spatial_dims_ + 2;
  KILN_CHECK(input.dim() == batched || input.dim() == batched - 1, ShapeError,
             "{}: expected a {}-D (C, *spatial) or {}-D (N, C, *spatial) input, got shape {}",
             describe(*this), batched - 1, batched, shape_str(input.sym_sizes()));
  const bool unbatched = input.dim() == batched - 1;
  // Without parameters or running statistics the channel count is not used, and PyTorch accepts
  // any (with a warning).
  if (options.affine || options.track_running_stats) {
    KILN_CHECK(input.size(unbatched ? 0 : 1) == num_features, ShapeError,
               "{}: expected {} channels in dim {}, got an input of shape {}", describe(*this),
               num_features, unbatched ? 0 : 1, shape_str(input.sym_sizes()));
  }
  const bool use_input_stats = is_training() || !options.track_running_stats;
  const Tensor out = with_context(*this, [&] {
    return instance_norm(unbatched ? input.unsqueeze(0) : input, running_mean, running_var, weight,
                         bias, use_input_stats, options.momentum, options.eps);
  });
  return unbatched ? out.squeeze(0) : out;
}

std::string InstanceNormBase::extra_repr() const {
  return fmt::format("{}, eps={}, momentum={}, affine={}, track_running_stats={}", num_features,
                     py_float(options.eps), py_float(options.momentum), py_bool(options.affine),
                     py_bool(options.track_running_stats));
}

}  // namespace kiln::nn
