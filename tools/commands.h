// The subcommands of the `kiln` command line, one file each; kiln_main.cpp parses the arguments.
#pragma once

#include "examples/fashion_mnist.h"

namespace kiln::tools {

// `kiln ops [--json]`: the op table, as a text table or as JSON.
int run_ops(bool json);
// `kiln demo [options]`: trains a CNN on Fashion-MNIST (examples/fashion_mnist.cpp).
int run_demo(const examples::FashionMnistOptions& options);
// `kiln tour`: a short tour of the eager API.
int run_tour();
// `kiln passes`: the compiler's passes in pipeline order, with what each takes and makes.
int run_passes();

}  // namespace kiln::tools
