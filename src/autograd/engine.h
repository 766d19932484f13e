// The backward engine: runs the backward graph from a set of roots, in dependency order (a node
// runs once every gradient flowing into it has arrived), on the calling thread.
#pragma once

#include <optional>
#include <vector>

#include "src/autograd/autograd_meta.h"

namespace kiln::autograd {

struct EngineOptions {
  bool keep_graph = false;
  bool create_graph = false;
  // Non-empty: the gradients arriving at these edges are returned (kiln::grad) and AccumulateGrad
  // nodes are not run; only nodes on a path to one of them execute.
  std::vector<Edge> capture;
  // With accumulate_only: only these AccumulateGrad nodes accumulate (backward(inputs=...)).
  bool accumulate_only_captured = false;
};

// Returns one gradient per captured edge (undefined when none reached it).
TensorList run_backward(const std::vector<Edge>& roots, TensorList root_grads,
                        const EngineOptions& options);

}  // namespace kiln::autograd
