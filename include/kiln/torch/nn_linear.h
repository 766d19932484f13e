// torch::nn::Linear, Identity, Flatten and Unflatten over Kiln's layers (kiln/nn/linear.h,
// kiln/nn/flatten.h). Each XImpl IS the Kiln layer (its parameters, state_dict and kiln::compile
// guards are Kiln's) with LibTorch's constructors and its `options` member.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/nn/flatten.h"
#include "kiln/nn/linear.h"
#include "kiln/torch/arg.h"
#include "kiln/torch/module_holder.h"

namespace torch::nn {

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  TORCH_ARG(int64_t, in_features);
  TORCH_ARG(int64_t, out_features);
  TORCH_ARG(bool, bias) = true;
};

class LinearImpl : public kiln::nn::Linear {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<LinearImpl>(options));
  }
  LinearImpl(int64_t in_features, int64_t out_features)
      : LinearImpl(LinearOptions(in_features, out_features)) {}
  explicit LinearImpl(const LinearOptions& options)
      : kiln::nn::Linear(options.in_features(), options.out_features(), options.bias()),
        options(options) {}

  LinearOptions options;
};
TORCH_MODULE(Linear);

class IdentityImpl : public kiln::nn::Identity {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<IdentityImpl>());
  }
};
TORCH_MODULE(Identity);

struct FlattenOptions {
  TORCH_ARG(int64_t, start_dim) = 1;
  TORCH_ARG(int64_t, end_dim) = -1;
};

class FlattenImpl : public kiln::nn::Flatten {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<FlattenImpl>(options));
  }
  explicit FlattenImpl(const FlattenOptions& options = {})
      : kiln::nn::Flatten(options.start_dim(), options.end_dim()), options(options) {}

  FlattenOptions options;
};
TORCH_MODULE(Flatten);

// LibTorch's named-dimension form (dimname, namedshape) is not provided: Kiln has no named dims.
struct UnflattenOptions {
  UnflattenOptions(int64_t dim, std::vector<int64_t> sizes) : dim_(dim), sizes_(std::move(sizes)) {}
  TORCH_ARG(int64_t, dim);
  TORCH_ARG(std::vector<int64_t>, sizes);
};

class UnflattenImpl : public kiln::nn::Unflatten {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<UnflattenImpl>(options));
  }
  UnflattenImpl(int64_t dim, std::vector<int64_t> sizes)
      : UnflattenImpl(UnflattenOptions(dim, std::move(sizes))) {}
  explicit UnflattenImpl(UnflattenOptions options)
      : kiln::nn::Unflatten(options.dim(), options.sizes()), options(std::move(options)) {}

  UnflattenOptions options;
};
TORCH_MODULE(Unflatten);

}  // namespace torch::nn
