// Placeholder until the binary op family lands; replaced by src/ops/binary.cpp.
#include "src/ops/registry.h"

namespace kiln {
void register_binary_ops(OpRegistry&) {}
}  // namespace kiln
