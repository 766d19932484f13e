// The op table: every family registers its entries here, in this order.
#include "src/ops/registry.h"

namespace kiln {

void register_all_ops(OpRegistry& r) {
  register_copy_ops(r);
  register_view_ops(r);
  register_factory_ops(r);
  register_random_ops(r);
  register_unary_ops(r);
  register_binary_ops(r);
  register_ternary_ops(r);
  register_reduce_ops(r);
  register_sort_ops(r);
  register_linalg_ops(r);
  register_nn_ops(r);
  register_shape_ops(r);
  register_index_ops(r);
  register_higher_order_ops(r);
  register_scalar_output_ops(r);
  // Derivatives attach to these entries from src/autograd/derivative_table.cpp (Note [Extending
  // the op table]).
}

}  // namespace kiln
