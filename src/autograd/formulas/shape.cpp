// Derivatives of the shape ops.
#include "src/autograd/formulas/grad_utils.h"

namespace kiln::autograd {

void register_shape_derivatives(OpRegistry& ops) { add_derivatives(ops, {}); }

}  // namespace kiln::autograd
