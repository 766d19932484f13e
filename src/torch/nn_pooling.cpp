// torch::nn's pooling (kiln/torch/nn_pooling.h): the functionals, and the adaptive layers'
// output sizes with nullopt elements resolved from the input.
#include "kiln/torch/nn_pooling.h"

#include "kiln/error.h"
#include "kiln/ops/pooling.h"
#include "src/core/shape.h"

namespace torch::nn {

using kiln::ShapeError;
using kiln::Tensor;
using kiln::ValueError;

namespace detail {

std::vector<int64_t> adaptive_output_size(const char* op, size_t spatial, const Tensor& input,
                                          const std::vector<std::optional<int64_t>>& size) {
  KILN_CHECK(input.defined(), ValueError, "{}: the input is an undefined Tensor", op);
  const auto rank = static_cast<int64_t>(spatial) + 2;
  KILN_CHECK(input.dim() == rank - 1 || input.dim() == rank, ShapeError,
             "{}: expected a {}-D (C, *spatial) or {}-D (N, C, *spatial) input with {} spatial "
             "dims, got shape {}",
             op, rank - 1, rank, spatial, kiln::shape_str(input.sym_sizes()));
  std::vector<int64_t> out;
  for (size_t i = 0; i < spatial; ++i)
    out.push_back(size[i].value_or(input.size(input.dim() - static_cast<int64_t>(spatial - i))));
  return out;
}

Tensor adaptive_avg_pool(size_t spatial, const Tensor& input, kiln::IntArrayRef output_size) {
  if (spatial == 1) return kiln::adaptive_avg_pool1d(input, output_size);
  if (spatial == 2) return kiln::adaptive_avg_pool2d(input, output_size);
  return kiln::adaptive_avg_pool3d(input, output_size);
}

std::tuple<Tensor, Tensor> adaptive_max_pool(size_t spatial, const Tensor& input,
                                             kiln::IntArrayRef output_size) {
  if (spatial == 1) return kiln::adaptive_max_pool1d(input, output_size);
  if (spatial == 2) return kiln::adaptive_max_pool2d(input, output_size);
  return kiln::adaptive_max_pool3d(input, output_size);
}

}  // namespace detail

namespace functional {

Tensor max_pool1d(const Tensor& input, const MaxPool1dFuncOptions& o) {
  return kiln::max_pool1d(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(),
                          o.ceil_mode());
}
Tensor max_pool2d(const Tensor& input, const MaxPool2dFuncOptions& o) {
  return kiln::max_pool2d(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(),
                          o.ceil_mode());
}
Tensor max_pool3d(const Tensor& input, const MaxPool3dFuncOptions& o) {
  return kiln::max_pool3d(input, o.kernel_size(), o.stride(), o.padding(), o.dilation(),
                          o.ceil_mode());
}

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input,
                                                   const MaxPool1dFuncOptions& o) {
  return kiln::max_pool1d_with_indices(input, o.kernel_size(), o.stride(), o.padding(),
                                       o.dilation(), o.ceil_mode());
}
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input,
                                                   const MaxPool2dFuncOptions& o) {
  return kiln::max_pool2d_with_indices(input, o.kernel_size(), o.stride(), o.padding(),
                                       o.dilation(), o.ceil_mode());
}
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input,
                                                   const MaxPool3dFuncOptions& o) {
  return kiln::max_pool3d_with_indices(input, o.kernel_size(), o.stride(), o.padding(),
                                       o.dilation(), o.ceil_mode());
}

Tensor avg_pool1d(const Tensor& input, const AvgPool1dFuncOptions& o) {
  return kiln::avg_pool1d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(),
                          o.count_include_pad());
}
Tensor avg_pool2d(const Tensor& input, const AvgPool2dFuncOptions& o) {
  return kiln::avg_pool2d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(),
                          o.count_include_pad(), o.divisor_override());
}
Tensor avg_pool3d(const Tensor& input, const AvgPool3dFuncOptions& o) {
  return kiln::avg_pool3d(input, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(),
                          o.count_include_pad(), o.divisor_override());
}

Tensor adaptive_avg_pool1d(const Tensor& input, const AdaptiveAvgPool1dFuncOptions& o) {
  return kiln::adaptive_avg_pool1d(input, o.output_size());
}
Tensor adaptive_avg_pool2d(const Tensor& input, const AdaptiveAvgPool2dFuncOptions& o) {
  return kiln::adaptive_avg_pool2d(
      input, detail::adaptive_output_size<2>("adaptive_avg_pool2d", input, o.output_size()));
}
Tensor adaptive_avg_pool3d(const Tensor& input, const AdaptiveAvgPool3dFuncOptions& o) {
  return kiln::adaptive_avg_pool3d(
      input, detail::adaptive_output_size<3>("adaptive_avg_pool3d", input, o.output_size()));
}

std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool1dFuncOptions& o) {
  return kiln::adaptive_max_pool1d(input, o.output_size());
}
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool2dFuncOptions& o) {
  return kiln::adaptive_max_pool2d(
      input, detail::adaptive_output_size<2>("adaptive_max_pool2d", input, o.output_size()));
}
std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& input,
                                                            const AdaptiveMaxPool3dFuncOptions& o) {
  return kiln::adaptive_max_pool3d(
      input, detail::adaptive_output_size<3>("adaptive_max_pool3d", input, o.output_size()));
}

Tensor adaptive_max_pool1d(const Tensor& input, const AdaptiveMaxPool1dFuncOptions& o) {
  return std::get<0>(adaptive_max_pool1d_with_indices(input, o));
}
Tensor adaptive_max_pool2d(const Tensor& input, const AdaptiveMaxPool2dFuncOptions& o) {
  return std::get<0>(adaptive_max_pool2d_with_indices(input, o));
}
Tensor adaptive_max_pool3d(const Tensor& input, const AdaptiveMaxPool3dFuncOptions& o) {
  return std::get<0>(adaptive_max_pool3d_with_indices(input, o));
}

}  // namespace functional

}  // namespace torch::nn
