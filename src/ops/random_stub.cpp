// Placeholder until the random op family lands; replaced by src/ops/random.cpp.
#include "src/ops/registry.h"

namespace kiln {
void register_random_ops(OpRegistry&) {}
}  // namespace kiln
