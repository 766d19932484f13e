// The decompositions of every op family, added to graph's decomposition table when libkiln loads
// (graph::add_decompositions), in this order.
#include "src/lower/decompositions.h"

#include "src/lower/decomp/table.h"

namespace kiln::lower {
namespace {

void fill(DecompositionTable& t) {
  register_activation_decompositions(t);
  register_reduce_decompositions(t);
  register_norm_decompositions(t);
  register_loss_decompositions(t);
  register_linalg_decompositions(t);
  register_inplace_decompositions(t);
  register_shape_decompositions(t);
  register_norm_backward_decompositions(t);
}

const bool registered = [] {
  graph::add_decompositions(fill);
  return true;
}();

}  // namespace
}  // namespace kiln::lower
