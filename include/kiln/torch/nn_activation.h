// torch::nn's activation modules over Kiln's (kiln/nn/activation.h) and their functionals.
// `inplace` is accepted and ignored: the result is computed out of place (the same values; the
// input is left unchanged).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kiln/dtype.h"
#include "kiln/nn/activation.h"
#include "kiln/tensor.h"
#include "kiln/torch/arg.h"
#include "kiln/torch/module_holder.h"

namespace torch::nn {

struct ReLUOptions {
  ReLUOptions(bool inplace = false) : inplace_(inplace) {}
  TORCH_ARG(bool, inplace);
};

class ReLUImpl : public kiln::nn::ReLU {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<ReLUImpl>(options));
  }
  explicit ReLUImpl(const ReLUOptions& options = {}) : options(options) {}
  ReLUOptions options;
};
TORCH_MODULE(ReLU);

struct GELUOptions {
  TORCH_ARG(std::string, approximate) = "none";  // or "tanh"
};

class GELUImpl : public kiln::nn::GELU {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<GELUImpl>(options));
  }
  explicit GELUImpl(GELUOptions options = {})
      : kiln::nn::GELU(options.approximate()), options(std::move(options)) {}
  GELUOptions options;
};
TORCH_MODULE(GELU);

class SiLUImpl : public kiln::nn::SiLU {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<SiLUImpl>());
  }
};
TORCH_MODULE(SiLU);

class SigmoidImpl : public kiln::nn::Sigmoid {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<SigmoidImpl>());
  }
};
TORCH_MODULE(Sigmoid);

class TanhImpl : public kiln::nn::Tanh {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<TanhImpl>());
  }
};
TORCH_MODULE(Tanh);

struct SoftplusOptions {
  TORCH_ARG(double, beta) = 1.0;
  TORCH_ARG(double, threshold) = 20.0;
};

class SoftplusImpl : public kiln::nn::Softplus {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<SoftplusImpl>(options));
  }
  explicit SoftplusImpl(const SoftplusOptions& options = {})
      : kiln::nn::Softplus(options.beta(), options.threshold()), options(options) {}
  SoftplusOptions options;
};
TORCH_MODULE(Softplus);

struct LeakyReLUOptions {
  TORCH_ARG(double, negative_slope) = 1e-2;
  TORCH_ARG(bool, inplace) = false;
};

class LeakyReLUImpl : public kiln::nn::LeakyReLU {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<LeakyReLUImpl>(options));
  }
  explicit LeakyReLUImpl(const LeakyReLUOptions& options = {})
      : kiln::nn::LeakyReLU(options.negative_slope()), options(options) {}
  LeakyReLUOptions options;
};
TORCH_MODULE(LeakyReLU);

struct ELUOptions {
  TORCH_ARG(double, alpha) = 1.0;
  TORCH_ARG(bool, inplace) = false;
};

class ELUImpl : public kiln::nn::ELU {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<ELUImpl>(options));
  }
  explicit ELUImpl(const ELUOptions& options = {})
      : kiln::nn::ELU(options.alpha()), options(options) {}
  ELUOptions options;
};
TORCH_MODULE(ELU);

struct SoftmaxOptions {
  SoftmaxOptions(int64_t dim) : dim_(dim) {}
  TORCH_ARG(int64_t, dim);
};

class SoftmaxImpl : public kiln::nn::Softmax {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<SoftmaxImpl>(options));
  }
  explicit SoftmaxImpl(int64_t dim) : SoftmaxImpl(SoftmaxOptions(dim)) {}
  explicit SoftmaxImpl(const SoftmaxOptions& options)
      : kiln::nn::Softmax(options.dim()), options(options) {}
  SoftmaxOptions options;
};
TORCH_MODULE(Softmax);

struct LogSoftmaxOptions {
  LogSoftmaxOptions(int64_t dim) : dim_(dim) {}
  TORCH_ARG(int64_t, dim);
};

class LogSoftmaxImpl : public kiln::nn::LogSoftmax {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<LogSoftmaxImpl>(options));
  }
  explicit LogSoftmaxImpl(int64_t dim) : LogSoftmaxImpl(LogSoftmaxOptions(dim)) {}
  explicit LogSoftmaxImpl(const LogSoftmaxOptions& options)
      : kiln::nn::LogSoftmax(options.dim()), options(options) {}
  LogSoftmaxOptions options;
};
TORCH_MODULE(LogSoftmax);

namespace functional {

using ReLUFuncOptions = ReLUOptions;
using GELUFuncOptions = GELUOptions;
using SoftplusFuncOptions = SoftplusOptions;
using LeakyReLUFuncOptions = LeakyReLUOptions;
using ELUFuncOptions = ELUOptions;

struct SoftmaxFuncOptions {
  SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}
  TORCH_ARG(int64_t, dim);
  TORCH_ARG(std::optional<kiln::ScalarType>, dtype) = std::nullopt;
};

struct LogSoftmaxFuncOptions {
  LogSoftmaxFuncOptions(int64_t dim) : dim_(dim) {}
  TORCH_ARG(int64_t, dim);
  TORCH_ARG(std::optional<kiln::ScalarType>, dtype) = std::nullopt;
};

// The activation ops of kiln/ops/unary.h and kiln/ops/reduce.h (leaky_relu and elu: Kiln's
// nn::functional), with LibTorch's options. sigmoid and tanh are not in LibTorch's functional
// namespace (it has torch::sigmoid and torch::tanh); they are here for programs that reach for
// them as F::sigmoid.
kiln::Tensor relu(const kiln::Tensor& input, const ReLUFuncOptions& options = {});
kiln::Tensor leaky_relu(const kiln::Tensor& input, const LeakyReLUFuncOptions& options = {});
kiln::Tensor elu(const kiln::Tensor& input, const ELUFuncOptions& options = {});
kiln::Tensor gelu(const kiln::Tensor& input, const GELUFuncOptions& options = {});
kiln::Tensor silu(const kiln::Tensor& input);
kiln::Tensor softplus(const kiln::Tensor& input, const SoftplusFuncOptions& options = {});
kiln::Tensor sigmoid(const kiln::Tensor& input);
kiln::Tensor tanh(const kiln::Tensor& input);
kiln::Tensor softmax(const kiln::Tensor& input, const SoftmaxFuncOptions& options);
kiln::Tensor log_softmax(const kiln::Tensor& input, const LogSoftmaxFuncOptions& options);

}  // namespace functional

}  // namespace torch::nn
