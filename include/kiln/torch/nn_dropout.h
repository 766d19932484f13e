// torch::nn::Dropout, Dropout1d, Dropout2d and Dropout3d over Kiln's (kiln/nn/dropout.h), and
// their functionals. `inplace` is accepted and ignored: the result is computed out of place, so a
// program that reads its input afterwards still sees the values from before the dropout.
#pragma once

#include "kiln/nn/dropout.h"
#include "kiln/tensor.h"
#include "kiln/torch/arg.h"
#include "kiln/torch/module_holder.h"

namespace torch::nn {

struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}
  TORCH_ARG(double, p) = 0.5;
  TORCH_ARG(bool, inplace) = false;
};
using Dropout1dOptions = DropoutOptions;
using Dropout2dOptions = DropoutOptions;
using Dropout3dOptions = DropoutOptions;

namespace detail {

// Kiln's dropout layer `Base` with LibTorch's constructors: (p) or (options).
template <typename Base>
class DropoutBase : public Base {
 public:
  explicit DropoutBase(double p) : DropoutBase(DropoutOptions(p)) {}
  explicit DropoutBase(const DropoutOptions& options = {}) : Base(options.p()), options(options) {}

  DropoutOptions options;
};

}  // namespace detail

class DropoutImpl : public detail::DropoutBase<kiln::nn::Dropout> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<DropoutImpl>(options));
  }
  using DropoutBase::DropoutBase;
};
TORCH_MODULE(Dropout);

class Dropout1dImpl : public detail::DropoutBase<kiln::nn::Dropout1d> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<Dropout1dImpl>(options));
  }
  using DropoutBase::DropoutBase;
};
TORCH_MODULE(Dropout1d);

class Dropout2dImpl : public detail::DropoutBase<kiln::nn::Dropout2d> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<Dropout2dImpl>(options));
  }
  using DropoutBase::DropoutBase;
};
TORCH_MODULE(Dropout2d);

class Dropout3dImpl : public detail::DropoutBase<kiln::nn::Dropout3d> {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<Dropout3dImpl>(options));
  }
  using DropoutBase::DropoutBase;
};
TORCH_MODULE(Dropout3d);

namespace functional {

struct DropoutFuncOptions {
  TORCH_ARG(double, p) = 0.5;
  TORCH_ARG(bool, training) = true;  // LibTorch's default, unlike the modules' eval switch
  TORCH_ARG(bool, inplace) = false;
};
using Dropout1dFuncOptions = DropoutFuncOptions;
using Dropout2dFuncOptions = DropoutFuncOptions;
using Dropout3dFuncOptions = DropoutFuncOptions;

// kiln::dropout.
kiln::Tensor dropout(const kiln::Tensor& input, const DropoutFuncOptions& options = {});
// kiln::nn::feature_dropout of an input with `D` spatial dims, batched (N, C, *) or not (C, *),
// as the modules; ShapeError naming the function for any other rank.
kiln::Tensor dropout1d(const kiln::Tensor& input, const Dropout1dFuncOptions& options = {});
kiln::Tensor dropout2d(const kiln::Tensor& input, const Dropout2dFuncOptions& options = {});
kiln::Tensor dropout3d(const kiln::Tensor& input, const Dropout3dFuncOptions& options = {});

}  // namespace functional

}  // namespace torch::nn
