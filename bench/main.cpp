// kiln-bench: measures Kiln and its references in one run, prints a table and writes JSON
//   {"machine": {...}, "results": [{"name", "unit", "kiln", "refs": {ref: value}}]}.
// Timing never decides a test's pass or fail (DESIGN.md section 7); this is for people.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>

#include "bench/bench.h"
#include "tools/omp_env.h"

namespace kiln::bench {
namespace {

void print_table(const std::vector<Result>& results) {
  fmt::print("\n{:<46} {:>10} {:>8}   {}\n", "benchmark", "kiln", "unit", "references (kiln/ref)");
  for (const Result& r : results) {
    std::string refs;
    for (const auto& [name, value] : r.refs) {
      // Ratio > 1 means Kiln is better, whatever the unit.
      double ratio = r.higher_is_better() ? r.kiln / value : value / r.kiln;
      refs += fmt::format("{}={:.4g} ({:.2f}x)  ", name, value, ratio);
    }
    fmt::print("{:<46} {:>10.4g} {:>8}   {}\n", r.name, r.kiln, r.unit, refs);
  }
  fmt::print("(ratios: >1 means Kiln is faster)\n");
}

// Note [Benchmark rounds]
// The machines this runs on are shared: their speed changes for seconds to minutes at a time
// (the same compiled training step measured 0.77 ms for one run and 1.26 ms for the next). With
// one round, Kiln is measured first and PyTorch afterwards, so a slow phase during either skews
// the ratio. `--rounds N` alternates N rounds of both and reports, for Kiln and every reference,
// the median of the per-round values, so that a phase has to last through most rounds to move a
// ratio.
std::vector<Result> median_over_rounds(const std::vector<std::vector<Result>>& rounds) {
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  std::vector<Result> out;
  for (const Result& first : rounds.front()) {
    Result r = first;
    std::vector<double> kiln;
    std::map<std::string, std::vector<double>> refs;
    for (const std::vector<Result>& round : rounds)
      for (const Result& same : round)
        if (same.name == first.name) {
          kiln.push_back(same.kiln);
          for (const auto& [ref, value] : same.refs) refs[ref].push_back(value);
        }
    r.kiln = median(kiln);
    for (auto& [ref, values] : refs) r.refs[ref] = median(values);
    out.push_back(std::move(r));
  }
  return out;
}

nlohmann::ordered_json to_json(const nlohmann::ordered_json& machine,
                               const std::vector<Result>& results) {
  nlohmann::ordered_json out;
  out["machine"] = machine;
  out["results"] = nlohmann::ordered_json::array();
  for (const Result& r : results) {
    out["results"].push_back(
        {{"name", r.name}, {"unit", r.unit}, {"kiln", r.kiln}, {"refs", r.refs}});
    if (!r.metadata.empty()) out["results"].back()["metadata"] = r.metadata;
  }
  return out;
}

}  // namespace
}  // namespace kiln::bench

int main(int argc, char** argv) {
  kiln::tools::use_passive_omp_wait_policy(argv);  // Note [OpenMP wait policy]
  using namespace kiln::bench;
  CLI::App app{"kiln-bench: Kiln against OpenBLAS, a STREAM copy and PyTorch eager"};
  std::string json_path;
  std::string torch_script = std::string(KILN_BENCH_DIR) + "/torch_eager.py";
  bool no_torch = false;
  Options options;
  app.add_option("--json", json_path, "Write the results as JSON to this file");
  app.add_option("--repetitions", options.repetitions, "Timed repetitions per measurement")
      ->check(CLI::PositiveNumber);
  app.add_option("--torch-script", torch_script, "The PyTorch reference script");
  app.add_flag("--no-torch", no_torch, "Skip the PyTorch eager references");
  int rounds_count = 1;
  app.add_option("--rounds", rounds_count,
                 "Measure Kiln and PyTorch this many times, alternating; report each value's "
                 "median over the rounds")
      ->check(CLI::PositiveNumber);
  std::vector<std::string> only;
  app.add_option(
         "--group", only,
         "Run only these groups (overhead, pointwise, matmul, nn, train, capture, compiled, "
         "control_flow, libtorch)")
      ->check(CLI::IsMember({"overhead", "pointwise", "matmul", "nn", "train", "capture",
                             "compiled", "control_flow", "libtorch"}));
  app.add_option("--backend", options.backend,
                 "kiln::compile backend of the compiled group (default " +
                     std::string(kDefaultCompiledBackend) + ")");
  std::string probe;
  app.add_option("--compile-probe", probe,
                 "Internal: time the first call of one compiled workload in this new process")
      ->group("");  // hidden: bench_compiled starts it
  CLI11_PARSE(app, argc, argv);
  if (!probe.empty()) {
    try {
      return compile_probe(probe, options.backend);
    } catch (const std::exception& e) {
      std::cerr << "kiln-bench --compile-probe " << probe << ": " << e.what() << "\n";
      return 1;
    }
  }

  nlohmann::ordered_json machine = machine_info();
  std::cout << "machine: " << machine.dump() << "\n" << std::flush;

  const std::vector<std::pair<std::string, std::vector<Result> (*)(const Options&)>> groups = {
      {"overhead", bench_overhead}, {"pointwise", bench_pointwise},
      {"matmul", bench_matmul},     {"nn", bench_nn},
      {"train", bench_train},       {"capture", bench_capture},
      {"compiled", bench_compiled}, {"control_flow", bench_control_flow},
      {"libtorch", bench_libtorch}};
  // Note [Benchmark rounds]: each round measures Kiln, then PyTorch; the rounds alternate.
  std::vector<std::vector<Result>> rounds;
  for (int round = 0; round < rounds_count; ++round) {
    if (rounds_count > 1) fmt::print("round {} of {}\n", round + 1, rounds_count);
    std::vector<Result> results;
    for (const auto& [group_name, group] : groups) {
      if (!only.empty() && std::find(only.begin(), only.end(), group_name) == only.end()) continue;
      for (Result& r : group(options)) {
        fmt::print("  {:<46} {:.4g} {}\n", r.name, r.kiln, r.unit);
        std::fflush(stdout);
        results.push_back(std::move(r));
      }
    }
    if (!no_torch) {
      std::vector<std::string> names;
      for (const Result& r : results) names.push_back(r.name);
      TorchRefs torch = torch_eager_refs(torch_script, names);
      if (!torch.version.empty()) machine["torch"] = torch.version;
      for (Result& r : results) {
        auto it = torch.results.find(r.name);
        if (it == torch.results.end()) continue;
        r.refs["torch_eager"] = it->second;
        fmt::print("  {:<46} {:.4g} {} (torch_eager)\n", r.name, it->second, r.unit);
      }
    }
    rounds.push_back(std::move(results));
  }
  machine["rounds"] = rounds_count;
  const std::vector<Result> results = median_over_rounds(rounds);

  print_table(results);
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << to_json(machine, results).dump(2) << "\n";
    if (!out) {
      std::cerr << "kiln-bench: cannot write " << json_path << "\n";
      return 1;
    }
    std::cout << "wrote " << json_path << "\n";
  }
  return 0;
}
