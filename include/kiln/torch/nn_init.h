// torch::nn::init and torch::nn::utils (gradient clipping) over Kiln's (kiln/nn/init.h,
// kiln/nn/clip_grad.h), with LibTorch's signatures: nonlinearities and fan modes as constants
// (`torch::nn::init::kaiming_normal_(w, 0, torch::kFanOut, torch::kReLU)`), results returned by
// value, clip_grad_norm_ returning the total norm as a double. Kiln has no orthogonal_, sparse_
// or dirac_ initializer, so neither does this.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <tuple>
#include <variant>
#include <vector>

#include "kiln/tensor.h"
#include "kiln/torch/nn_enum.h"

namespace torch::nn {

namespace init {

using NonlinearityType =
    std::variant<enumtype::kLinear, enumtype::kConv1D, enumtype::kConv2D, enumtype::kConv3D,
                 enumtype::kConvTranspose1D, enumtype::kConvTranspose2D, enumtype::kConvTranspose3D,
                 enumtype::kSigmoid, enumtype::kTanh, enumtype::kReLU, enumtype::kLeakyReLU>;
using FanModeType = std::variant<enumtype::kFanIn, enumtype::kFanOut>;

double calculate_gain(NonlinearityType nonlinearity, double param = 0.01);
kiln::Tensor constant_(kiln::Tensor tensor, kiln::Scalar value);
kiln::Tensor eye_(kiln::Tensor matrix);
kiln::Tensor normal_(kiln::Tensor tensor, double mean = 0, double std = 1);
kiln::Tensor ones_(kiln::Tensor tensor);
kiln::Tensor uniform_(kiln::Tensor tensor, double low = 0, double high = 1);
kiln::Tensor kaiming_normal_(kiln::Tensor tensor, double a = 0, FanModeType mode = torch::kFanIn,
                             NonlinearityType nonlinearity = torch::kLeakyReLU);
kiln::Tensor kaiming_uniform_(kiln::Tensor tensor, double a = 0, FanModeType mode = torch::kFanIn,
                              NonlinearityType nonlinearity = torch::kLeakyReLU);
kiln::Tensor xavier_normal_(kiln::Tensor tensor, double gain = 1.0);
kiln::Tensor xavier_uniform_(kiln::Tensor tensor, double gain = 1.0);
kiln::Tensor zeros_(kiln::Tensor tensor);
std::tuple<int64_t, int64_t> _calculate_fan_in_and_fan_out(const kiln::Tensor& tensor);

}  // namespace init

namespace utils {

// Scales the gradients so that their total norm is at most max_norm; returns the norm before.
double clip_grad_norm_(const std::vector<kiln::Tensor>& parameters, double max_norm,
                       double norm_type = 2.0, bool error_if_nonfinite = false);
double clip_grad_norm_(std::initializer_list<kiln::Tensor> parameters, double max_norm,
                       double norm_type = 2.0, bool error_if_nonfinite = false);
double clip_grad_norm_(const kiln::Tensor& parameter, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
void clip_grad_value_(const std::vector<kiln::Tensor>& parameters, double clip_value);
void clip_grad_value_(std::initializer_list<kiln::Tensor> parameters, double clip_value);
void clip_grad_value_(const kiln::Tensor& parameter, double clip_value);

}  // namespace utils

}  // namespace torch::nn
