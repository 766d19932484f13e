// Placeholder until the nn op family lands; replaced by src/ops/nn.cpp.
#include "src/ops/registry.h"

namespace kiln {
void register_nn_ops(OpRegistry&) {}
}  // namespace kiln
