#include "kiln/generator.h"

namespace kiln {

Generator& default_generator() {
  static Generator* gen = new Generator();  // never destroyed: usable from static destructors
  return *gen;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace kiln
