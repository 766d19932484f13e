// Derivatives of the index ops.
#include "src/autograd/formulas/grad_utils.h"

namespace kiln::autograd {

void register_index_derivatives(OpRegistry& ops) { add_derivatives(ops, {}); }

}  // namespace kiln::autograd
