#include "kiln/nn/upsampling.h"

#include <fmt/ranges.h>

#include "src/nn/naming.h"

namespace kiln::nn {
namespace {

// Python's repr of the value PyTorch keeps: a number when one was given, else a tuple.
template <typename T, typename F>
std::string py_value(const std::vector<T>& v, F&& item) {
  if (v.size() == 1) return item(v[0]);
  std::vector<std::string> items;
  for (const T& x : v) items.push_back(item(x));
  return fmt::format("({})", fmt::join(items, ", "));
}

const UpsampleOptions& checked(const UpsampleOptions& o) {
  static constexpr const char* kModes[] = {"nearest", "nearest-exact", "linear", "bilinear",
                                           "bicubic", "trilinear",     "area"};
  bool known = false;
  for (const char* m : kModes) known = known || o.mode == m;
  KILN_CHECK(known, ValueError,
             "Upsample: unknown mode '{}'; use nearest, nearest-exact, linear, bilinear, bicubic, "
             "trilinear or area",
             o.mode);
  const bool interpolating = o.mode != "nearest" && o.mode != "nearest-exact" && o.mode != "area";
  KILN_CHECK(interpolating || !o.align_corners, ValueError,
             "Upsample: align_corners can only be set with the interpolating modes linear, "
             "bilinear, bicubic and trilinear, not mode '{}'",
             o.mode);
  return o;
}

}  // namespace

// ---- Upsample ----

Upsample::Upsample(UpsampleOptions options) : Module("Upsample"), options(checked(options)) {}

Tensor Upsample::forward(const Tensor& input) {
  return with_context(*this, [&] { return functional::interpolate(input, options); });
}

std::string Upsample::extra_repr() const {
  if (options.size.empty() && options.scale_factor.empty())
    return fmt::format("size=None, mode='{}'", options.mode);
  std::string info =
      options.scale_factor.empty()
          ? "size=" + py_value(options.size, [](int64_t s) { return std::to_string(s); })
          : "scale_factor=" + py_value(options.scale_factor, py_float);
  return info + fmt::format(", mode='{}'", options.mode);
}

// ---- PixelShuffle / PixelUnshuffle ----

PixelShuffle::PixelShuffle(int64_t upscale_factor)
    : Module("PixelShuffle"),
      upscale_factor(check_positive("PixelShuffle", "upscale_factor", upscale_factor)) {}

Tensor PixelShuffle::forward(const Tensor& input) {
  return with_context(*this, [&] { return pixel_shuffle(input, upscale_factor); });
}

std::string PixelShuffle::extra_repr() const {
  return fmt::format("upscale_factor={}", upscale_factor);
}

PixelUnshuffle::PixelUnshuffle(int64_t downscale_factor)
    : Module("PixelUnshuffle"),
      downscale_factor(check_positive("PixelUnshuffle", "downscale_factor", downscale_factor)) {}

Tensor PixelUnshuffle::forward(const Tensor& input) {
  return with_context(*this, [&] { return pixel_unshuffle(input, downscale_factor); });
}

std::string PixelUnshuffle::extra_repr() const {
  return fmt::format("downscale_factor={}", downscale_factor);
}

}  // namespace kiln::nn
