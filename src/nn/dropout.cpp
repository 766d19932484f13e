#include "kiln/nn/dropout.h"

#include "kiln/ops/random.h"
#include "src/nn/naming.h"

namespace kiln::nn {

Dropout::Dropout(double p, Generator* generator) : Module("Dropout"), p(p), generator_(generator) {
  KILN_CHECK(p >= 0.0 && p <= 1.0, ValueError,
             "Dropout: probability p must be between 0 and 1, got {}", p);
}

Tensor Dropout::forward(const Tensor& input) {
  if (!is_training() || p == 0.0) return input;
  return generator_ ? dropout(input, p, true, *generator_) : dropout(input, p, true);
}

std::string Dropout::extra_repr() const { return fmt::format("p={}, inplace=False", py_float(p)); }

}  // namespace kiln::nn
