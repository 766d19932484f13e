// nn::init: in-place initializers, as torch.nn.init. Each runs under NoGradGuard (so it works on
// parameters that require grad), fills `tensor` in place, returns it, and draws from `gen` or, when
// null, from the default generator (kiln::manual_seed). Floating tensors only (DTypeError).
//
// Values are drawn with Kiln's Philox generator (Note [Counter-based random numbers]), so a seed
// gives the same values on any thread count, but not the values PyTorch's generator gives.
#pragma once

#include <optional>
#include <string_view>
#include <utility>

#include "kiln/generator.h"
#include "kiln/tensor.h"

namespace kiln::nn::init {

// The recommended gain for a nonlinearity: 1 for "linear", "identity", "conv1d", "conv2d",
// "conv3d", "conv_transpose1d/2d/3d" and "sigmoid"; 5/3 for "tanh"; sqrt(2) for "relu";
// sqrt(2 / (1 + slope^2)) for "leaky_relu" (slope = param, default 0.01); 3/4 for "selu".
// ValueError for any other name.
double calculate_gain(std::string_view nonlinearity, std::optional<double> param = std::nullopt);

// (fan_in, fan_out) = (size(1) * receptive field, size(0) * receptive field), where the receptive
// field is the product of the dims after the first two. ValueError for fewer than 2 dims.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);

// U(a, b).
const Tensor& uniform_(const Tensor& tensor, double a = 0.0, double b = 1.0,
                       Generator* gen = nullptr);
// N(mean, std^2).
const Tensor& normal_(const Tensor& tensor, double mean = 0.0, double std = 1.0,
                      Generator* gen = nullptr);
// N(mean, std^2) restricted to [a, b] (inverse-CDF sampling, as PyTorch).
const Tensor& trunc_normal_(const Tensor& tensor, double mean = 0.0, double std = 1.0,
                            double a = -2.0, double b = 2.0, Generator* gen = nullptr);
const Tensor& constant_(const Tensor& tensor, double value);
const Tensor& zeros_(const Tensor& tensor);
const Tensor& ones_(const Tensor& tensor);
// The identity matrix; 2-D tensors only.
const Tensor& eye_(const Tensor& tensor);

// Glorot: U(-bound, bound) with bound = gain * sqrt(6 / (fan_in + fan_out)).
const Tensor& xavier_uniform_(const Tensor& tensor, double gain = 1.0, Generator* gen = nullptr);
// Glorot: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
const Tensor& xavier_normal_(const Tensor& tensor, double gain = 1.0, Generator* gen = nullptr);

// He: std = calculate_gain(nonlinearity, a) / sqrt(fan), fan = fan_in or fan_out per `mode`
// ("fan_in" preserves the forward pass's variance, "fan_out" the backward's).
// kaiming_uniform_ draws U(-sqrt(3) std, sqrt(3) std); kaiming_normal_ draws N(0, std^2).
const Tensor& kaiming_uniform_(const Tensor& tensor, double a = 0.0,
                               std::string_view mode = "fan_in",
                               std::string_view nonlinearity = "leaky_relu",
                               Generator* gen = nullptr);
const Tensor& kaiming_normal_(const Tensor& tensor, double a = 0.0,
                              std::string_view mode = "fan_in",
                              std::string_view nonlinearity = "leaky_relu",
                              Generator* gen = nullptr);

}  // namespace kiln::nn::init
