#include "kiln/nn/activation.h"

#include "kiln/nn/functional.h"
#include "src/nn/naming.h"

namespace kiln::nn {

Tensor ReLU::forward(const Tensor& input) { return relu(input); }

GELU::GELU(std::string approximate) : Module("GELU"), approximate(std::move(approximate)) {
  KILN_CHECK(this->approximate == "none" || this->approximate == "tanh", ValueError,
             "GELU: approximate must be \"none\" or \"tanh\", got \"{}\"", this->approximate);
}
Tensor GELU::forward(const Tensor& input) { return gelu(input, approximate); }
std::string GELU::extra_repr() const { return fmt::format("approximate='{}'", approximate); }

Tensor SiLU::forward(const Tensor& input) { return silu(input); }
Tensor Sigmoid::forward(const Tensor& input) { return sigmoid(input); }
Tensor Tanh::forward(const Tensor& input) { return tanh(input); }

Softplus::Softplus(double beta, double threshold)
    : Module("Softplus"), beta(beta), threshold(threshold) {}
Tensor Softplus::forward(const Tensor& input) { return softplus(input, beta, threshold); }
std::string Softplus::extra_repr() const {
  return fmt::format("beta={}, threshold={}", py_float(beta), py_float(threshold));
}

LeakyReLU::LeakyReLU(double negative_slope) : Module("LeakyReLU"), negative_slope(negative_slope) {}
Tensor LeakyReLU::forward(const Tensor& input) {
  return functional::leaky_relu(input, negative_slope);
}
std::string LeakyReLU::extra_repr() const {
  return fmt::format("negative_slope={}", py_float(negative_slope));
}

ELU::ELU(double alpha) : Module("ELU"), alpha(alpha) {}
Tensor ELU::forward(const Tensor& input) { return functional::elu(input, alpha); }
std::string ELU::extra_repr() const { return fmt::format("alpha={}", py_float(alpha)); }

Softmax::Softmax(int64_t dim) : Module("Softmax"), dim(dim) {}
Tensor Softmax::forward(const Tensor& input) { return softmax(input, dim); }
std::string Softmax::extra_repr() const { return fmt::format("dim={}", dim); }

LogSoftmax::LogSoftmax(int64_t dim) : Module("LogSoftmax"), dim(dim) {}
Tensor LogSoftmax::forward(const Tensor& input) { return log_softmax(input, dim); }
std::string LogSoftmax::extra_repr() const { return fmt::format("dim={}", dim); }

}  // namespace kiln::nn
