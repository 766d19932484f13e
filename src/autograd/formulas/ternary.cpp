// Derivatives of the ternary ops.
#include "src/autograd/formulas/grad_utils.h"

namespace kiln::autograd {

void register_ternary_derivatives(OpRegistry& ops) { add_derivatives(ops, {}); }

}  // namespace kiln::autograd
