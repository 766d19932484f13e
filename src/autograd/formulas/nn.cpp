// Derivatives of the nn ops.
#include "src/autograd/formulas/grad_utils.h"

namespace kiln::autograd {

void register_nn_derivatives(OpRegistry& ops) { add_derivatives(ops, {}); }

}  // namespace kiln::autograd
