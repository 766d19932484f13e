// conv3d and the transposed convolutions under kiln::compile with the inductor backend: they run
// as extern calls of their eager kernels (forward, and in the backward graph convolution_backward
// / conv_transpose_backward), around generated code for the pointwise ops and reductions; the
// compiled results and gradients equal eager's, with static and dynamic sizes, batch 1 and 0.
#include <gtest/gtest.h>

#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "tests/capture/compare.h"

namespace kiln {
namespace {

using testing::inductor;

// Runs loss(x, w, b) compiled and eagerly, and compares the loss and the gradients of x, w, b.
template <typename Loss>
void expect_compiled_gradients_equal(Loss loss, const CompileOptions& options,
                                     const std::vector<std::vector<int64_t>>& input_shapes,
                                     const std::vector<int64_t>& weight_shape, int64_t channels) {
  CompileOptions one_graph = options;
  one_graph.fullgraph = true;  // the convolutions are ops of the graph, never a graph break
  auto f = compile(loss, one_graph);
  for (const std::vector<int64_t>& input_shape : input_shapes) {
    SCOPED_TRACE(fmt::format("input {}", fmt::join(input_shape, "x")));
    const Tensor x = randn(input_shape).requires_grad_();
    const Tensor w = randn(weight_shape).requires_grad_();
    const Tensor b = randn({channels}).requires_grad_();
    const Tensor compiled = f(x, w, b);
    compiled.backward();
    const Tensor gx = x.grad().clone(), gw = w.grad().clone(), gb = b.grad().clone();
    for (const Tensor& t : {x, w, b}) t.mutable_grad() = Tensor();
    const Tensor eager = loss(x, w, b);
    eager.backward();
    testing::expect_close(compiled, eager, 1e-5);
    testing::expect_close(gx, x.grad(), 1e-5);
    testing::expect_close(gw, w.grad(), 1e-5);
    testing::expect_close(gb, b.grad(), 1e-5);
  }
}

TEST(CompiledConv, Conv3dForwardAndBackwardEqualEager) {
  auto loss = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    return (conv3d(x.relu(), w, b, {1, 2, 1}, 1).tanh() * 0.5).sum();
  };
  expect_compiled_gradients_equal(loss, inductor(), {{2, 3, 4, 5, 4}, {1, 3, 4, 5, 4}},
                                  {4, 3, 2, 3, 2}, 4);
  // Forward only, no grad: the same op in an inference graph.
  auto g =
      compile([](const Tensor& x, const Tensor& w) { return conv3d(x, w).relu(); }, inductor());
  const Tensor x = randn({1, 2, 3, 3, 3}), w = randn({3, 2, 2, 2, 2});
  testing::expect_equal(g(x, w), conv3d(x, w).relu());
}

TEST(CompiledConv, ConvTranspose2dForwardAndBackwardEqualEager) {
  auto loss = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    return (conv_transpose2d(x * 2.0, w, b, 2, 1, 1, 2).relu() * 0.25).sum();
  };
  expect_compiled_gradients_equal(loss, inductor(), {{2, 4, 3, 4}, {1, 4, 3, 4}}, {4, 3, 4, 4}, 6);
}

TEST(CompiledConv, TransposedConvolutionsWithDynamicSizesAndZeroBatch) {
  CompileOptions dynamic = inductor();
  dynamic.dynamic = true;
  auto loss = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    return conv_transpose1d(x, w, b, 3, 1, 2, 1, 2).sigmoid().sum();
  };
  // Different lengths and batches through one graph with symbolic sizes.
  expect_compiled_gradients_equal(loss, dynamic, {{2, 3, 5}, {3, 3, 7}}, {3, 2, 3}, 2);
  auto up = compile([](const Tensor& x, const Tensor& w) { return conv_transpose3d(x, w, {}, 2); },
                    inductor());
  const Tensor w = randn({2, 3, 2, 2, 2});
  for (int64_t batch : {0, 1}) {
    SCOPED_TRACE(batch);
    const Tensor x = randn({batch, 2, 2, 2, 2});
    testing::expect_equal(up(x, w), conv_transpose3d(x, w, {}, 2));
  }
}

}  // namespace
}  // namespace kiln
