#include "kiln/nn/linear.h"

#include <cmath>

#include "kiln/nn/init.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/linalg.h"
#include "src/core/shape.h"
#include "src/nn/naming.h"

namespace kiln::nn {
namespace {

int64_t check_non_negative(std::string_view what, int64_t value) {
  KILN_CHECK(value >= 0, ValueError, "Linear: {} must be >= 0, got {}", what, value);
  return value;
}

}  // namespace

Linear::Linear(int64_t in_features, int64_t out_features, bool with_bias)
    : Module("Linear"),
      in_features(check_non_negative("in_features", in_features)),
      out_features(check_non_negative("out_features", out_features)),
      weight(register_parameter("weight", empty({out_features, in_features}))),
      bias(register_parameter("bias", with_bias ? empty({out_features}) : Tensor())) {
  reset_parameters();
}

void Linear::reset_parameters() {
  // PyTorch's defaults: kaiming_uniform_ with a = sqrt(5) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const double bound = in_features > 0 ? 1.0 / std::sqrt(static_cast<double>(in_features)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& input) {
  check_input_defined(input);
  KILN_CHECK(input.dim() >= 1 && input.size(-1) == in_features, ShapeError,
             "{}: the input's last dim must be in_features = {}, got an input of shape {}",
             describe(*this), in_features, shape_str(input.sizes()));
  return linear(input, weight, bias);
}

std::string Linear::extra_repr() const {
  return fmt::format("in_features={}, out_features={}, bias={}", in_features, out_features,
                     py_bool(bias.defined()));
}

}  // namespace kiln::nn
