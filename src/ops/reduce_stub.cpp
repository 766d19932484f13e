// Placeholder until the reduce op family lands; replaced by src/ops/reduce.cpp.
#include "src/ops/registry.h"

namespace kiln {
void register_reduce_ops(OpRegistry&) {}
}  // namespace kiln
