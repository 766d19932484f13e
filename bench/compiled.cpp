// kiln::compile workloads (issue 5, "Benchmarks"), in ms unless noted:
//   compiled_gelu_chain_16M           gelu(a * b + c) * d on 16M float32
//   compiled_gelu_chain_16M_bw        the same in GB/s (4 reads + 1 write), ref stream_copy
//   compiled_softmax_4096x1024        softmax over the last dim
//   compiled_layer_norm_4096x1024     layer_norm over the last dim, with weight and bias
//   compiled_transformer_mlp_block    x + linear2(gelu(linear1(x))), 256 -> 1024 -> 256, x (2048,
//   256) compiled_cnn_fmnist_fwd_b128      the demo CNN (examples/fashion_mnist.h) forward, eval
//   mode compiled_mlp_b1                   linear 784 -> 512, relu, linear 512 -> 10 on one row
// Each measures the compiled function (`kiln`, after its first call) against the same code run
// eagerly (`kiln_eager`) and PyTorch eager (`torch_eager`, torch_ref.cpp), all without grad.
//
// Compile times, ms, kiln only:
//   compile_cold_<name>  the first call in a new process with an empty $KILN_CACHE_DIR
//   compile_warm_<name>  the first call in another new process with that cache filled
// Both count the first call minus a steady-state call (so the compile, not the run), after one
// eager run of the workload has warmed the allocator, the thread pool and BLAS. The
// processes are kiln-bench itself started with --compile-probe (compile_probe below), so the
// in-process caches of the measuring process cannot help either number.
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <sstream>

#include "bench/bench.h"
#include "examples/fashion_mnist.h"
#include "kiln/compile.h"
#include "kiln/kiln.h"

namespace kiln::bench {
namespace {

// One workload: its inputs, built once, and the same computation run eagerly and compiled.
struct Workload {
  std::function<void()> eager;
  std::function<void()> compiled;
};

struct WorkloadDef {
  std::string name;
  int64_t bytes = 0;   // traffic of a fused kernel, for the _bw result (0: none)
  bool heavy = false;  // fewer repetitions
  std::function<Workload(const std::string& backend)> make;
};

// A 4096x1024 activation with distinct values per row (as bench/nn.cpp and torch_eager.py).
Tensor activation() {
  return (arange(int64_t{4096} * 1024) % 97).to(kFloat32).view({4096, 1024}) * 0.01;
}

constexpr int64_t kGeluN = int64_t{1} << 24;

// Holds the outputs so they are not freed inside the timed region.
struct Sink {
  Tensor eager, compiled;
};

Workload gelu_chain(const std::string& backend) {
  auto f = [](const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& d) {
    return gelu(a * b + c) * d;
  };
  auto in = std::make_shared<std::vector<Tensor>>(
      std::vector<Tensor>{randn({kGeluN}), randn({kGeluN}), randn({kGeluN}), randn({kGeluN})});
  auto sink = std::make_shared<Sink>();
  auto g = compile(f, {.backend = backend, .name = "compiled_gelu_chain_16M"});
  return {[=] { sink->eager = f((*in)[0], (*in)[1], (*in)[2], (*in)[3]); },
          [=] { sink->compiled = g((*in)[0], (*in)[1], (*in)[2], (*in)[3]); }};
}

Workload softmax_rows(const std::string& backend) {
  auto f = [](const Tensor& x) { return x.softmax(-1); };
  auto x = std::make_shared<Tensor>(activation());
  auto sink = std::make_shared<Sink>();
  auto g = compile(f, {.backend = backend, .name = "compiled_softmax_4096x1024"});
  return {[=] { sink->eager = f(*x); }, [=] { sink->compiled = g(*x); }};
}

Workload layer_norm_rows(const std::string& backend) {
  auto f = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    return layer_norm(x, {1024}, w, b);
  };
  auto in = std::make_shared<std::vector<Tensor>>(
      std::vector<Tensor>{activation(), randn({1024}), randn({1024})});
  auto sink = std::make_shared<Sink>();
  auto g = compile(f, {.backend = backend, .name = "compiled_layer_norm_4096x1024"});
  return {[=] { sink->eager = f((*in)[0], (*in)[1], (*in)[2]); },
          [=] { sink->compiled = g((*in)[0], (*in)[1], (*in)[2]); }};
}

Workload transformer_mlp(const std::string& backend) {
  auto f = [](const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2,
              const Tensor& b2) { return x + linear(gelu(linear(x, w1, b1)), w2, b2); };
  // nn.Linear's default initialization scale, so activations stay O(1).
  auto in = std::make_shared<std::vector<Tensor>>(
      std::vector<Tensor>{randn({2048, 256}), randn({1024, 256}) * 0.0625, randn({1024}) * 0.0625,
                          randn({256, 1024}) * 0.03125, randn({256}) * 0.03125});
  auto sink = std::make_shared<Sink>();
  auto g = compile(f, {.backend = backend, .name = "compiled_transformer_mlp_block"});
  return {[=] {
            const std::vector<Tensor>& v = *in;
            sink->eager = f(v[0], v[1], v[2], v[3], v[4]);
          },
          [=] {
            const std::vector<Tensor>& v = *in;
            sink->compiled = g(v[0], v[1], v[2], v[3], v[4]);
          }};
}

Workload cnn_forward(const std::string& backend) {
  manual_seed(0);
  auto model = std::make_shared<examples::FashionCNN>();
  model->eval();  // BatchNorm uses its running statistics: an inference forward
  auto x = std::make_shared<Tensor>(randn({128, 1, 28, 28}));
  auto sink = std::make_shared<Sink>();
  auto g = compile([](examples::FashionCNN& m, const Tensor& images) { return m(images); },
                   {.backend = backend, .name = "compiled_cnn_fmnist_fwd_b128"});
  return {[=] { sink->eager = (*model)(*x); }, [=] { sink->compiled = g(*model, *x); }};
}

Workload mlp_one_row(const std::string& backend) {
  auto f = [](const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2,
              const Tensor& b2) { return linear(linear(x, w1, b1).relu(), w2, b2); };
  auto in = std::make_shared<std::vector<Tensor>>(
      std::vector<Tensor>{randn({1, 784}), randn({512, 784}) * 0.0357, randn({512}) * 0.0357,
                          randn({10, 512}) * 0.0442, randn({10}) * 0.0442});
  auto sink = std::make_shared<Sink>();
  auto g = compile(f, {.backend = backend, .name = "compiled_mlp_b1"});
  return {[=] {
            const std::vector<Tensor>& v = *in;
            sink->eager = f(v[0], v[1], v[2], v[3], v[4]);
          },
          [=] {
            const std::vector<Tensor>& v = *in;
            sink->compiled = g(v[0], v[1], v[2], v[3], v[4]);
          }};
}

const std::vector<WorkloadDef>& workloads() {
  static const std::vector<WorkloadDef> defs = {
      {"compiled_gelu_chain_16M", 5 * kGeluN * int64_t{sizeof(float)}, true, gelu_chain},
      {"compiled_softmax_4096x1024", 0, false, softmax_rows},
      {"compiled_layer_norm_4096x1024", 0, false, layer_norm_rows},
      {"compiled_transformer_mlp_block", 0, false, transformer_mlp},
      {"compiled_cnn_fmnist_fwd_b128", 0, true, cnn_forward},
      {"compiled_mlp_b1", 0, false, mlp_one_row},
  };
  return defs;
}

const WorkloadDef& find_workload(const std::string& name) {
  for (const WorkloadDef& w : workloads())
    if (w.name == name) return w;
  throw ValueError(fmt::format("kiln-bench: no compiled workload named '{}'", name));
}

struct ProbeTimes {
  double first_ms = 0;   // the first compiled call: trace, compile (or cache load), run
  double steady_ms = 0;  // a later call: run only
};

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs `kiln-bench --compile-probe name` in a new process with KILN_CACHE_DIR=cache_dir.
std::optional<ProbeTimes> probe_in_new_process(const std::string& name, const std::string& backend,
                                               const std::filesystem::path& cache_dir) {
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string command = fmt::format(
      "KILN_CACHE_DIR={} {} --compile-probe {} --backend {} 2>&1", shell_quote(cache_dir.string()),
      shell_quote(exe), shell_quote(name), shell_quote(backend));
  int status = 0;
  const std::string out = run_command(command, status);
  ProbeTimes t;
  const size_t at = out.find("compile_probe_ms ");
  if (status != 0 || at == std::string::npos) {
    fmt::print("  compile probe for {} failed (exit status {}): {}\n", name, status, out);
    return std::nullopt;
  }
  std::istringstream line(out.substr(at + 17));
  line >> t.first_ms >> t.steady_ms;
  return t;
}

}  // namespace

