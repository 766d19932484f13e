// Placeholder until the index op family lands; replaced by src/ops/index.cpp.
#include "src/ops/registry.h"

namespace kiln {
void register_index_ops(OpRegistry&) {}
}  // namespace kiln
