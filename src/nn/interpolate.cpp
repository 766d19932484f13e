// nn::functional::interpolate: torch.nn.functional.interpolate's argument handling (the mode, the
// output size from a scale factor, which scale reaches the op) over the upsample_* ops.
#include <fmt/ranges.h>
#include <cmath>

#include "kiln/nn/functional.h"
#include "src/core/shape.h"

namespace kiln::nn::functional {
namespace {

enum class Mode { Nearest, NearestExact, Linear, Bilinear, Bicubic, Trilinear, Area };

Mode parse_mode(const std::string& mode) {
  if (mode == "nearest") return Mode::Nearest;
  if (mode == "nearest-exact") return Mode::NearestExact;
  if (mode == "linear") return Mode::Linear;
  if (mode == "bilinear") return Mode::Bilinear;
  if (mode == "bicubic") return Mode::Bicubic;
  if (mode == "trilinear") return Mode::Trilinear;
  if (mode == "area") return Mode::Area;
  throw ValueError(fmt::format(
      "interpolate: unknown mode '{}'; use nearest, nearest-exact, linear, bilinear, bicubic, "
      "trilinear or area",
      mode));
}

// The input rank an interpolating mode needs (0: any of 3, 4, 5).
int64_t rank_of(Mode m) {
  switch (m) {
    case Mode::Linear:
      return 3;
    case Mode::Bilinear:
    case Mode::Bicubic:
      return 4;
    case Mode::Trilinear:
      return 5;
    default:
      return 0;
  }
}

// One value for every spatial dim, or one per dim.
template <typename T>
std::vector<T> per_dim(const std::vector<T>& v, int64_t dims, const char* what,
                       const Tensor& input) {
  KILN_CHECK(v.size() == 1 || static_cast<int64_t>(v.size()) == dims, ValueError,
             "interpolate: {} must hold one value or one per spatial dim ({}), got [{}] for an "
             "input of shape {}",
             what, dims, fmt::join(v, ", "), shape_str(input.sym_sizes()));
  return v.size() == 1 ? std::vector<T>(static_cast<size_t>(dims), v[0]) : v;
}

using Scales = std::vector<std::optional<double>>;

Tensor upsample(Mode mode, const Tensor& x, const std::vector<int64_t>& out, const Scales& s,
                bool align_corners) {
  const int64_t dims = x.dim() - 2;
  switch (mode) {
    case Mode::Nearest:
      if (dims == 1) return upsample_nearest1d(x, out, s[0]);
      if (dims == 2) return upsample_nearest2d(x, out, s[0], s[1]);
      return upsample_nearest3d(x, out, s[0], s[1], s[2]);
    case Mode::NearestExact:
      if (dims == 1) return _upsample_nearest_exact1d(x, out, s[0]);
      if (dims == 2) return _upsample_nearest_exact2d(x, out, s[0], s[1]);
      return _upsample_nearest_exact3d(x, out, s[0], s[1], s[2]);
    case Mode::Linear:
      return upsample_linear1d(x, out, align_corners, s[0]);
    case Mode::Bilinear:
      return upsample_bilinear2d(x, out, align_corners, s[0], s[1]);
    case Mode::Bicubic:
      return upsample_bicubic2d(x, out, align_corners, s[0], s[1]);
    case Mode::Trilinear:
      return upsample_trilinear3d(x, out, align_corners, s[0], s[1], s[2]);
    case Mode::Area:  // as PyTorch: adaptive average pooling to the output size
      if (dims == 1) return adaptive_avg_pool1d(x, out);
      if (dims == 2) return adaptive_avg_pool2d(x, out);
      return adaptive_avg_pool3d(x, out);
  }
  return {};
}

}  // namespace

Tensor interpolate(const Tensor& input, const InterpolateOptions& o) {
  const Mode mode = parse_mode(o.mode);
  const bool interpolating = rank_of(mode) != 0;
  KILN_CHECK(interpolating || !o.align_corners, ValueError,
             "interpolate: align_corners can only be set with the interpolating modes linear, "
             "bilinear, bicubic and trilinear, not mode '{}'",
             o.mode);
  KILN_CHECK(input.dim() >= 3 && input.dim() <= 5, ShapeError,
             "interpolate: expected a 3-D, 4-D or 5-D input (N, C, *spatial), got shape {} (mode "
             "'{}')",
             shape_str(input.sym_sizes()), o.mode);
  KILN_CHECK(!interpolating || input.dim() == rank_of(mode), ShapeError,
             "interpolate: mode '{}' needs a {}-D input (N, C and {} spatial dim{}), got shape {}",
             o.mode, rank_of(mode), rank_of(mode) - 2, rank_of(mode) == 3 ? "" : "s",
             shape_str(input.sym_sizes()));
  KILN_CHECK(o.size.empty() != o.scale_factor.empty(), ValueError,
             "interpolate: give exactly one of size and scale_factor (got {})",
             o.size.empty() ? "neither" : "both");
  KILN_CHECK(o.size.empty() || !o.recompute_scale_factor.value_or(false), ValueError,
             "interpolate: recompute_scale_factor is not meaningful with an explicit size");
  const int64_t dims = input.dim() - 2;
  std::vector<int64_t> out;
  Scales scales(static_cast<size_t>(dims));
  if (!o.size.empty()) {
    out = per_dim(o.size, dims, "size", input);
  } else {
    const std::vector<double> factors = per_dim(o.scale_factor, dims, "scale_factor", input);
    // "area" always takes its windows from the output size, as PyTorch.
    const bool recompute = o.recompute_scale_factor.value_or(false) || mode == Mode::Area;
    for (int64_t d = 0; d < dims; ++d) {
      // The spatial size as an int: a symbolic one is specialized (as the op would).
      const auto in = static_cast<double>(static_cast<int64_t>(input.size(2 + d)));
      const double size = std::floor(in * factors[static_cast<size_t>(d)]);
      KILN_CHECK(size >= 1, ValueError,
                 "interpolate: scale_factor [{}] gives an output size of {} for dim {} of an "
                 "input of shape {}; output sizes must be positive",
                 fmt::join(o.scale_factor, ", "), size, 2 + d, shape_str(input.sym_sizes()));
      out.push_back(static_cast<int64_t>(size));
      if (!recompute) scales[static_cast<size_t>(d)] = factors[static_cast<size_t>(d)];
    }
  }
  return upsample(mode, input, out, scales, o.align_corners.value_or(false));
}

}  // namespace kiln::nn::functional
