// Derivatives of the copy ops.
#include "src/autograd/formulas/grad_utils.h"

namespace kiln::autograd {

void register_copy_derivatives(OpRegistry& ops) { add_derivatives(ops, {}); }

}  // namespace kiln::autograd
