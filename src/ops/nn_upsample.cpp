// Upsampling ops, as ATen's: upsample_nearest{1,2,3}d, _upsample_nearest_exact{1,2,3}d,
// upsample_linear1d, upsample_bilinear2d, upsample_bicubic2d, upsample_trilinear3d. All are
// composites of index_select, mul and add (Note [Upsampling coordinates]), so autograd and
// kiln::compile see only those. kiln::nn::functional::interpolate picks the op and computes the
// output size from a scale factor.
#include <algorithm>
#include <cmath>

#include "kiln/half.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/nn.h"
#include "src/ops/nn_common.h"

namespace kiln {
namespace {

// Note [Upsampling coordinates]
// Output position o of a spatial dim (input size `in`, output size `out`) reads input positions
// by PyTorch's rules (ATen's UpSample.h), so values match PyTorch's CPU kernels:
// - scale: (in - 1) / (out - 1) with align_corners (0 when out == 1); otherwise 1 / scale_factor
//   when the caller passed a positive scale (interpolate's scale_factor, not recomputed), else
//   in / out.
// - nearest: min(floor(o * scale), in - 1), the scale in float32 even for float64 inputs (out ==
//   in and out == 2 in are exact shortcuts); nearest-exact: min(floor((o + 0.5) * scale), in - 1).
// - linear: src = scale * o (align_corners) or max(scale * (o + 0.5) - 0.5, 0); taps i0 =
//   min(floor(src), in - 1) and i1 = min(i0 + 1, in - 1), weights 1 - l and l with l = src - i0
//   clamped to [0, 1]. out == in takes taps o and o with weights 1 and 0, as PyTorch does, so an
//   inf input there gives NaN there too.
// - cubic: src as linear without the clamp at 0; four taps floor(src) - 1 .. floor(src) + 2,
//   each clamped into [0, in - 1] (the border value repeats), weighted by Keys' cubic convolution
//   (A = -0.75) at distances t + 1, t, 1 - t, 2 - t, t = src - floor(src).
// Coordinates and weights are computed in PyTorch's op-math type (double for float64, float
// otherwise), and the weights rounded to the input's dtype, as PyTorch stores them.
//
// Interpolation is separable: the op resamples one spatial dim at a time, the last first (the
// nesting order of PyTorch's kernel, so float sums round alike): for each tap, index_select of
// its input positions times its weights (constant tensors), summed in tap order. Nearest modes are
// one index_select per dim. The positions and weights depend on the spatial sizes, so those must
// be concrete: under kiln::compile a symbolic spatial input size or output size is specialized
// (guarded; another size traces again); the batch and channel dims stay symbolic.

enum class Mode { Nearest, NearestExact, Linear, Cubic };

constexpr bool interpolating(Mode m) { return m == Mode::Linear || m == Mode::Cubic; }

// Input positions and weights of one spatial dim: out[o] = sum_k in[index[k][o]] * weight[k][o].
struct Taps {
  std::vector<std::vector<int64_t>> index;
  std::vector<std::vector<double>> weight;  // empty for the nearest modes
};

template <typename T>
T source_scale(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  if (align_corners) return out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
  if (scale && *scale > 0) return static_cast<T>(1.0 / *scale);
  return static_cast<T>(in) / static_cast<T>(out);
}

template <typename T>
T source_position(T scale, int64_t o, bool align_corners, bool cubic) {
  if (align_corners) return scale * static_cast<T>(o);
  const T src = scale * (static_cast<T>(o) + T(0.5)) - T(0.5);
  return !cubic && src < T(0) ? T(0) : src;
}

// floor as PyTorch takes it (floorf, also of a double position).
template <typename T>
int64_t floor_index(T src) {
  return static_cast<int64_t>(std::floor(static_cast<float>(src)));
}

// A weight as the input's dtype stores it.
double stored(double w, ScalarType dtype) {
  if (dtype == kFloat16) return static_cast<float>(Half(static_cast<float>(w)));
  if (dtype == kBFloat16) return static_cast<float>(BFloat16(static_cast<float>(w)));
  if (dtype == kFloat32) return static_cast<float>(w);
  return w;
}

Taps nearest_taps(int64_t in, int64_t out, std::optional<double> scale, bool exact) {
  Taps t{.index = {std::vector<int64_t>(static_cast<size_t>(out))}};
  const float s = source_scale<float>(in, out, false, scale);
  for (int64_t o = 0; o < out; ++o) {
    int64_t i = 0;
    if (!exact && out == in) {
      i = o;
    } else if (!exact && out == 2 * in) {
      i = o >> 1;
    } else {
      const float pos = exact ? static_cast<float>((static_cast<double>(o) + 0.5) * s)
                              : static_cast<float>(o) * s;
      i = std::min(static_cast<int64_t>(std::floor(pos)), in - 1);
    }
    t.index[0][static_cast<size_t>(o)] = i;
  }
  return t;
}

template <typename T>
Taps linear_taps(int64_t in, int64_t out, bool align_corners, std::optional<double> scale,
                 ScalarType dtype) {
  const auto n = static_cast<size_t>(out);
  Taps t{.index = {std::vector<int64_t>(n), std::vector<int64_t>(n)},
         .weight = {std::vector<double>(n), std::vector<double>(n)}};
  const T s = source_scale<T>(in, out, align_corners, scale);
  for (size_t o = 0; o < n; ++o) {
    int64_t i0 = static_cast<int64_t>(o), i1 = i0;
    double l1 = 0;
    if (out != in) {
      const T src = source_position<T>(s, static_cast<int64_t>(o), align_corners, false);
      i0 = std::min(floor_index(src), in - 1);
      i1 = i0 + (i0 < in - 1 ? 1 : 0);
      l1 = stored(static_cast<double>(std::clamp(src - static_cast<T>(i0), T(0), T(1))), dtype);
    }
    t.index[0][o] = i0;
    t.index[1][o] = i1;
    t.weight[0][o] = stored(static_cast<double>(T(1) - static_cast<T>(l1)), dtype);
    t.weight[1][o] = l1;
  }
  return t;
}

// Keys' cubic convolution kernel for |x| <= 1 and 1 < |x| < 2.
template <typename T>
T cubic_near(T x, T A) {
  return ((A + 2) * x - (A + 3)) * x * x + 1;
}
template <typename T>
T cubic_far(T x, T A) {
  return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}

template <typename T>
Taps cubic_taps(int64_t in, int64_t out, bool align_corners, std::optional<double> scale,
                ScalarType dtype) {
  const auto n = static_cast<size_t>(out);
  Taps t{.index = std::vector<std::vector<int64_t>>(4, std::vector<int64_t>(n)),
         .weight = std::vector<std::vector<double>>(4, std::vector<double>(n))};
  const T s = source_scale<T>(in, out, align_corners, scale);
  const T A = T(-0.75);
  for (size_t o = 0; o < n; ++o) {
    const T src = source_position<T>(s, static_cast<int64_t>(o), align_corners, true);
    const int64_t i = floor_index(src);
    const T d = src - static_cast<T>(i);
    const T w[4] = {cubic_far<T>(d + T(1), A), cubic_near<T>(d, A), cubic_near<T>(T(1) - d, A),
                    cubic_far<T>(T(2) - d, A)};
    for (size_t k = 0; k < 4; ++k) {
      t.index[k][o] = std::clamp<int64_t>(i - 1 + static_cast<int64_t>(k), 0, in - 1);
      t.weight[k][o] = stored(static_cast<double>(w[k]), dtype);
    }
  }
  return t;
}

Taps taps_for(Mode mode, int64_t in, int64_t out, bool align_corners, std::optional<double> scale,
              ScalarType dtype) {
  switch (mode) {
    case Mode::Nearest:
      return nearest_taps(in, out, scale, false);
    case Mode::NearestExact:
      return nearest_taps(in, out, scale, true);
    case Mode::Linear:
      return dtype == kFloat64 ? linear_taps<double>(in, out, align_corners, scale, dtype)
                               : linear_taps<float>(in, out, align_corners, scale, dtype);
    case Mode::Cubic:
      return dtype == kFloat64 ? cubic_taps<double>(in, out, align_corners, scale, dtype)
                               : cubic_taps<float>(in, out, align_corners, scale, dtype);
  }
  return {};
}

// The weights of one tap as a constant of x's dtype shaped to broadcast along `dim`.
Tensor weight_tensor(const std::vector<double>& w, const Tensor& x, int64_t dim) {
  std::vector<int64_t> shape(static_cast<size_t>(x.dim() - dim), 1);
  shape[0] = static_cast<int64_t>(w.size());
  if (x.dtype() == kFloat64) return from_vector(w, shape);
  return from_vector(std::vector<float>(w.begin(), w.end()), shape);
}

Tensor resample_dim(const Tensor& x, int64_t dim, const Taps& taps) {
  if (taps.weight.empty()) return x.index_select(dim, from_vector(taps.index[0]));
  Tensor sum;
  for (size_t k = 0; k < taps.index.size(); ++k) {
    Tensor term =
        x.index_select(dim, from_vector(taps.index[k])) * weight_tensor(taps.weight[k], x, dim);
    sum = k == 0 ? term : sum + term;
  }
  return sum;
}

constexpr DTypeSet kNearestDTypes = dtypes::kFloating | DTypeSet{kUInt8};

// Arguments: (self, output_size, [align_corners,] scales...) with one scale per spatial dim.
template <Mode M, int D>
void composite_upsample(OpCall& call) {
  const Tensor& input = call.tensor(0);
  const SymIntArrayRef sizes = input.sym_sizes();
  const DTypeSet allowed = interpolating(M) ? dtypes::kFloating : kNearestDTypes;
  KILN_CHECK(allowed.contains(input.dtype()), DTypeError,
             "{}: dtype {} is not supported (input of shape {}); use a floating input{}",
             call.name(), dtype_name(input.dtype()), shape_str(sizes),
             interpolating(M) ? "" : " or uint8");
  KILN_CHECK(input.dim() == D + 2, ShapeError,
             "{}: expected a {}-D input (N, C and {} spatial dim{}), got shape {}", call.name(),
             D + 2, D, D == 1 ? "" : "s", shape_str(sizes));
  const IntArrayRef out_sizes = call.ints(1);  // specializes symbolic sizes (see the Note)
  KILN_CHECK(out_sizes.size() == static_cast<size_t>(D), ValueError,
             "{}: output_size must hold {} size{} (one per spatial dim), got {}", call.name(), D,
             D == 1 ? "" : "s", shape_str(out_sizes));
  bool empty_non_batch = sizes[1] == 0;
  for (int64_t d = 2; d < input.dim(); ++d) empty_non_batch = empty_non_batch || sizes[d] == 0;
  KILN_CHECK(!empty_non_batch, ShapeError,
             "{}: expected an input with nonzero channel and spatial sizes (only the batch may be "
             "empty), got shape {}",
             call.name(), shape_str(sizes));
  for (int64_t s : out_sizes)
    KILN_CHECK(s > 0, ValueError,
               "{}: output sizes must be positive, got output_size {} for an input of shape {}",
               call.name(), shape_str(out_sizes), shape_str(sizes));
  const bool align_corners = interpolating(M) && call.bool_arg(2);
  const size_t first_scale = interpolating(M) ? 3 : 2;
  const ScalarType dtype = input.dtype();
  const bool widen = interpolating(M) && (dtype == kFloat16 || dtype == kBFloat16);
  Tensor x = widen ? input.to(kFloat32) : input;
  for (int64_t d = D - 1; d >= 0; --d) {
    const IValue& scale = call.arg(first_scale + static_cast<size_t>(d));
    const int64_t in = input.size(2 + d);  // specialized (see the Note)
    const Taps taps =
        taps_for(M, in, out_sizes[static_cast<size_t>(d)], align_corners,
                 scale.is_none() ? std::nullopt : std::optional(scale.to_double()), dtype);
    x = resample_dim(x, 2 + d, taps);
  }
  call.set_output(0, widen ? x.to(dtype) : x);
}

std::string nearest_schema(const char* name, int dims) {
  static const char* scales[3][3] = {
      {"scales"}, {"scales_h", "scales_w"}, {"scales_d", "scales_h", "scales_w"}};
  std::string s = fmt::format("{}(Tensor self, SymInt[] output_size", name);
  for (int i = 0; i < dims; ++i) s += fmt::format(", float? {}=None", scales[dims - 1][i]);
  return s + ") -> Tensor";
}

std::string interpolating_schema(const char* name, int dims) {
  std::string s = nearest_schema(name, dims);
  const size_t comma = s.find(", float?");
  return s.insert(comma, ", bool align_corners");
}

IValue opt(std::optional<double> v) { return v ? IValue(*v) : IValue(); }

}  // namespace

void register_nn_upsample_ops(OpRegistry& r) {
  auto add = [&](const char* name, std::string schema, CompositeFn fn, DTypeSet dtypes) {
    r.add({.name = name,
           .schema = std::move(schema),
           .family = "nn",
           .composite = fn,
           .dtypes = dtypes});
  };
  add("upsample_nearest1d", nearest_schema("upsample_nearest1d", 1),
      composite_upsample<Mode::Nearest, 1>, kNearestDTypes);
  add("upsample_nearest2d", nearest_schema("upsample_nearest2d", 2),
      composite_upsample<Mode::Nearest, 2>, kNearestDTypes);
  add("upsample_nearest3d", nearest_schema("upsample_nearest3d", 3),
      composite_upsample<Mode::Nearest, 3>, kNearestDTypes);
  add("_upsample_nearest_exact1d", nearest_schema("_upsample_nearest_exact1d", 1),
      composite_upsample<Mode::NearestExact, 1>, kNearestDTypes);
  add("_upsample_nearest_exact2d", nearest_schema("_upsample_nearest_exact2d", 2),
      composite_upsample<Mode::NearestExact, 2>, kNearestDTypes);
  add("_upsample_nearest_exact3d", nearest_schema("_upsample_nearest_exact3d", 3),
      composite_upsample<Mode::NearestExact, 3>, kNearestDTypes);
  add("upsample_linear1d", interpolating_schema("upsample_linear1d", 1),
      composite_upsample<Mode::Linear, 1>, dtypes::kFloating);
  add("upsample_bilinear2d", interpolating_schema("upsample_bilinear2d", 2),
      composite_upsample<Mode::Linear, 2>, dtypes::kFloating);
  add("upsample_trilinear3d", interpolating_schema("upsample_trilinear3d", 3),
      composite_upsample<Mode::Linear, 3>, dtypes::kFloating);
  add("upsample_bicubic2d", interpolating_schema("upsample_bicubic2d", 2),
      composite_upsample<Mode::Cubic, 2>, dtypes::kFloating);
}

Tensor upsample_nearest1d(const Tensor& input, SymIntArrayRef output_size,
                          std::optional<double> scales) {
  static const OpId id = op_id("upsample_nearest1d");
  return dispatch::call_tensor(id, input, output_size, opt(scales));
}
Tensor upsample_nearest2d(const Tensor& input, SymIntArrayRef output_size,
                          std::optional<double> scales_h, std::optional<double> scales_w) {
  static const OpId id = op_id("upsample_nearest2d");
  return dispatch::call_tensor(id, input, output_size, opt(scales_h), opt(scales_w));
}
Tensor upsample_nearest3d(const Tensor& input, SymIntArrayRef output_size,
                          std::optional<double> scales_d, std::optional<double> scales_h,
                          std::optional<double> scales_w) {
  static const OpId id = op_id("upsample_nearest3d");
  return dispatch::call_tensor(id, input, output_size, opt(scales_d), opt(scales_h), opt(scales_w));
}
Tensor _upsample_nearest_exact1d(const Tensor& input, SymIntArrayRef output_size,
                                 std::optional<double> scales) {
  static const OpId id = op_id("_upsample_nearest_exact1d");
  return dispatch::call_tensor(id, input, output_size, opt(scales));
}
Tensor _upsample_nearest_exact2d(const Tensor& input, SymIntArrayRef output_size,
                                 std::optional<double> scales_h, std::optional<double> scales_w) {
  static const OpId id = op_id("_upsample_nearest_exact2d");
  return dispatch::call_tensor(id, input, output_size, opt(scales_h), opt(scales_w));
}
Tensor _upsample_nearest_exact3d(const Tensor& input, SymIntArrayRef output_size,
                                 std::optional<double> scales_d, std::optional<double> scales_h,
                                 std::optional<double> scales_w) {
  static const OpId id = op_id("_upsample_nearest_exact3d");
  return dispatch::call_tensor(id, input, output_size, opt(scales_d), opt(scales_h), opt(scales_w));
}
Tensor upsample_linear1d(const Tensor& input, SymIntArrayRef output_size, bool align_corners,
                         std::optional<double> scales) {
  static const OpId id = op_id("upsample_linear1d");
  return dispatch::call_tensor(id, input, output_size, align_corners, opt(scales));
}
Tensor upsample_bilinear2d(const Tensor& input, SymIntArrayRef output_size, bool align_corners,
                           std::optional<double> scales_h, std::optional<double> scales_w) {
  static const OpId id = op_id("upsample_bilinear2d");
  return dispatch::call_tensor(id, input, output_size, align_corners, opt(scales_h), opt(scales_w));
}
Tensor upsample_bicubic2d(const Tensor& input, SymIntArrayRef output_size, bool align_corners,
                          std::optional<double> scales_h, std::optional<double> scales_w) {
  static const OpId id = op_id("upsample_bicubic2d");
  return dispatch::call_tensor(id, input, output_size, align_corners, opt(scales_h), opt(scales_w));
}
Tensor upsample_trilinear3d(const Tensor& input, SymIntArrayRef output_size, bool align_corners,
                            std::optional<double> scales_d, std::optional<double> scales_h,
                            std::optional<double> scales_w) {
  static const OpId id = op_id("upsample_trilinear3d");
  return dispatch::call_tensor(id, input, output_size, align_corners, opt(scales_d), opt(scales_h),
                               opt(scales_w));
}

}  // namespace kiln
