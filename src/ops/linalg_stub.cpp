// Placeholder until the linalg op family lands; replaced by src/ops/linalg.cpp.
#include "src/ops/registry.h"

namespace kiln {
void register_linalg_ops(OpRegistry&) {}
}  // namespace kiln
