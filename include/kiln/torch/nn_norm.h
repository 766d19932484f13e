// torch::nn::BatchNorm1d/2d, LayerNorm and GroupNorm over Kiln's layers (kiln/nn/norm.h), and
// InstanceNorm1d/2d/3d (kiln/nn/instance_norm.h). Kiln has no 3-d batch norm, so there is no
// BatchNorm3d.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kiln/nn/instance_norm.h"
#include "kiln/nn/norm.h"
#include "kiln/tensor.h"
#include "kiln/torch/arg.h"
#include "kiln/torch/module_holder.h"

namespace torch::nn {

struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}
  TORCH_ARG(int64_t, num_features);
  TORCH_ARG(double, eps) = 1e-5;
  // nullopt: a cumulative average of the batch statistics.
  TORCH_ARG(std::optional<double>, momentum) = 0.1;
  TORCH_ARG(bool, affine) = true;
  TORCH_ARG(bool, track_running_stats) = true;
};
using BatchNorm1dOptions = BatchNormOptions;
using BatchNorm2dOptions = BatchNormOptions;

namespace detail {

inline kiln::nn::BatchNormOptions kiln_batch_norm_options(const BatchNormOptions& o) {
  return {.eps = o.eps(),
          .momentum = o.momentum(),
          .affine = o.affine(),
          .track_running_stats = o.track_running_stats()};
}

// BatchNorm1dImpl and BatchNorm2dImpl: Kiln's layer `Base` with LibTorch's options. A number
// converts to BatchNormOptions, so `torch::nn::BatchNorm2d(64)` works as in LibTorch.
template <typename Base>
class BatchNormImpl : public Base {
 public:
  explicit BatchNormImpl(const BatchNormOptions& options)
      : Base(options.num_features(), kiln_batch_norm_options(options)), options(options) {}

  // LibTorch's options; hides Kiln's (Base::options), which say the same.
  BatchNormOptions options;
};

}  // namespace detail

class BatchNorm1dImpl : public detail::BatchNormImpl<kiln::nn::BatchNorm1d> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<BatchNorm1dImpl>(options));
  }
  using BatchNormImpl::BatchNormImpl;
};
TORCH_MODULE(BatchNorm1d);

class BatchNorm2dImpl : public detail::BatchNormImpl<kiln::nn::BatchNorm2d> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<BatchNorm2dImpl>(options));
  }
  using BatchNormImpl::BatchNormImpl;
};
TORCH_MODULE(BatchNorm2d);

struct LayerNormOptions {
  LayerNormOptions(std::vector<int64_t> normalized_shape)
      : normalized_shape_(std::move(normalized_shape)) {}
  TORCH_ARG(std::vector<int64_t>, normalized_shape);
  TORCH_ARG(double, eps) = 1e-5;
  TORCH_ARG(bool, elementwise_affine) = true;
};

class LayerNormImpl : public kiln::nn::LayerNorm {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<LayerNormImpl>(options));
  }
  LayerNormImpl(std::vector<int64_t> normalized_shape)
      : LayerNormImpl(LayerNormOptions(std::move(normalized_shape))) {}
  explicit LayerNormImpl(LayerNormOptions options)
      : kiln::nn::LayerNorm(options.normalized_shape(), options.eps(),
                            options.elementwise_affine()),
        options(std::move(options)) {}

  LayerNormOptions options;
};
TORCH_MODULE(LayerNorm);

struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels)
      : num_groups_(num_groups), num_channels_(num_channels) {}
  TORCH_ARG(int64_t, num_groups);
  TORCH_ARG(int64_t, num_channels);
  TORCH_ARG(double, eps) = 1e-5;
  TORCH_ARG(bool, affine) = true;
};

class GroupNormImpl : public kiln::nn::GroupNorm {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<GroupNormImpl>(options));
  }
  GroupNormImpl(int64_t num_groups, int64_t num_channels)
      : GroupNormImpl(GroupNormOptions(num_groups, num_channels)) {}
  explicit GroupNormImpl(const GroupNormOptions& options)
      : kiln::nn::GroupNorm(options.num_groups(), options.num_channels(), options.eps(),
                            options.affine()),
        options(options) {}

  GroupNormOptions options;
};
TORCH_MODULE(GroupNorm);

