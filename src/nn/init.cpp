#include "kiln/nn/init.h"

#include <cmath>
#include <numbers>

#include "kiln/autograd.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/random.h"
#include "src/core/shape.h"

namespace kiln::nn::init {
namespace {

void check_target(std::string_view fn, const Tensor& tensor) {
  KILN_CHECK(tensor.defined(), ValueError, "init.{}: the tensor is undefined", fn);
  KILN_CHECK(tensor.is_floating_point(), DTypeError,
             "init.{}: needs a floating tensor, got dtype {} (shape {})", fn,
             dtype_name(tensor.dtype()), shape_str(tensor.sizes()));
}

// Random values are drawn in float32 (float64 for float64 tensors) and then converted, so that
// float16/bfloat16 tensors get correctly rounded samples.
ScalarType draw_dtype(const Tensor& t) { return t.dtype() == kFloat64 ? kFloat64 : kFloat32; }

Tensor draw_uniform(const Tensor& like, Generator* gen) {
  return gen ? rand(like.sizes(), *gen, draw_dtype(like)) : rand(like.sizes(), draw_dtype(like));
}

Tensor draw_normal(const Tensor& like, Generator* gen) {
  return gen ? randn(like.sizes(), *gen, draw_dtype(like)) : randn(like.sizes(), draw_dtype(like));
}

int64_t fan_for_mode(std::string_view fn, const Tensor& tensor, std::string_view mode) {
  KILN_CHECK(mode == "fan_in" || mode == "fan_out", ValueError,
             "init.{}: mode must be \"fan_in\" or \"fan_out\", got \"{}\"", fn, mode);
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  return mode == "fan_in" ? fan_in : fan_out;
}

}  // namespace

double calculate_gain(std::string_view nonlinearity, std::optional<double> param) {
  static constexpr std::string_view kUnitGain[] = {
      "linear",  "identity",         "conv1d",           "conv2d",          "conv3d",
      "sigmoid", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"};
  for (std::string_view name : kUnitGain)
    if (nonlinearity == name) return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") {
    const double slope = param.value_or(0.01);
    return std::sqrt(2.0 / (1.0 + slope * slope));
  }
  if (nonlinearity == "selu") return 3.0 / 4.0;
  throw ValueError(fmt::format(
      "init.calculate_gain: unsupported nonlinearity \"{}\"; use linear, identity, conv1d, "
      "conv2d, conv3d, conv_transpose1d/2d/3d, sigmoid, tanh, relu, leaky_relu or selu",
      nonlinearity));
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
  KILN_CHECK(tensor.dim() >= 2, ValueError,
             "init: fan in and fan out can not be computed for a tensor with fewer than 2 dims "
             "(shape {})",
             shape_str(tensor.sizes()));
  int64_t receptive_field = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d) receptive_field *= tensor.size(d);
  return {tensor.size(1) * receptive_field, tensor.size(0) * receptive_field};
}

const Tensor& uniform_(const Tensor& tensor, double a, double b, Generator* gen) {
  check_target("uniform_", tensor);
  KILN_CHECK(a <= b, ValueError, "init.uniform_: needs a <= b, got a = {}, b = {}", a, b);
  NoGradGuard no_grad;
  return tensor.copy_(draw_uniform(tensor, gen) * (b - a) + a);
}

const Tensor& normal_(const Tensor& tensor, double mean, double std, Generator* gen) {
  check_target("normal_", tensor);
  KILN_CHECK(std >= 0.0, ValueError, "init.normal_: std must be >= 0, got {}", std);
  NoGradGuard no_grad;
  return tensor.copy_(draw_normal(tensor, gen) * std + mean);
}

const Tensor& trunc_normal_(const Tensor& tensor, double mean, double std, double a, double b,
                            Generator* gen) {
  check_target("trunc_normal_", tensor);
  KILN_CHECK(std > 0.0 && a < b, ValueError,
             "init.trunc_normal_: needs std > 0 and a < b, got std = {}, a = {}, b = {}", std, a,
             b);
  // Inverse-CDF sampling: uniform between the CDF values of a and b, mapped back through the
  // normal's inverse CDF, sqrt(2) erfinv(2u - 1).
  auto normal_cdf = [](double x) { return (1.0 + std::erf(x / std::numbers::sqrt2)) / 2.0; };
  const double lo = 2.0 * normal_cdf((a - mean) / std) - 1.0;
  const double hi = 2.0 * normal_cdf((b - mean) / std) - 1.0;
  NoGradGuard no_grad;
  Tensor u = draw_uniform(tensor, gen) * (hi - lo) + lo;
  return tensor.copy_((u.erfinv() * (std * std::numbers::sqrt2) + mean).clamp(a, b));
}

const Tensor& constant_(const Tensor& tensor, double value) {
  check_target("constant_", tensor);
  NoGradGuard no_grad;
  return tensor.fill_(value);
}

const Tensor& zeros_(const Tensor& tensor) { return constant_(tensor, 0.0); }
const Tensor& ones_(const Tensor& tensor) { return constant_(tensor, 1.0); }

const Tensor& eye_(const Tensor& tensor) {
  check_target("eye_", tensor);
  KILN_CHECK(tensor.dim() == 2, ValueError, "init.eye_: needs a 2-D tensor, got shape {}",
             shape_str(tensor.sizes()));
  NoGradGuard no_grad;
  return tensor.copy_(eye(tensor.size(0), tensor.size(1), tensor.dtype()));
}

const Tensor& xavier_uniform_(const Tensor& tensor, double gain, Generator* gen) {
  check_target("xavier_uniform_", tensor);
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  if (tensor.numel() == 0) return tensor;
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(tensor, -bound, bound, gen);
}

const Tensor& xavier_normal_(const Tensor& tensor, double gain, Generator* gen) {
  check_target("xavier_normal_", tensor);
  const auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  if (tensor.numel() == 0) return tensor;
  return normal_(tensor, 0.0, gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)), gen);
}

const Tensor& kaiming_uniform_(const Tensor& tensor, double a, std::string_view mode,
                               std::string_view nonlinearity, Generator* gen) {
  check_target("kaiming_uniform_", tensor);
  const int64_t fan = fan_for_mode("kaiming_uniform_", tensor, mode);
  const double gain = calculate_gain(nonlinearity, a);
  if (tensor.numel() == 0) return tensor;  // PyTorch: initializing zero-element tensors is a no-op
  const double bound = std::sqrt(3.0) * gain / std::sqrt(static_cast<double>(fan));
  return uniform_(tensor, -bound, bound, gen);
}

const Tensor& kaiming_normal_(const Tensor& tensor, double a, std::string_view mode,
                              std::string_view nonlinearity, Generator* gen) {
  check_target("kaiming_normal_", tensor);
  const int64_t fan = fan_for_mode("kaiming_normal_", tensor, mode);
  const double gain = calculate_gain(nonlinearity, a);
  if (tensor.numel() == 0) return tensor;
  return normal_(tensor, 0.0, gain / std::sqrt(static_cast<double>(fan)), gen);
}

}  // namespace kiln::nn::init
