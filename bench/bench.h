// kiln-bench: one Result per measurement; each group file measures Kiln and the references that
// run in-process (OpenBLAS, a STREAM-like copy). PyTorch runs in a subprocess (torch_ref.cpp).
// Result names are a contract: scripts compare bench.json files across commits by name.
#pragma once

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kiln::bench {

struct Result {
  std::string name;
  std::string unit;  // "ns", "ms", "GB/s", "GFLOP/s"
  double kiln = 0;
  std::map<std::string, double> refs;  // reference name -> value in the same unit
  // Facts about the measured code (graph counts), written to the JSON as they are; the first
  // round's are kept.
  nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
  bool higher_is_better() const { return unit == "GB/s" || unit == "GFLOP/s"; }
};

// The kiln::compile backend the "compiled" group measures (kiln-bench --backend): the one
// kiln::compile defaults to.
inline constexpr const char* kDefaultCompiledBackend = "inductor";

struct Options {
  int repetitions = 21;  // timed repetitions per measurement; the median is reported
  std::string backend = kDefaultCompiledBackend;  // for the "compiled" group
};

// Seconds taken by one call of f, median over `reps` calls after `warmup` untimed calls.
template <typename F>
double median_seconds(F&& f, int reps, int warmup = 3) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> times;
  times.reserve(static_cast<size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    auto start = std::chrono::steady_clock::now();
    f();
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// The groups, one file each.
std::vector<Result> bench_overhead(const Options& options);      // overhead.cpp
std::vector<Result> bench_pointwise(const Options& options);     // pointwise.cpp
std::vector<Result> bench_matmul(const Options& options);        // matmul.cpp
std::vector<Result> bench_nn(const Options& options);            // nn.cpp
std::vector<Result> bench_train(const Options& options);         // train.cpp
std::vector<Result> bench_capture(const Options& options);       // capture.cpp
std::vector<Result> bench_compiled(const Options& options);      // compiled.cpp
std::vector<Result> bench_control_flow(const Options& options);  // control_flow.cpp
std::vector<Result> bench_libtorch(const Options& options);      // libtorch.cpp

// compiled.cpp: `kiln-bench --compile-probe NAME` (a new process started by bench_compiled):
// builds workload NAME, times its first compiled call and a steady one, prints
// "compile_probe_ms <first> <steady>".
int compile_probe(const std::string& name, const std::string& backend);

// pointwise.cpp: GB/s of a STREAM-like copy of 16M floats (one read and one write stream).
double stream_copy_gbps(const Options& options);

// machine.cpp: CPU model, cores, threads, compiler, date, BLAS config.
nlohmann::ordered_json machine_info();

// torch_ref.cpp: runs bench/torch_eager.py with Debian's /usr/bin/python3. `results` maps result
// names to values; empty (with a note on stdout) when PyTorch is not installed.
struct TorchRefs {
  std::string version;
  std::map<std::string, double> results;
};
// Only the results named in `names` are measured (all of them when it is empty).
TorchRefs torch_eager_refs(const std::string& script, const std::vector<std::string>& names = {});

// Runs a shell command and returns its standard output; `status` is pclose's status.
std::string run_command(const std::string& command, int& status);

}  // namespace kiln::bench
