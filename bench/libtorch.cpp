// LibTorch programs (tests/libtorch) run side by side: each built against Kiln's torch:: front end
// (build/bin/libtorch_<name>) and against Debian's LibTorch (`make bench` builds them in
// build/libtorch-ref). Both run as separate processes with the user's environment as is (no
// OMP_WAIT_POLICY added), as a LibTorch program would run.
//   eager_cnn_step_busy_machine  cnn_step (the demo's CNN, batch 128, eager SGD step) while another
//                                process spins on one core; ms per step, ref `libtorch`
//   eager_cnn_step_idle_machine  the same without the spinning process (for scale)
//   libtorch_mnist_epoch         the mnist program's training epoch (Fashion-MNIST, batch 64, SGD,
//                                2 loader workers), ms, Kiln eager vs LibTorch
//   libtorch_mnist_epoch_compiled  the same program with its torch::compile line (mnist_compiled),
//                                refs `libtorch` and `kiln_eager`; the epoch includes compiling
//                                (the code cache is warm after the first run)
//   lstm_seq128_b32_train_step   lstm_step_compiled (a 2-layer LSTM, hidden 256, with its
//                                torch::compile line): ms per training step, refs `libtorch` and
//                                `kiln_eager` (lstm_step built against Kiln)
#include <fmt/format.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include "bench/bench.h"

namespace kiln::bench {
namespace {

// A process that spins on the machine's last CPU while it lives (the "busy machine").
class BusyCore {
 public:
  BusyCore() {
    pid_ = fork();
    if (pid_ == 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
      CPU_SET(static_cast<int>(cpus > 0 ? cpus - 1 : 0), &set);
      sched_setaffinity(0, sizeof(set), &set);
      volatile uint64_t spin = 0;
      for (;;) spin = spin + 1;
    }
  }
  ~BusyCore() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  BusyCore(const BusyCore&) = delete;
  BusyCore& operator=(const BusyCore&) = delete;

 private:
  pid_t pid_ = -1;
};

// Runs `binary args` and parses "RESULT ... <key>=<x>"; nullopt (with a note) when it fails.
std::optional<double> result_of(const std::filesystem::path& binary, const std::string& args,
                                const std::string& key) {
  if (!std::filesystem::exists(binary)) {
    std::cout << "  (" << binary.string() << " is not built: its result is omitted)\n";
    return std::nullopt;
  }
  int status = 0;
  const std::string out = run_command(binary.string() + " " + args + " 2>&1", status);
  const size_t line = out.rfind("RESULT ");
  const size_t at = line == std::string::npos ? line : out.find(" " + key + "=", line);
  if (status != 0 || at == std::string::npos) {
    std::cout << "  (" << binary.string() << " failed: " << out.substr(0, 400) << ")\n";
    return std::nullopt;
  }
  return std::stod(out.substr(at + key.size() + 2));
}

// Fashion-MNIST's IDX files gunzipped, as LibTorch's MNIST reader opens them.
std::optional<std::string> prepared_fashion_mnist() {
  const std::string dir = std::string(KILN_BENCH_DIR) + "/../build/fashion-mnist-idx";
  int status = 0;
  const std::string out = run_command(
      std::string(KILN_BENCH_DIR) + "/../tests/libtorch/prepare-fashion-mnist " + dir + " 2>&1",
      status);
  if (status != 0) {
    std::cout << "  (Fashion-MNIST could not be prepared: " << out << ")\n";
    return std::nullopt;
  }
  return dir;
}

}  // namespace

std::vector<Result> bench_libtorch(const Options& options) {
  const std::filesystem::path kiln_bin = std::filesystem::path(KILN_BIN_DIR) / "libtorch_cnn_step";
  const std::filesystem::path ref_bin = std::filesystem::path(KILN_LIBTORCH_REF_DIR) / "cnn_step";
  const std::string args = fmt::format("128 {}", std::max(5, options.repetitions));
  std::vector<Result> results;
  for (bool busy : {true, false}) {
    std::optional<BusyCore> spinner;
    if (busy) spinner.emplace();
    Result r{busy ? "eager_cnn_step_busy_machine" : "eager_cnn_step_idle_machine", "ms"};
    const std::optional<double> kiln_ms = result_of(kiln_bin, args, "median_ms");
    const std::optional<double> ref_ms = result_of(ref_bin, args, "median_ms");
    if (!kiln_ms) continue;
    r.kiln = *kiln_ms;
    if (ref_ms) r.refs["libtorch"] = *ref_ms;
    results.push_back(std::move(r));
  }
  {
    const std::string lstm_args = fmt::format("128 32 {}", std::max(5, options.repetitions));
    const std::filesystem::path bin(KILN_BIN_DIR), ref(KILN_LIBTORCH_REF_DIR);
    const std::optional<double> compiled_ms =
        result_of(bin / "libtorch_lstm_step_compiled", lstm_args, "median_ms");
    const std::optional<double> eager_ms =
        result_of(bin / "libtorch_lstm_step", lstm_args, "median_ms");
    const std::optional<double> ref_ms = result_of(ref / "lstm_step", lstm_args, "median_ms");
    if (compiled_ms) {
      Result r{"lstm_seq128_b32_train_step", "ms", *compiled_ms};
      if (ref_ms) r.refs["libtorch"] = *ref_ms;
      if (eager_ms) r.refs["kiln_eager"] = *eager_ms;
      results.push_back(std::move(r));
    }
  }
  if (const std::optional<std::string> data = prepared_fashion_mnist()) {
    const std::string args = *data + " 1";
    const std::optional<double> kiln_s =
        result_of(std::filesystem::path(KILN_BIN_DIR) / "libtorch_mnist", args, "epoch_seconds");
    const std::optional<double> ref_s =
        result_of(std::filesystem::path(KILN_LIBTORCH_REF_DIR) / "mnist", args, "epoch_seconds");
    if (kiln_s) {
      Result r{"libtorch_mnist_epoch", "ms", *kiln_s * 1e3};
      if (ref_s) r.refs["libtorch"] = *ref_s * 1e3;
      results.push_back(std::move(r));
    }
    const std::optional<double> compiled_s = result_of(
        std::filesystem::path(KILN_BIN_DIR) / "libtorch_mnist_compiled", args, "epoch_seconds");
    if (compiled_s) {
      Result r{"libtorch_mnist_epoch_compiled", "ms", *compiled_s * 1e3};
      if (ref_s) r.refs["libtorch"] = *ref_s * 1e3;
      if (kiln_s) r.refs["kiln_eager"] = *kiln_s * 1e3;
      results.push_back(std::move(r));
    }
  }
  return results;
}

}  // namespace kiln::bench
