// torch::nn's loss modules over Kiln's (kiln/nn/loss.h): loss(input, target) or
// loss->forward(input, target). Reductions are LibTorch's constants:
//
//   torch::nn::CrossEntropyLoss ce(torch::nn::CrossEntropyLossOptions().reduction(torch::kSum));
//   torch::nn::MSELoss mse(torch::kNone);
#pragma once

#include <variant>

#include "kiln/nn/loss.h"
#include "kiln/tensor.h"
#include "kiln/torch/arg.h"
#include "kiln/torch/module_holder.h"
#include "kiln/torch/nn_enum.h"

namespace torch::nn {

using loss_reduction_t = std::variant<enumtype::kNone, enumtype::kMean, enumtype::kSum>;

struct L1LossOptions {
  typedef loss_reduction_t reduction_t;
  KILN_TORCH_REDUCTION_CTORS(L1LossOptions)
  TORCH_ARG(reduction_t, reduction) = torch::kMean;
};

struct MSELossOptions {
  typedef loss_reduction_t reduction_t;
  KILN_TORCH_REDUCTION_CTORS(MSELossOptions)
  TORCH_ARG(reduction_t, reduction) = torch::kMean;
};

struct SmoothL1LossOptions {
  typedef loss_reduction_t reduction_t;
  KILN_TORCH_REDUCTION_CTORS(SmoothL1LossOptions)
  TORCH_ARG(reduction_t, reduction) = torch::kMean;
  TORCH_ARG(double, beta) = 1.0;
};

struct HuberLossOptions {
  typedef loss_reduction_t reduction_t;
  KILN_TORCH_REDUCTION_CTORS(HuberLossOptions)
  TORCH_ARG(reduction_t, reduction) = torch::kMean;
  TORCH_ARG(double, delta) = 1.0;
};

struct KLDivLossOptions {
  typedef std::variant<enumtype::kNone, enumtype::kBatchMean, enumtype::kSum, enumtype::kMean>
      reduction_t;
  KILN_TORCH_REDUCTION_CTORS(KLDivLossOptions)
  KLDivLossOptions(torch::enumtype::kBatchMean) : reduction_(torch::kBatchMean) {}
  TORCH_ARG(reduction_t, reduction) = torch::kMean;
  TORCH_ARG(bool, log_target) = false;
};

struct BCELossOptions {
  typedef loss_reduction_t reduction_t;
  TORCH_ARG(kiln::Tensor, weight) = {};
  TORCH_ARG(reduction_t, reduction) = torch::kMean;
};

struct BCEWithLogitsLossOptions {
  typedef loss_reduction_t reduction_t;
  TORCH_ARG(kiln::Tensor, weight) = {};
  TORCH_ARG(reduction_t, reduction) = torch::kMean;
  TORCH_ARG(kiln::Tensor, pos_weight) = {};
};

struct NLLLossOptions {
  typedef loss_reduction_t reduction_t;
  TORCH_ARG(kiln::Tensor, weight) = {};
  TORCH_ARG(int64_t, ignore_index) = -100;
  TORCH_ARG(reduction_t, reduction) = torch::kMean;
};

struct CrossEntropyLossOptions {
  typedef loss_reduction_t reduction_t;
  TORCH_ARG(kiln::Tensor, weight) = {};
  TORCH_ARG(int64_t, ignore_index) = -100;
  TORCH_ARG(reduction_t, reduction) = torch::kMean;
  TORCH_ARG(double, label_smoothing) = 0.0;
};

class L1LossImpl : public kiln::nn::L1Loss {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<L1LossImpl>(options));
  }
  explicit L1LossImpl(const L1LossOptions& options = {})
      : kiln::nn::L1Loss(enumtype::kiln_name(options.reduction())), options(options) {}
  L1LossOptions options;
};
TORCH_MODULE(L1Loss);

class MSELossImpl : public kiln::nn::MSELoss {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<MSELossImpl>(options));
  }
  explicit MSELossImpl(const MSELossOptions& options = {})
      : kiln::nn::MSELoss(enumtype::kiln_name(options.reduction())), options(options) {}
  MSELossOptions options;
};
TORCH_MODULE(MSELoss);

class SmoothL1LossImpl : public kiln::nn::SmoothL1Loss {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<SmoothL1LossImpl>(options));
  }
  explicit SmoothL1LossImpl(const SmoothL1LossOptions& options = {})
      : kiln::nn::SmoothL1Loss(enumtype::kiln_name(options.reduction()), options.beta()),
        options(options) {}
  SmoothL1LossOptions options;
};
TORCH_MODULE(SmoothL1Loss);

class HuberLossImpl : public kiln::nn::HuberLoss {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<HuberLossImpl>(options));
  }
  explicit HuberLossImpl(const HuberLossOptions& options = {})
      : kiln::nn::HuberLoss(enumtype::kiln_name(options.reduction()), options.delta()),
        options(options) {}
  HuberLossOptions options;
};
TORCH_MODULE(HuberLoss);

