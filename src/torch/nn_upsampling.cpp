// torch::nn::Upsample and the upsampling functionals: LibTorch's options as Kiln's.
#include "kiln/torch/nn_upsampling.h"

#include "kiln/error.h"
#include "kiln/nn/functional.h"

namespace torch::nn {
namespace {

template <typename Mode>
kiln::nn::functional::InterpolateOptions kiln_options(
    const std::optional<std::vector<int64_t>>& size,
    const std::optional<std::vector<double>>& scale_factor, const Mode& mode,
    std::optional<bool> align_corners, std::optional<bool> recompute_scale_factor) {
  return {.size = size.value_or(std::vector<int64_t>{}),
          .scale_factor = scale_factor.value_or(std::vector<double>{}),
          .mode = enumtype::kiln_name(mode),
          .align_corners = align_corners,
          .recompute_scale_factor = recompute_scale_factor};
}

}  // namespace

UpsampleImpl::UpsampleImpl(const UpsampleOptions& options)
    : kiln::nn::Upsample(kiln_options(options.size(), options.scale_factor(), options.mode(),
                                      options.align_corners(), std::nullopt)),
      options(options) {}

namespace functional {

using kiln::NotImplementedError;

kiln::Tensor interpolate(const kiln::Tensor& input, const InterpolateFuncOptions& o) {
  KILN_CHECK(!o.antialias(), NotImplementedError,
             "interpolate: antialias=true is not supported by Kiln's interpolate");
  return kiln::nn::functional::interpolate(
      input, kiln_options(o.size(), o.scale_factor(), o.mode(), o.align_corners(),
                          o.recompute_scale_factor()));
}

kiln::Tensor pixel_shuffle(const kiln::Tensor& input, const PixelShuffleFuncOptions& o) {
  return kiln::pixel_shuffle(input, o.upscale_factor());
}

kiln::Tensor pixel_unshuffle(const kiln::Tensor& input, const PixelUnshuffleFuncOptions& o) {
  return kiln::pixel_unshuffle(input, o.downscale_factor());
}

}  // namespace functional

}  // namespace torch::nn
