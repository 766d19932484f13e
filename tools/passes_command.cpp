// `kiln passes`: the compiler's pass table (Note [The pipeline] in src/pipeline/pipeline.cpp).
#include <fmt/format.h>

#include "src/pipeline/pass.h"
#include "tools/commands.h"

namespace kiln::tools {

int run_passes() {
  int index = 1;
  for (const pipeline::PassInfo& p : pipeline::pass_table()) {
    fmt::print("{:2}. {:<14} {} -> {}   ({})\n    {}\n", index++, p.name, p.input, p.output, p.file,
               p.summary);
  }
  fmt::print(
      "\nKILN_LOGS=passes prints each pass's output; KILN_TRACE writes it as the artifact "
      "pass_<name>;\nKILN_VERIFY_PASSES=1 verifies each output (on in debug builds and tests).\n");
  return 0;
}

}  // namespace kiln::tools
