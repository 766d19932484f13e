// `kiln`: the command line. Each subcommand lives in its own file (see commands.h).
#include <CLI/CLI.hpp>
#include <iostream>

#include "kiln/error.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"kiln: the PyTorch 2 stack in C++"};
  app.require_subcommand(1);

  bool json = false;
  CLI::App* ops = app.add_subcommand("ops", "List the op table (schema, dtypes, meta, derivative)");
  ops->add_flag("--json", json, "Print JSON instead of a table");
  CLI::App* demo = app.add_subcommand("demo", "A short tour of the eager tensor API");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*ops) return kiln::tools::run_ops(json);
    if (*demo) return kiln::tools::run_demo();
  } catch (const kiln::Error& e) {
    std::cerr << "kiln: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
