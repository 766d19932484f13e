// InstanceNorm1d/2d/3d, as torch.nn.InstanceNorm1d/2d/3d: each (sample, channel) plane is
// normalized over its spatial values (the op is kiln::instance_norm, kiln/ops/nn.h).
#pragma once

#include "kiln/nn/module.h"

namespace kiln::nn {

struct InstanceNormOptions {
  double eps = 1e-5;
  // Weight of the new statistics in the running averages.
  double momentum = 0.1;
  bool affine = false;  // learnable per-channel weight (ones) and bias (zeros)
  // Keep running_mean/running_var (updated in training) and normalize with them in eval mode;
  // without, the input's statistics are used in both modes.
  bool track_running_stats = false;
};

class InstanceNormBase : public Module {
 public:
  // Input (N, C, *spatial) or unbatched (C, *spatial).
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  void reset_running_stats();
  void reset_parameters();

  const int64_t num_features;
  const InstanceNormOptions options;
  Tensor& weight;        // [num_features]; undefined unless affine
  Tensor& bias;          // [num_features]; undefined unless affine
  Tensor& running_mean;  // buffer [num_features]; undefined unless track_running_stats
  Tensor& running_var;   // buffer [num_features]
  // int64 buffer, 0-dim, kept for PyTorch's state_dict; instance norm never counts batches.
  Tensor& num_batches_tracked;

 protected:
  InstanceNormBase(std::string name, int64_t num_features, int64_t spatial_dims,
                   InstanceNormOptions options);

 private:
  const int64_t spatial_dims_;
};

// Input (N, C, L) or (C, L).
class InstanceNorm1d : public InstanceNormBase {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<InstanceNorm1d>(num_features, options));
  }
  explicit InstanceNorm1d(int64_t num_features, InstanceNormOptions options = {})
      : InstanceNormBase("InstanceNorm1d", num_features, 1, options) {}
};

// Input (N, C, H, W) or (C, H, W).
class InstanceNorm2d : public InstanceNormBase {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<InstanceNorm2d>(num_features, options));
  }
  explicit InstanceNorm2d(int64_t num_features, InstanceNormOptions options = {})
      : InstanceNormBase("InstanceNorm2d", num_features, 2, options) {}
};

// Input (N, C, D, H, W) or (C, D, H, W).
class InstanceNorm3d : public InstanceNormBase {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<InstanceNorm3d>(num_features, options));
  }
  explicit InstanceNorm3d(int64_t num_features, InstanceNormOptions options = {})
      : InstanceNormBase("InstanceNorm3d", num_features, 3, options) {}
};

}  // namespace kiln::nn
