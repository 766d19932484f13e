// AOT autograd through higher-order ops (Note [Higher-order ops in AOT autograd] in
// src/aot/higher_order_autograd.cpp).
#pragma once

#include <vector>

#include "src/dispatch/ivalue.h"
#include "src/graph/graph.h"

namespace kiln::aot {

// Records a call of a higher-order op (cond, while_loop, scan) on fakes into the active joint
// trace's graph, with a backward node when an input requires grad; the handler the joint trace
// gives graph::interpret_symbolic. Returns fakes of the node's outputs.
std::vector<Tensor> record_higher_order(const graph::Node& node, const Stack& args);

}  // namespace kiln::aot
