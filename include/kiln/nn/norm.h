// Normalization layers, as torch.nn.BatchNorm1d/2d, LayerNorm, GroupNorm. The ops are in
// kiln/ops/nn.h. Affine weights start at ones and biases at zeros, as in PyTorch.
#pragma once

#include <optional>
#include <vector>

#include "kiln/nn/module.h"

namespace kiln::nn {

struct BatchNormOptions {
  double eps = 1e-5;
  // Weight of the new batch statistic in the running averages; nullopt: cumulative average
  // (1 / num_batches_tracked).
  std::optional<double> momentum = 0.1;
  bool affine = true;  // learnable per-channel weight and bias
  // Keep running_mean/running_var (and num_batches_tracked) and use them in eval mode; without,
  // batch statistics are used in both modes.
  bool track_running_stats = true;
};

// In training: normalizes each channel with the batch's mean and biased variance and updates the
// running statistics (with the unbiased variance). In eval: uses the running statistics.
class BatchNormBase : public Module {
 public:
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  void reset_running_stats();
  void reset_parameters();

  const int64_t num_features;
  const BatchNormOptions options;
  Tensor& weight;               // [num_features]; undefined unless affine
  Tensor& bias;                 // [num_features]; undefined unless affine
  Tensor& running_mean;         // buffer [num_features]; undefined unless track_running_stats
  Tensor& running_var;          // buffer [num_features]
  Tensor& num_batches_tracked;  // int64 buffer, 0-dim

 protected:
  BatchNormBase(std::string name, int64_t num_features, BatchNormOptions options);
  // ShapeError naming the module when the input's rank is wrong for it.
  virtual void check_input_dim(const Tensor& input) const = 0;
};

// Input (N, C) or (N, C, L).
class BatchNorm1d : public BatchNormBase {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<BatchNorm1d>(num_features, options));
  }
  explicit BatchNorm1d(int64_t num_features, BatchNormOptions options = {})
      : BatchNormBase("BatchNorm1d", num_features, options) {}

 protected:
  void check_input_dim(const Tensor& input) const override;
};

// Input (N, C, H, W).
class BatchNorm2d : public BatchNormBase {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<BatchNorm2d>(num_features, options));
  }
  explicit BatchNorm2d(int64_t num_features, BatchNormOptions options = {})
      : BatchNormBase("BatchNorm2d", num_features, options) {}

 protected:
  void check_input_dim(const Tensor& input) const override;
};

// Normalizes over the trailing dims given by normalized_shape: LayerNorm({512}), LayerNorm({3, 4}).
class LayerNorm : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<LayerNorm>(normalized_shape, eps, elementwise_affine));
  }
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5,
                     bool elementwise_affine = true);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  void reset_parameters();

  const std::vector<int64_t> normalized_shape;
  const double eps;
  const bool elementwise_affine;
  Tensor& weight;  // normalized_shape; undefined unless elementwise_affine
  Tensor& bias;
};

// Input (N, C, *): statistics over groups of C / num_groups channels of each sample.
class GroupNorm : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<GroupNorm>(num_groups, num_channels, eps, affine));
  }
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  void reset_parameters();

  const int64_t num_groups;
  const int64_t num_channels;
  const double eps;
  const bool affine;
  Tensor& weight;  // [num_channels]; undefined unless affine
  Tensor& bias;
};

}  // namespace kiln::nn
