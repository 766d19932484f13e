// torch::nn::init and torch::nn::utils over Kiln's initializers and gradient clipping.
#include "kiln/torch/nn_init.h"

#include "kiln/nn/clip_grad.h"
#include "kiln/nn/init.h"

namespace torch::nn {

using kiln::Tensor;

namespace init {

namespace ki = kiln::nn::init;

double calculate_gain(NonlinearityType nonlinearity, double param) {
  const std::string name = enumtype::kiln_name(nonlinearity);
  // Only leaky_relu reads the parameter (its negative slope), as in LibTorch.
  return ki::calculate_gain(name,
                            name == "leaky_relu" ? std::optional<double>(param) : std::nullopt);
}

Tensor constant_(Tensor tensor, kiln::Scalar value) {
  return ki::constant_(tensor, value.to<double>());
}
Tensor eye_(Tensor matrix) { return ki::eye_(matrix); }
Tensor normal_(Tensor tensor, double mean, double std) { return ki::normal_(tensor, mean, std); }
Tensor ones_(Tensor tensor) { return ki::ones_(tensor); }
Tensor uniform_(Tensor tensor, double low, double high) { return ki::uniform_(tensor, low, high); }
Tensor kaiming_normal_(Tensor tensor, double a, FanModeType mode, NonlinearityType nonlinearity) {
  return ki::kaiming_normal_(tensor, a, enumtype::kiln_name(mode),
                             enumtype::kiln_name(nonlinearity));
}
Tensor kaiming_uniform_(Tensor tensor, double a, FanModeType mode, NonlinearityType nonlinearity) {
  return ki::kaiming_uniform_(tensor, a, enumtype::kiln_name(mode),
                              enumtype::kiln_name(nonlinearity));
}
Tensor xavier_normal_(Tensor tensor, double gain) { return ki::xavier_normal_(tensor, gain); }
Tensor xavier_uniform_(Tensor tensor, double gain) { return ki::xavier_uniform_(tensor, gain); }
Tensor zeros_(Tensor tensor) { return ki::zeros_(tensor); }

std::tuple<int64_t, int64_t> _calculate_fan_in_and_fan_out(const Tensor& tensor) {
  return ki::calculate_fan_in_and_fan_out(tensor);
}

}  // namespace init

namespace utils {

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  return kiln::nn::clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite)
      .item<double>();
}
double clip_grad_norm_(std::initializer_list<Tensor> parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>(parameters), max_norm, norm_type, error_if_nonfinite);
}
double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  kiln::nn::clip_grad_value_(parameters, clip_value);
}
void clip_grad_value_(std::initializer_list<Tensor> parameters, double clip_value) {
  kiln::nn::clip_grad_value_(std::vector<Tensor>(parameters), clip_value);
}
void clip_grad_value_(const Tensor& parameter, double clip_value) {
  kiln::nn::clip_grad_value_(std::vector<Tensor>{parameter}, clip_value);
}

}  // namespace utils

}  // namespace torch::nn
