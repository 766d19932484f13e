// torch::nn::functional (programs write `namespace F = torch::nn::functional;`): LibTorch's
// functionals over Kiln's ops. Each family's functionals sit beside its modules (nn_conv.h,
// nn_loss.h, ...); this header adds linear, pad, normalize and flatten and includes them all.
#pragma once

#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "kiln/tensor.h"
#include "kiln/torch/arg.h"
#include "kiln/torch/nn_activation.h"
#include "kiln/torch/nn_conv.h"
#include "kiln/torch/nn_dropout.h"
#include "kiln/torch/nn_embedding.h"
#include "kiln/torch/nn_enum.h"
#include "kiln/torch/nn_loss.h"
#include "kiln/torch/nn_norm.h"
#include "kiln/torch/nn_pooling.h"
#include "kiln/torch/nn_upsampling.h"

namespace torch::nn::functional {

// input @ weight^T + bias (kiln::linear).
kiln::Tensor linear(const kiln::Tensor& input, const kiln::Tensor& weight,
                    const kiln::Tensor& bias = {});

struct PadFuncOptions {
  typedef std::variant<enumtype::kConstant, enumtype::kReflect, enumtype::kReplicate,
                       enumtype::kCircular>
      mode_t;
  PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}
  TORCH_ARG(std::vector<int64_t>, pad);
  TORCH_ARG(mode_t, mode) = torch::kConstant;
  TORCH_ARG(double, value) = 0;
};

// kiln::pad: (left, right) pairs from the last dim; value fills the constant mode.
kiln::Tensor pad(const kiln::Tensor& input, const PadFuncOptions& options);

struct NormalizeFuncOptions {
  TORCH_ARG(double, p) = 2.0;
  TORCH_ARG(int64_t, dim) = 1;
  TORCH_ARG(double, eps) = 1e-12;
  // LibTorch writes the result into `out` when given; Kiln's functional has no out= form, so a
  // given out raises NotImplementedError.
  // An undefined tensor stands for LibTorch's nullopt (an optional<Tensor> trips GCC 12's
  // -Wmaybe-uninitialized under ASan).
  TORCH_ARG(kiln::Tensor, out);
};

// input / max(||input||_p over dim, eps), composed of Kiln's norm, clamp and div.
kiln::Tensor normalize(const kiln::Tensor& input, NormalizeFuncOptions options = {});

// Not in LibTorch's functional namespace (it has torch::flatten); kiln::Tensor::flatten.
kiln::Tensor flatten(const kiln::Tensor& input, int64_t start_dim = 0, int64_t end_dim = -1);

}  // namespace torch::nn::functional
