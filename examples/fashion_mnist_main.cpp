// build/bin/fashion_mnist [epochs]: the Fashion-MNIST example as a standalone program.
#include <cstdlib>
#include <iostream>

#include "examples/fashion_mnist.h"

int main(int argc, char** argv) {
  kiln::examples::FashionMnistOptions options;
  if (argc > 1) options.epochs = std::atoi(argv[1]);
  try {
    auto result = kiln::examples::train_fashion_mnist(options, std::cout);
    return result.test_accuracy >= 0.9 ? 0 : 2;
  } catch (const kiln::Error& e) {
    std::cerr << "fashion_mnist: " << e.what() << "\n";
    return 1;
  }
}
