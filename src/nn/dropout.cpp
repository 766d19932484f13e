#include "kiln/nn/dropout.h"

#include <vector>

#include "kiln/ops/creation.h"
#include "kiln/ops/random.h"
#include "src/core/shape.h"
#include "src/nn/naming.h"

namespace kiln::nn {

namespace {

void check_probability(std::string_view who, double p) {
  KILN_CHECK(p >= 0.0 && p <= 1.0, ValueError, "{}: probability p must be between 0 and 1, got {}",
             who, p);
}

}  // namespace

Dropout::Dropout(double p, Generator* generator) : Module("Dropout"), p(p), generator_(generator) {
  check_probability("Dropout", p);
}

Tensor Dropout::forward(const Tensor& input) {
  if (!is_training() || p == 0.0) return input;
  return generator_ ? dropout(input, p, true, *generator_) : dropout(input, p, true);
}

std::string Dropout::extra_repr() const { return fmt::format("p={}, inplace=False", py_float(p)); }

Tensor feature_dropout(const Tensor& input, double p, bool train, Generator* generator) {
  check_probability("feature_dropout", p);
  KILN_CHECK(input.defined(), ValueError, "feature_dropout: the input is an undefined Tensor");
  KILN_CHECK(input.dim() >= 2, ShapeError,
             "feature_dropout: expected an input of at least 2 dims (N, C, *), got shape {}",
             shape_str(input.sym_sizes()));
  KILN_CHECK(is_floating(input.dtype()), DTypeError,
             "feature_dropout: expected a floating input, got {}", dtype_name(input.dtype()));
  if (!train) return input;
  // One draw per (n, c); the mask's trailing 1s broadcast it over the channel's elements.
  std::vector<int64_t> mask_shape(static_cast<size_t>(input.dim()), 1);
  mask_shape[0] = input.size(0);
  mask_shape[1] = input.size(1);
  const Tensor ones_mask = ones(mask_shape, TensorOptions(input.dtype()).device(input.device()));
  const Tensor mask =
      generator ? dropout(ones_mask, p, true, *generator) : dropout(ones_mask, p, true);
  return input * mask;
}

DropoutNd::DropoutNd(std::string name, int64_t spatial_dims, double p, Generator* generator)
    : Module(std::move(name)), p(p), spatial_dims_(spatial_dims), generator_(generator) {
  check_probability(this->name(), p);
}

Tensor DropoutNd::forward(const Tensor& input) {
  check_input_defined(input);
  const int64_t batched = spatial_dims_ + 2;
  KILN_CHECK(input.dim() == batched || input.dim() == batched - 1, ShapeError,
             "{}: expected a {}-D (C, *spatial) or {}-D (N, C, *spatial) input, got shape {}",
             name(), batched - 1, batched, shape_str(input.sym_sizes()));
  if (!is_training() || p == 0.0) return input;
  return with_context(*this, [&] {
    if (input.dim() == batched) return feature_dropout(input, p, true, generator_);
    return feature_dropout(input.unsqueeze(0), p, true, generator_).squeeze(0);
  });
}

std::string DropoutNd::extra_repr() const {
  return fmt::format("p={}, inplace=False", py_float(p));
}

}  // namespace kiln::nn