struct InstanceNormOptions {
  InstanceNormOptions(int64_t num_features) : num_features_(num_features) {}
  TORCH_ARG(int64_t, num_features);
  TORCH_ARG(double, eps) = 1e-5;
  TORCH_ARG(double, momentum) = 0.1;
  TORCH_ARG(bool, affine) = false;
  TORCH_ARG(bool, track_running_stats) = false;
};
using InstanceNorm1dOptions = InstanceNormOptions;
using InstanceNorm2dOptions = InstanceNormOptions;
using InstanceNorm3dOptions = InstanceNormOptions;

namespace detail {

// InstanceNorm1dImpl .. InstanceNorm3dImpl: Kiln's layer `Base` with LibTorch's options; a number
// converts to InstanceNormOptions (`torch::nn::InstanceNorm2d(64)`).
template <typename Base>
class InstanceNormImpl : public Base {
 public:
  explicit InstanceNormImpl(const InstanceNormOptions& options)
      : Base(options.num_features(), {.eps = options.eps(),
                                      .momentum = options.momentum(),
                                      .affine = options.affine(),
                                      .track_running_stats = options.track_running_stats()}),
        options(options) {}

  InstanceNormOptions options;
};

}  // namespace detail

class InstanceNorm1dImpl : public detail::InstanceNormImpl<kiln::nn::InstanceNorm1d> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<InstanceNorm1dImpl>(options));
  }
  using InstanceNormImpl::InstanceNormImpl;
};
TORCH_MODULE(InstanceNorm1d);

class InstanceNorm2dImpl : public detail::InstanceNormImpl<kiln::nn::InstanceNorm2d> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<InstanceNorm2dImpl>(options));
  }
  using InstanceNormImpl::InstanceNormImpl;
};
TORCH_MODULE(InstanceNorm2d);

class InstanceNorm3dImpl : public detail::InstanceNormImpl<kiln::nn::InstanceNorm3d> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<InstanceNorm3dImpl>(options));
  }
  using InstanceNormImpl::InstanceNormImpl;
};
TORCH_MODULE(InstanceNorm3d);

namespace functional {

struct BatchNormFuncOptions {
  TORCH_ARG(kiln::Tensor, weight) = kiln::Tensor();
  TORCH_ARG(kiln::Tensor, bias) = kiln::Tensor();
  TORCH_ARG(bool, training) = false;
  // Required by the functional (the cumulative average needs the module's batch count).
  TORCH_ARG(std::optional<double>, momentum) = 0.1;
  TORCH_ARG(double, eps) = 1e-5;
};

struct LayerNormFuncOptions {
  LayerNormFuncOptions(std::vector<int64_t> normalized_shape)
      : normalized_shape_(std::move(normalized_shape)) {}
  TORCH_ARG(std::vector<int64_t>, normalized_shape);
  TORCH_ARG(kiln::Tensor, weight) = {};
  TORCH_ARG(kiln::Tensor, bias) = {};
  TORCH_ARG(double, eps) = 1e-5;
};

struct GroupNormFuncOptions {
  GroupNormFuncOptions(int64_t num_groups) : num_groups_(num_groups) {}
  TORCH_ARG(int64_t, num_groups);
  TORCH_ARG(kiln::Tensor, weight) = {};
  TORCH_ARG(kiln::Tensor, bias) = {};
  TORCH_ARG(double, eps) = 1e-5;
};

struct InstanceNormFuncOptions {
  TORCH_ARG(kiln::Tensor, running_mean) = {};
  TORCH_ARG(kiln::Tensor, running_var) = {};
  TORCH_ARG(kiln::Tensor, weight) = {};
  TORCH_ARG(kiln::Tensor, bias) = {};
  TORCH_ARG(bool, use_input_stats) = true;
  TORCH_ARG(double, momentum) = 0.1;
  TORCH_ARG(double, eps) = 1e-5;
};

// The normalization ops of kiln/ops/nn.h with LibTorch's options. batch_norm raises ValueError
// when momentum is nullopt.
kiln::Tensor batch_norm(const kiln::Tensor& input, const kiln::Tensor& running_mean,
                        const kiln::Tensor& running_var, const BatchNormFuncOptions& options = {});
kiln::Tensor layer_norm(const kiln::Tensor& input, const LayerNormFuncOptions& options);
kiln::Tensor group_norm(const kiln::Tensor& input, const GroupNormFuncOptions& options);
kiln::Tensor instance_norm(const kiln::Tensor& input, const InstanceNormFuncOptions& options = {});

}  // namespace functional

}  // namespace torch::nn
