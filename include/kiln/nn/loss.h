// Loss modules, as torch.nn.CrossEntropyLoss etc.: loss(input, target). Each checks its reduction
// ("none", "mean" or "sum"; KLDivLoss also "batchmean") when constructed and raises ValueError
// naming itself otherwise; errors from the computation are prefixed with the loss's name. The
// computations are the functions in kiln/nn/functional.h and the loss ops in kiln/ops/nn.h.
#pragma once

#include <string>

#include "kiln/nn/module.h"

namespace kiln::nn {

class Loss : public Module {
 public:
  // forward(input) is Module's, which raises NotImplementedError: a loss needs a target.
  using Module::forward;
  Tensor forward(const Tensor& input, const Tensor& target) { return compute(input, target); }
  Tensor operator()(const Tensor& input, const Tensor& target) { return compute(input, target); }

  const std::string reduction;

 protected:
  Loss(std::string name, std::string reduction, bool allow_batchmean = false);
  // The loss itself; a name of its own so that subclasses do not hide Module::forward.
  virtual Tensor compute(const Tensor& input, const Tensor& target) = 0;
};

struct CrossEntropyLossOptions {
  Tensor weight;  // one per class; registered as buffer "weight" when given
  int64_t ignore_index = -100;
  std::string reduction = "mean";
  double label_smoothing = 0.0;
};

// input: logits (C), (N, C) or (N, C, d...); target: class indices or class probabilities.
class CrossEntropyLoss : public Loss {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<CrossEntropyLoss>(
        CrossEntropyLossOptions{weight, ignore_index, reduction, label_smoothing}));
  }
  explicit CrossEntropyLoss(CrossEntropyLossOptions options = {});
  const int64_t ignore_index;
  const double label_smoothing;
  Tensor& weight;

 protected:
  Tensor compute(const Tensor& input, const Tensor& target) override;
};

struct NLLLossOptions {
  Tensor weight;  // one per class; buffer "weight" when given
  int64_t ignore_index = -100;
  std::string reduction = "mean";
};

// input: log-probabilities (as from LogSoftmax); target: class indices.
class NLLLoss : public Loss {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<NLLLoss>(NLLLossOptions{weight, ignore_index, reduction}));
  }
  explicit NLLLoss(NLLLossOptions options = {});
  const int64_t ignore_index;
  Tensor& weight;

 protected:
  Tensor compute(const Tensor& input, const Tensor& target) override;
};

// (input - target)^2.
class MSELoss : public Loss {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<MSELoss>(reduction));
  }
  explicit MSELoss(std::string reduction = "mean") : Loss("MSELoss", std::move(reduction)) {}

 protected:
  Tensor compute(const Tensor& input, const Tensor& target) override;
};

// |input - target|.
class L1Loss : public Loss {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<L1Loss>(reduction));
  }
  explicit L1Loss(std::string reduction = "mean") : Loss("L1Loss", std::move(reduction)) {}

 protected:
  Tensor compute(const Tensor& input, const Tensor& target) override;
};

// 0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere (d = input - target; beta = 0: L1).
class SmoothL1Loss : public Loss {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<SmoothL1Loss>(reduction, beta));
  }
  explicit SmoothL1Loss(std::string reduction = "mean", double beta = 1.0);
  const double beta;

 protected:
  Tensor compute(const Tensor& input, const Tensor& target) override;
};

// 0.5 d^2 where |d| < delta, delta (|d| - 0.5 delta) elsewhere.
class HuberLoss : public Loss {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<HuberLoss>(reduction, delta));
  }
  explicit HuberLoss(std::string reduction = "mean", double delta = 1.0);
  const double delta;

 protected:
  Tensor compute(const Tensor& input, const Tensor& target) override;
};

struct BCELossOptions {
  Tensor weight;  // broadcasts to the input; buffer "weight" when given
  std::string reduction = "mean";
};

// input: probabilities in [0, 1]; each log is clamped at -100, as PyTorch.
class BCELoss : public Loss {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<BCELoss>(BCELossOptions{weight, reduction}));
  }
  explicit BCELoss(BCELossOptions options = {});
  Tensor& weight;

 protected:
  Tensor compute(const Tensor& input, const Tensor& target) override;
};

struct BCEWithLogitsLossOptions {
  Tensor weight;      // broadcasts to the input
  Tensor pos_weight;  // weight of positive examples, one per class (broadcasts to the input)
  std::string reduction = "mean";
};

// input: logits; sigmoid and binary cross entropy in one stable computation.
class BCEWithLogitsLoss : public Loss {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<BCEWithLogitsLoss>(
        BCEWithLogitsLossOptions{weight, pos_weight, reduction}));
  }
  explicit BCEWithLogitsLoss(BCEWithLogitsLossOptions options = {});
  Tensor& weight;
  Tensor& pos_weight;

 protected:
  Tensor compute(const Tensor& input, const Tensor& target) override;
};

// input: log-probabilities; target: probabilities (log-probabilities with log_target).
// reduction "batchmean" divides the sum by the batch size (the true KL divergence).
class KLDivLoss : public Loss {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<KLDivLoss>(reduction, log_target));
  }
  explicit KLDivLoss(std::string reduction = "mean", bool log_target = false);
  const bool log_target;

 protected:
  Tensor compute(const Tensor& input, const Tensor& target) override;
};

}  // namespace kiln::nn
