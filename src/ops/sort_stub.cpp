// Placeholder until the sort op family lands; replaced by src/ops/sort.cpp.
#include "src/ops/registry.h"

namespace kiln {
void register_sort_ops(OpRegistry&) {}
}  // namespace kiln
