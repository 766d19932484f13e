// The subcommands of the `kiln` command line, one file each; kiln_main.cpp parses the arguments.
#pragma once

namespace kiln::tools {

// `kiln ops [--json]`: the op table, as a text table or as JSON.
int run_ops(bool json);
// `kiln demo`: a short tour of the eager API.
int run_demo();

}  // namespace kiln::tools
