// Activation functions as modules, as torch.nn.ReLU etc. Each forward calls the op of the same
// name (kiln/ops/unary.h, kiln/ops/reduce.h) or its nn::functional composition.
#pragma once

#include <string>

#include "kiln/nn/module.h"

namespace kiln::nn {

class ReLU : public Module {
 public:
  std::shared_ptr<Module> clone() const override { return finish_clone(std::make_shared<ReLU>()); }
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& input) override;
};

// approximate: "none" (exact, with erf) or "tanh"; ValueError otherwise.
class GELU : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<GELU>(approximate));
  }
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const std::string approximate;
};

class SiLU : public Module {
 public:
  std::shared_ptr<Module> clone() const override { return finish_clone(std::make_shared<SiLU>()); }
  SiLU() : Module("SiLU") {}
  Tensor forward(const Tensor& input) override;
};

class Sigmoid : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<Sigmoid>());
  }
  Sigmoid() : Module("Sigmoid") {}
  Tensor forward(const Tensor& input) override;
};

class Tanh : public Module {
 public:
  std::shared_ptr<Module> clone() const override { return finish_clone(std::make_shared<Tanh>()); }
  Tanh() : Module("Tanh") {}
  Tensor forward(const Tensor& input) override;
};

// log(1 + exp(beta x)) / beta, and x where beta x > threshold.
class Softplus : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<Softplus>(beta, threshold));
  }
  explicit Softplus(double beta = 1.0, double threshold = 20.0);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const double beta;
  const double threshold;
};

// x for x > 0, negative_slope * x otherwise.
class LeakyReLU : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<LeakyReLU>(negative_slope));
  }
  explicit LeakyReLU(double negative_slope = 0.01);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const double negative_slope;
};

// x for x > 0, alpha * (exp(x) - 1) otherwise.
class ELU : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<ELU>(alpha));
  }
  explicit ELU(double alpha = 1.0);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const double alpha;
};

class Softmax : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<Softmax>(dim));
  }
  explicit Softmax(int64_t dim);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const int64_t dim;
};

class LogSoftmax : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<LogSoftmax>(dim));
  }
  explicit LogSoftmax(int64_t dim);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const int64_t dim;
};

}  // namespace kiln::nn
