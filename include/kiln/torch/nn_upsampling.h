// torch::nn::Upsample, PixelShuffle and PixelUnshuffle over Kiln's (kiln/nn/upsampling.h), and
// the functionals interpolate, pixel_shuffle and pixel_unshuffle:
//
//   torch::nn::Upsample up(torch::nn::UpsampleOptions()
//                              .scale_factor(std::vector<double>{2, 2})
//                              .mode(torch::kBilinear)
//                              .align_corners(false));
//   F::interpolate(x,
//   F::InterpolateFuncOptions().size(std::vector<int64_t>{8}).mode(torch::kLinear));
#pragma once

#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "kiln/nn/upsampling.h"
#include "kiln/tensor.h"
#include "kiln/torch/arg.h"
#include "kiln/torch/module_holder.h"
#include "kiln/torch/nn_enum.h"

namespace torch::nn {

struct UpsampleOptions {
  // Exactly one of size and scale_factor, with one value per spatial dim (Kiln also takes one
  // value for all of them).
  TORCH_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  TORCH_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  typedef std::variant<enumtype::kNearest, enumtype::kLinear, enumtype::kBilinear,
                       enumtype::kBicubic, enumtype::kTrilinear>
      mode_t;
  TORCH_ARG(mode_t, mode) = torch::kNearest;
  // Interpolating modes only (false when unset).
  TORCH_ARG(std::optional<bool>, align_corners) = std::nullopt;
};

class UpsampleImpl : public kiln::nn::Upsample {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<UpsampleImpl>(options));
  }
  explicit UpsampleImpl(const UpsampleOptions& options = {});

  // LibTorch's options; hides Kiln's (kiln::nn::Upsample::options), which say the same.
  UpsampleOptions options;
};
TORCH_MODULE(Upsample);

struct PixelShuffleOptions {
  PixelShuffleOptions(int64_t upscale_factor) : upscale_factor_(upscale_factor) {}
  TORCH_ARG(int64_t, upscale_factor);
};

class PixelShuffleImpl : public kiln::nn::PixelShuffle {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<PixelShuffleImpl>(options));
  }
  explicit PixelShuffleImpl(const PixelShuffleOptions& options)
      : kiln::nn::PixelShuffle(options.upscale_factor()), options(options) {}

  PixelShuffleOptions options;
};
TORCH_MODULE(PixelShuffle);

struct PixelUnshuffleOptions {
  PixelUnshuffleOptions(int64_t downscale_factor) : downscale_factor_(downscale_factor) {}
  TORCH_ARG(int64_t, downscale_factor);
};

class PixelUnshuffleImpl : public kiln::nn::PixelUnshuffle {
 public:
  std::shared_ptr<kiln::nn::Module> clone() const override {
    return finish_clone(std::make_shared<PixelUnshuffleImpl>(options));
  }
  explicit PixelUnshuffleImpl(const PixelUnshuffleOptions& options)
      : kiln::nn::PixelUnshuffle(options.downscale_factor()), options(options) {}

  PixelUnshuffleOptions options;
};
TORCH_MODULE(PixelUnshuffle);

namespace functional {

struct InterpolateFuncOptions {
  typedef std::variant<enumtype::kNearest, enumtype::kLinear, enumtype::kBilinear,
                       enumtype::kBicubic, enumtype::kTrilinear, enumtype::kArea,
                       enumtype::kNearestExact>
      mode_t;
  TORCH_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  TORCH_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  TORCH_ARG(mode_t, mode) = torch::kNearest;
  TORCH_ARG(std::optional<bool>, align_corners) = std::nullopt;
  TORCH_ARG(std::optional<bool>, recompute_scale_factor) = std::nullopt;
  // Kiln has no antialiased resampling: true raises NotImplementedError.
  TORCH_ARG(bool, antialias) = false;
};

using PixelShuffleFuncOptions = PixelShuffleOptions;
using PixelUnshuffleFuncOptions = PixelUnshuffleOptions;

// kiln::nn::functional::interpolate with LibTorch's options.
kiln::Tensor interpolate(const kiln::Tensor& input, const InterpolateFuncOptions& options = {});
kiln::Tensor pixel_shuffle(const kiln::Tensor& input, const PixelShuffleFuncOptions& options);
kiln::Tensor pixel_unshuffle(const kiln::Tensor& input, const PixelUnshuffleFuncOptions& options);

}  // namespace functional

}  // namespace torch::nn
