// kiln-fuzz: the differential fuzzer from the command line (tests/fuzz/fuzz_runner.h).
//
//   kiln-fuzz --seed 1 --count 2000                  programs 0..1999 of seed 1
//   kiln-fuzz --seed 1 --index 17 --verbose          rerun one program, printing it
//   kiln-fuzz --seed 1 --count 500 --coverage        what the programs exercise (no compiling)
//   kiln-fuzz --seed 1 --count 300 --grad --no-special   gradients too (AOT autograd)
//
// Exit status 1 when any program's compiled result differs from eager.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <iostream>

#include "tests/fuzz/fuzz_runner.h"
#include "tools/omp_env.h"

int main(int argc, char** argv) {
  kiln::tools::use_passive_omp_wait_policy(argv);  // Note [OpenMP wait policy]
  using namespace kiln::fuzz;
  CLI::App app{"kiln-fuzz: random programs run through kiln::compile and compared with eager"};
  uint64_t seed = 0;
  int64_t start = 0, count = 100;
  std::optional<int64_t> index;
  RunOptions options;
  options.backend = backend_from_environment();
  bool verbose = false, coverage = false, no_minimize = false;
  app.add_option("--seed", seed, "Seed of the batch");
  app.add_option("--count", count, "Number of programs")->check(CLI::NonNegativeNumber);
  app.add_option("--start", start, "Index of the first program")->check(CLI::NonNegativeNumber);
  app.add_option("--index", index, "Run only this program (same as --start I --count 1)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--backend", options.backend,
                 "kiln::compile backend (default: $KILN_FUZZ_BACKEND, else " +
                     std::string(kDefaultFuzzBackend) + ")");
  app.add_flag("--dynamic", options.dynamic, "Compile with every dim symbolic");
  app.add_flag("--grad", options.grad,
               "Also compare gradients through the compiled backward with eager autograd's");
  app.add_option("--programs-per-compile", options.programs_per_compile,
                 "Programs compiled together as one function (a failing group is rechecked "
                 "program by program)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--max-steps", options.generator.max_steps, "Longest program")
      ->check(CLI::Range(1, 64));
  bool no_special = false;
  app.add_flag("--no-special", no_special, "No NaN/inf in the inputs");
  app.add_flag("--random", options.generator.random_ops,
               "Also generate steps that draw from the default generator (rand_like, dropout)");
  bool no_later_calls = false;
  app.add_flag("--no-later-calls", no_later_calls,
               "Call each compiled function once only (no fresh values, new sizes, overlapping "
               "inputs or module swaps)");
  app.add_flag("--no-minimize", no_minimize, "Report failing programs without shrinking them");
  app.add_flag("--verbose,-v", verbose, "Print every program and its outcome");
  app.add_flag("--coverage", coverage, "Print what the programs exercise instead of running them");
  bool list_ops = false;
  app.add_flag("--list-ops", list_ops, "Print the ops the generator may call");
  CLI11_PARSE(app, argc, argv);
  options.minimize = !no_minimize;
  options.later_calls = !no_later_calls;
  options.generator.special_values = !no_special;
  options.generator.min_steps = std::min(options.generator.min_steps, options.generator.max_steps);
  if (index) {
    start = *index;
    count = 1;
  }

  try {
    if (list_ops) {
      for (const std::string& op : fuzzed_ops()) std::cout << op << "\n";
      return 0;
    }
    if (coverage) {
      std::vector<Program> programs;
      for (int64_t i = start; i < start + count; ++i) {
        programs.push_back(generate(seed, i, options.generator));
        if (verbose) std::cout << programs.back().to_text();
      }
      std::cout << coverage_of(programs).summary();
      return 0;
    }
    const BatchResult r = run_batch(seed, start, count, options, &std::cout, verbose);
    fmt::print(
        "kiln-fuzz: {} programs ({} steps{}), backend {}, seed {}: {} failures, {:.2f} s "
        "({:.1f} ms per program)\n",
        r.programs, r.steps,
        options.grad ? fmt::format(", {} with gradients compared", r.gradient_checks) : "",
        options.backend, seed, r.failures.size(), r.seconds,
        r.programs > 0 ? 1e3 * r.seconds / static_cast<double>(r.programs) : 0.0);
    return r.failures.empty() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "kiln-fuzz: " << e.what() << "\n";
    return 2;
  }
}
