// Upsample, PixelShuffle and PixelUnshuffle, as torch.nn.Upsample / PixelShuffle / PixelUnshuffle.
// The functions are nn::functional::interpolate and the ops pixel_shuffle / pixel_unshuffle.
#pragma once

#include "kiln/nn/functional.h"
#include "kiln/nn/module.h"

namespace kiln::nn {

// Upsample's settings are interpolate's: exactly one of size and scale_factor, the mode, and
// align_corners / recompute_scale_factor.
using UpsampleOptions = functional::InterpolateOptions;

// Resizes the spatial dims of (N, C, *spatial): Upsample({.scale_factor = {2}, .mode =
// "bilinear"}). The mode, and align_corners only for an interpolating mode, are checked when it is
// built; size or scale_factor (exactly one) and the input when it runs, as PyTorch.
class Upsample : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<Upsample>(options));
  }
  explicit Upsample(UpsampleOptions options);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const UpsampleOptions options;
};

// (*, C r^2, H, W) -> (*, C, H r, W r).
class PixelShuffle : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<PixelShuffle>(upscale_factor));
  }
  explicit PixelShuffle(int64_t upscale_factor);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const int64_t upscale_factor;
};

// (*, C, H r, W r) -> (*, C r^2, H, W), PixelShuffle's inverse.
class PixelUnshuffle : public Module {
 public:
  std::shared_ptr<Module> clone() const override {
    return finish_clone(std::make_shared<PixelUnshuffle>(downscale_factor));
  }
  explicit PixelUnshuffle(int64_t downscale_factor);
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  const int64_t downscale_factor;
};

}  // namespace kiln::nn
