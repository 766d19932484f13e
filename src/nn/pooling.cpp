#include "kiln/nn/pooling.h"

#include "kiln/ops/linalg.h"
#include "src/core/shape.h"
#include "src/nn/naming.h"

namespace kiln::nn {
namespace {

void check_pool_input(const Module& m, const Tensor& input) {
  KILN_CHECK(input.dim() == 3 || input.dim() == 4, ShapeError,
             "{}: expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape {}", describe(m),
             shape_str(input.sizes()));
}

}  // namespace

MaxPool2d::MaxPool2d(ExpandingArray<2> kernel_size, MaxPool2dOptions options)
    : Module("MaxPool2d"), kernel_size(kernel_size), options(std::move(options)) {}

Tensor MaxPool2d::forward(const Tensor& input) {
  check_pool_input(*this, input);
  return with_context(*this, [&] {
    return max_pool2d(input, kernel_size, options.stride.value_or(kernel_size), options.padding,
                      options.dilation, options.ceil_mode);
  });
}

std::string MaxPool2d::extra_repr() const {
  return fmt::format("kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={}",
                     kernel_size.repr(), options.stride.value_or(kernel_size).repr(),
                     options.padding.repr(), options.dilation.repr(), py_bool(options.ceil_mode));
}

AvgPool2d::AvgPool2d(ExpandingArray<2> kernel_size, AvgPool2dOptions options)
    : Module("AvgPool2d"), kernel_size(kernel_size), options(std::move(options)) {}

Tensor AvgPool2d::forward(const Tensor& input) {
  check_pool_input(*this, input);
  return with_context(*this, [&] {
    return avg_pool2d(input, kernel_size, options.stride.value_or(kernel_size), options.padding,
                      options.ceil_mode, options.count_include_pad, options.divisor_override);
  });
}

std::string AvgPool2d::extra_repr() const {
  return fmt::format("kernel_size={}, stride={}, padding={}", kernel_size.repr(),
                     options.stride.value_or(kernel_size).repr(), options.padding.repr());
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(ExpandingArray<2> output_size)
    : Module("AdaptiveAvgPool2d"), output_size(output_size) {}

Tensor AdaptiveAvgPool2d::forward(const Tensor& input) {
  check_pool_input(*this, input);
  return with_context(*this, [&] { return adaptive_avg_pool2d(input, output_size); });
}

std::string AdaptiveAvgPool2d::extra_repr() const {
  return fmt::format("output_size={}", output_size.repr());
}

}  // namespace kiln::nn
