// `kiln demo`: trains the Fashion-MNIST CNN of examples/fashion_mnist.cpp in eager mode.
#include <iostream>

#include "examples/fashion_mnist.h"
#include "tools/commands.h"

namespace kiln::tools {

int run_demo(const examples::FashionMnistOptions& options) {
  examples::FashionMnistResult result = examples::train_fashion_mnist(options, std::cout);
  return result.test_accuracy > 0 ? 0 : 1;
}

}  // namespace kiln::tools
