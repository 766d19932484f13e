#include "kiln/nn/pooling.h"

#include "kiln/ops/pooling.h"
#include "src/core/shape.h"
#include "src/nn/naming.h"

namespace kiln::nn {
namespace {

// "(C, L)" / "(N, C, L)", "(C, H, W)" / ..., as the layers name their inputs.
constexpr const char* kSpatial[] = {"", "L", "H, W", "D, H, W"};

template <size_t D>
void check_pool_input(const Module& m, const Tensor& input) {
  constexpr int64_t rank = static_cast<int64_t>(D) + 2;
  KILN_CHECK(input.defined(), ValueError, "{}: the input is an undefined Tensor", describe(m));
  KILN_CHECK(input.dim() == rank - 1 || input.dim() == rank, ShapeError,
             "{}: expected a {}-D (C, {}) or {}-D (N, C, {}) input, got shape {}", describe(m),
             rank - 1, kSpatial[D], rank, kSpatial[D], shape_str(input.sizes()));
}

std::string name_of(const char* kind, size_t d) { return fmt::format("{}{}d", kind, d); }

}  // namespace

// ---- MaxPoolNd ----

template <size_t D>
MaxPoolNd<D>::MaxPoolNd(ExpandingArray<D> kernel_size, MaxPoolOptions<D> options)
    : Module(name_of("MaxPool", D)), kernel_size(kernel_size), options(std::move(options)) {}

template <size_t D>
Tensor MaxPoolNd<D>::forward(const Tensor& input) {
  check_pool_input<D>(*this, input);
  const ExpandingArray<D> stride = options.stride.value_or(kernel_size);
  return with_context(*this, [&] {
    if constexpr (D == 1) {
      return max_pool1d(input, kernel_size, stride, options.padding, options.dilation,
                        options.ceil_mode);
    } else if constexpr (D == 2) {
      return max_pool2d(input, kernel_size, stride, options.padding, options.dilation,
                        options.ceil_mode);
    } else {
      return max_pool3d(input, kernel_size, stride, options.padding, options.dilation,
                        options.ceil_mode);
    }
  });
}

template <size_t D>
std::pair<Tensor, Tensor> MaxPoolNd<D>::forward_with_indices(const Tensor& input) {
  check_pool_input<D>(*this, input);
  const ExpandingArray<D> stride = options.stride.value_or(kernel_size);
  return with_context(*this, [&] {
    if constexpr (D == 1) {
      return max_pool1d_with_indices(input, kernel_size, stride, options.padding, options.dilation,
                                     options.ceil_mode);
    } else if constexpr (D == 2) {
      return max_pool2d_with_indices(input, kernel_size, stride, options.padding, options.dilation,
                                     options.ceil_mode);
    } else {
      return max_pool3d_with_indices(input, kernel_size, stride, options.padding, options.dilation,
                                     options.ceil_mode);
    }
  });
}

template <size_t D>
std::string MaxPoolNd<D>::extra_repr() const {
  return fmt::format("kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={}",
                     kernel_size.repr(), options.stride.value_or(kernel_size).repr(),
                     options.padding.repr(), options.dilation.repr(), py_bool(options.ceil_mode));
}

// ---- AvgPoolNd ----

template <size_t D>
AvgPoolNd<D>::AvgPoolNd(ExpandingArray<D> kernel_size, AvgPoolOptions<D> options)
    : Module(name_of("AvgPool", D)), kernel_size(kernel_size), options(std::move(options)) {
  KILN_CHECK(D != 1 || !this->options.divisor_override, ValueError,
             "AvgPool1d: divisor_override is not an option of 1-d average pooling (as in PyTorch); "
             "scale the output instead, or use AvgPool2d on an input with a height of 1");
}

template <size_t D>
Tensor AvgPoolNd<D>::forward(const Tensor& input) {
  check_pool_input<D>(*this, input);
  const ExpandingArray<D> stride = options.stride.value_or(kernel_size);
  return with_context(*this, [&] {
    if constexpr (D == 1) {
      return avg_pool1d(input, kernel_size, stride, options.padding, options.ceil_mode,
                        options.count_include_pad);
    } else if constexpr (D == 2) {
      return avg_pool2d(input, kernel_size, stride, options.padding, options.ceil_mode,
                        options.count_include_pad, options.divisor_override);
    } else {
      return avg_pool3d(input, kernel_size, stride, options.padding, options.ceil_mode,
                        options.count_include_pad, options.divisor_override);
    }
  });
}

template <size_t D>
std::string AvgPoolNd<D>::extra_repr() const {
  return fmt::format("kernel_size={}, stride={}, padding={}", kernel_size.repr(),
                     options.stride.value_or(kernel_size).repr(), options.padding.repr());
}

// ---- AdaptiveAvgPoolNd, AdaptiveMaxPoolNd ----

template <size_t D>
AdaptiveAvgPoolNd<D>::AdaptiveAvgPoolNd(ExpandingArray<D> output_size)
    : Module(name_of("AdaptiveAvgPool", D)), output_size(output_size) {}

template <size_t D>
Tensor AdaptiveAvgPoolNd<D>::forward(const Tensor& input) {
  check_pool_input<D>(*this, input);
  return with_context(*this, [&] {
    if constexpr (D == 1) {
      return adaptive_avg_pool1d(input, output_size);
    } else if constexpr (D == 2) {
      return adaptive_avg_pool2d(input, output_size);
    } else {
      return adaptive_avg_pool3d(input, output_size);
    }
  });
}

template <size_t D>
std::string AdaptiveAvgPoolNd<D>::extra_repr() const {
  return fmt::format("output_size={}", output_size.repr());
}

template <size_t D>
AdaptiveMaxPoolNd<D>::AdaptiveMaxPoolNd(ExpandingArray<D> output_size)
    : Module(name_of("AdaptiveMaxPool", D)), output_size(output_size) {}

template <size_t D>
Tensor AdaptiveMaxPoolNd<D>::forward(const Tensor& input) {
  return forward_with_indices(input).first;
}

template <size_t D>
std::pair<Tensor, Tensor> AdaptiveMaxPoolNd<D>::forward_with_indices(const Tensor& input) {
  check_pool_input<D>(*this, input);
  return with_context(*this, [&] {
    if constexpr (D == 1) {
      return adaptive_max_pool1d(input, output_size);
    } else if constexpr (D == 2) {
      return adaptive_max_pool2d(input, output_size);
    } else {
      return adaptive_max_pool3d(input, output_size);
    }
  });
}

template <size_t D>
std::string AdaptiveMaxPoolNd<D>::extra_repr() const {
  return fmt::format("output_size={}", output_size.repr());
}

template class MaxPoolNd<1>;
template class MaxPoolNd<2>;
template class MaxPoolNd<3>;
template class AvgPoolNd<1>;
template class AvgPoolNd<2>;
template class AvgPoolNd<3>;
template class AdaptiveAvgPoolNd<1>;
template class AdaptiveAvgPoolNd<2>;
template class AdaptiveAvgPoolNd<3>;
template class AdaptiveMaxPoolNd<1>;
template class AdaptiveMaxPoolNd<2>;
template class AdaptiveMaxPoolNd<3>;

}  // namespace kiln::nn
