// What an op family file needs: the registry, the dispatcher's typed helpers, shape utilities.
#pragma once

#include "src/core/promotion.h"
#include "src/core/shape.h"
#include "src/core/tensor_factory.h"
#include "src/dispatch/dispatcher.h"

namespace kiln {

// One registration function per op family; register_all_ops (all_ops.cpp) calls them in order.
void register_copy_ops(OpRegistry& r);
void register_view_ops(OpRegistry& r);
void register_factory_ops(OpRegistry& r);
void register_random_ops(OpRegistry& r);
void register_unary_ops(OpRegistry& r);
void register_binary_ops(OpRegistry& r);
void register_ternary_ops(OpRegistry& r);
void register_reduce_ops(OpRegistry& r);
void register_sort_ops(OpRegistry& r);
void register_linalg_ops(OpRegistry& r);
void register_nn_ops(OpRegistry& r);
void register_shape_ops(OpRegistry& r);
void register_index_ops(OpRegistry& r);
void register_higher_order_ops(OpRegistry& r);
void register_scalar_output_ops(OpRegistry& r);

}  // namespace kiln
