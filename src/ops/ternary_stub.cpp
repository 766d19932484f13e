// Placeholder until the ternary op family lands; replaced by src/ops/ternary.cpp.
#include "src/ops/registry.h"

namespace kiln {
void register_ternary_ops(OpRegistry&) {}
}  // namespace kiln