int compile_probe(const std::string& name, const std::string& backend) {
  NoGradGuard no_grad;
  Workload w = find_workload(name).make(backend);
  // One eager run first: the allocator's cache, the OpenMP pool and OpenBLAS are then warm, so
  // the first compiled call differs from a steady one by the compile alone.
  w.eager();
  auto start = std::chrono::steady_clock::now();
  w.compiled();
  const double first =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const double steady = median_seconds(w.compiled, 3, 0) * 1e3;
  fmt::print("compile_probe_ms {} {}\n", first, steady);
  return 0;
}

std::vector<Result> bench_compiled(const Options& options) {
  NoGradGuard no_grad;  // inference workloads, as torch_eager.py measures them (torch.no_grad)
  std::vector<Result> results;
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / fmt::format("kiln-bench-cache-{}", getpid());
  for (const WorkloadDef& def : workloads()) {
    const int reps = def.heavy ? std::max(options.repetitions / 2, 5) : options.repetitions;
    Workload w = def.make(options.backend);
    const double compiled_s = median_seconds(w.compiled, reps);
    const double eager_s = median_seconds(w.eager, reps);
    results.push_back({def.name, "ms", compiled_s * 1e3, {{"kiln_eager", eager_s * 1e3}}});
    if (def.bytes > 0) {
      const double bytes = static_cast<double>(def.bytes);
      results.push_back(
          {def.name + "_bw",
           "GB/s",
           bytes / compiled_s / 1e9,
           {{"stream_copy", stream_copy_gbps(options)}, {"kiln_eager", bytes / eager_s / 1e9}}});
    }
    w = {};  // free the inputs before the probes allocate theirs

    // Compile times: an empty cache, then a new process that finds it filled.
    const std::filesystem::path cache = root / def.name;
    std::filesystem::remove_all(cache);
    std::filesystem::create_directories(cache);
    auto cold = probe_in_new_process(def.name, options.backend, cache);
    auto warm = cold ? probe_in_new_process(def.name, options.backend, cache) : std::nullopt;
    if (cold)
      results.push_back(
          {"compile_cold_" + def.name, "ms", std::max(cold->first_ms - cold->steady_ms, 0.0), {}});
    if (warm)
      results.push_back(
          {"compile_warm_" + def.name, "ms", std::max(warm->first_ms - warm->steady_ms, 0.0), {}});
  }
  std::filesystem::remove_all(root);
  return results;
}

}  // namespace kiln::bench
