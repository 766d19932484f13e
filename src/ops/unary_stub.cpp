// Placeholder until the unary op family lands; replaced by src/ops/unary.cpp.
#include "src/ops/registry.h"

namespace kiln {
void register_unary_ops(OpRegistry&) {}
}  // namespace kiln