class KLDivLossImpl : public kiln::nn::KLDivLoss {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<KLDivLossImpl>(options));
  }
  explicit KLDivLossImpl(const KLDivLossOptions& options = {})
      : kiln::nn::KLDivLoss(enumtype::kiln_name(options.reduction()), options.log_target()),
        options(options) {}
  KLDivLossOptions options;
};
TORCH_MODULE(KLDivLoss);

class BCELossImpl : public kiln::nn::BCELoss {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<BCELossImpl>(options));
  }
  explicit BCELossImpl(const BCELossOptions& options = {})
      : kiln::nn::BCELoss(
            {.weight = options.weight(), .reduction = enumtype::kiln_name(options.reduction())}),
        options(options) {}
  BCELossOptions options;
};
TORCH_MODULE(BCELoss);

class BCEWithLogitsLossImpl : public kiln::nn::BCEWithLogitsLoss {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<BCEWithLogitsLossImpl>(options));
  }
  explicit BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options = {})
      : kiln::nn::BCEWithLogitsLoss({.weight = options.weight(),
                                     .pos_weight = options.pos_weight(),
                                     .reduction = enumtype::kiln_name(options.reduction())}),
        options(options) {}
  BCEWithLogitsLossOptions options;
};
TORCH_MODULE(BCEWithLogitsLoss);

class NLLLossImpl : public kiln::nn::NLLLoss {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<NLLLossImpl>(options));
  }
  explicit NLLLossImpl(const NLLLossOptions& options = {})
      : kiln::nn::NLLLoss({.weight = options.weight(),
                           .ignore_index = options.ignore_index(),
                           .reduction = enumtype::kiln_name(options.reduction())}),
        options(options) {}
  NLLLossOptions options;
};
TORCH_MODULE(NLLLoss);

class CrossEntropyLossImpl : public kiln::nn::CrossEntropyLoss {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<CrossEntropyLossImpl>(options));
  }
  explicit CrossEntropyLossImpl(const CrossEntropyLossOptions& options = {})
      : kiln::nn::CrossEntropyLoss({.weight = options.weight(),
                                    .ignore_index = options.ignore_index(),
                                    .reduction = enumtype::kiln_name(options.reduction()),
                                    .label_smoothing = options.label_smoothing()}),
        options(options) {}
  CrossEntropyLossOptions options;
};
TORCH_MODULE(CrossEntropyLoss);

namespace functional {

using L1LossFuncOptions = L1LossOptions;
using MSELossFuncOptions = MSELossOptions;
using SmoothL1LossFuncOptions = SmoothL1LossOptions;
using HuberLossFuncOptions = HuberLossOptions;
using KLDivFuncOptions = KLDivLossOptions;
using BinaryCrossEntropyFuncOptions = BCELossOptions;
using BinaryCrossEntropyWithLogitsFuncOptions = BCEWithLogitsLossOptions;
using NLLLossFuncOptions = NLLLossOptions;
using CrossEntropyFuncOptions = CrossEntropyLossOptions;

// Kiln's loss functions (kiln/ops/nn.h, kiln/nn/functional.h) with LibTorch's options.
kiln::Tensor l1_loss(const kiln::Tensor& input, const kiln::Tensor& target,
                     const L1LossFuncOptions& options = {});
kiln::Tensor mse_loss(const kiln::Tensor& input, const kiln::Tensor& target,
                      const MSELossFuncOptions& options = {});
// As LibTorch: `beta` is a separate argument, and options.beta() is used when it is left at 1.
kiln::Tensor smooth_l1_loss(const kiln::Tensor& input, const kiln::Tensor& target,
                            const SmoothL1LossFuncOptions& options = {}, double beta = 1.);
kiln::Tensor huber_loss(const kiln::Tensor& input, const kiln::Tensor& target,
                        const HuberLossFuncOptions& options = {});
kiln::Tensor kl_div(const kiln::Tensor& input, const kiln::Tensor& target,
                    const KLDivFuncOptions& options = {});
kiln::Tensor binary_cross_entropy(const kiln::Tensor& input, const kiln::Tensor& target,
                                  const BinaryCrossEntropyFuncOptions& options = {});
kiln::Tensor binary_cross_entropy_with_logits(
    const kiln::Tensor& input, const kiln::Tensor& target,
    const BinaryCrossEntropyWithLogitsFuncOptions& options = {});
kiln::Tensor nll_loss(const kiln::Tensor& input, const kiln::Tensor& target,
                      const NLLLossFuncOptions& options = {});
kiln::Tensor cross_entropy(const kiln::Tensor& input, const kiln::Tensor& target,
                           const CrossEntropyFuncOptions& options = {});

}  // namespace functional

}  // namespace torch::nn
