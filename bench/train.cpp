// Training steps (zero_grad, forward, loss, backward, optimizer step), in ms per step; PyTorch
// eager runs the same models (torch_eager.py) as the reference.
//   train_step_mlp_b64:          Linear(784, 512) - ReLU - Linear(512, 10), batch 64, SGD
//   train_step_cnn_fmnist_b128:  the demo's CNN (examples/fashion_mnist.cpp), batch 128, SGD
// Compiled (issue 6): the whole step runs through one kiln::compile: forward and loss compiled
// with their backward (AOT autograd), backward() a graph break, the optimizer update compiled.
// `kiln` is the compiled step, refs `kiln_eager` (the same step eager, same process) and
// `torch_eager`:
//   compiled_train_step_mlp_b64           the MLP above, SGD(momentum 0.9)
//   compiled_train_step_cnn_fmnist_b128   the demo CNN, SGD(momentum 0.9)
//   compiled_train_step_transformer       2 encoder layers (d 256, 4 heads, ff 1024, no dropout,
//                                         batch_first) on (16, 128, 256), MSE loss, AdamW
// Activation memory between forward and backward, bytes, from the compile trace's aot_partition
// artifact: saved_bytes_<model> with `kiln` = the min-cut partitioner, ref `default`.
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "bench/bench.h"
#include "examples/fashion_mnist.h"
#include "kiln/compile.h"
#include "kiln/kiln.h"
#include "src/trace/reader.h"
#include "src/trace/trace.h"

namespace kiln::bench {
namespace {

using LossFn = std::function<Tensor(nn::Module&, const Tensor&, const Tensor&)>;

Tensor classify(nn::Module& m, const Tensor& x, const Tensor& y) { return cross_entropy(m(x), y); }
Tensor regress(nn::Module& m, const Tensor& x, const Tensor& y) { return mse_loss(m(x), y); }

double train_step_ms(nn::Module& model, const Tensor& x, const Tensor& y, int reps) {
  optim::SGD opt(model.parameters(), {.lr = 0.01, .momentum = 0.9});
  auto step = [&] {
    opt.zero_grad();
    cross_entropy(model.forward(x), y).backward();
    opt.step();
  };
  return median_seconds(step, reps, /*warmup=*/5) * 1e3;
}

struct Model {
  std::string name;  // the result names' suffix
  std::function<std::shared_ptr<nn::Module>()> make;
  LossFn loss;
  Tensor x, y;
  bool adamw = false;
  int reps = 11;  // at the default --repetitions (21), scaled with it
};

// A step of a few milliseconds or less needs more repetitions than the default for its median to
// stand still on a shared machine: `reps` timed steps at the default --repetitions, scaled with it.
int scaled_reps(int reps, const Options& options) {
  return std::max(3, reps * options.repetitions / Options{}.repetitions);
}

// One step: zero_grad, loss (eager or compiled), backward, step.
double step_ms(const Model& m, bool compiled, const std::string& backend, int reps) {
  std::shared_ptr<nn::Module> model = m.make();
  std::unique_ptr<optim::Optimizer> opt;
  if (m.adamw) {
    opt = std::make_unique<optim::AdamW>(model->parameters());
  } else {
    opt = std::make_unique<optim::SGD>(model->parameters(),
                                       optim::SGDOptions{.lr = 0.01, .momentum = 0.9});
  }
  // The whole step in one compiled function (Note [Backward in a compiled function], Note
  // [Optimizer steps under a trace]).
  auto train_step = compile(
      [&](nn::Module& mod, const Tensor& x, const Tensor& y) {
        opt->zero_grad();
        m.loss(mod, x, y).backward();
        opt->step();
      },
      {.backend = backend, .name = "compiled_train_step_" + m.name});
  auto step = [&] {
    if (compiled) {
      train_step(*model, m.x, m.y);
      return;
    }
    opt->zero_grad();
    m.loss(*model, m.x, m.y).backward();
    opt->step();
  };
  return median_seconds(step, reps, /*warmup=*/3) * 1e3;
}

// saved_bytes of the first compile of `m` with `partitioner`, read back from the trace.
std::optional<double> saved_bytes(const Model& m, const std::string& partitioner) {
  const auto dir = std::filesystem::temp_directory_path() /
                   fmt::format("kiln-bench-trace-{}-{}", getpid(), m.name);
  std::filesystem::remove_all(dir);
  trace::set_directory_for_testing(dir.string());
  {
    std::shared_ptr<nn::Module> model = m.make();
    CompileOptions o;
    o.partitioner = partitioner;
    o.name = "saved_bytes_" + m.name;
    auto f = compile(m.loss, o);
    f(*model, m.x, m.y).backward();
  }
  trace::set_directory_for_testing(std::nullopt);
  std::optional<double> bytes;
  for (const std::string& file : trace::trace_files(dir.string()))
    for (const trace::Record& r : trace::read_trace(file))
      if (r.kind == "artifact" && r.artifact_name() == "aot_partition" && r.payload && !bytes)
        bytes = nlohmann::json::parse(*r.payload)["saved_bytes"].get<double>();
  std::filesystem::remove_all(dir);
  if (!bytes) fmt::print("  no aot_partition artifact for {} (the graph ran eagerly)\n", m.name);
  return bytes;
}

std::vector<Model> models() {
  auto mlp = [] {
    manual_seed(0);
    return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Linear>(784, 512), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::Linear>(512, 10)});
  };
  auto cnn = [] {
    manual_seed(0);
    return std::make_shared<examples::FashionCNN>();
  };
  auto transformer = [] {
    manual_seed(0);
    nn::TransformerEncoderLayerOptions o{
        .dim_feedforward = 1024, .dropout = 0.0, .batch_first = true};
    return std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::TransformerEncoderLayer>(256, 4, o),
        std::make_shared<nn::TransformerEncoderLayer>(256, 4, o)});
  };
  manual_seed(1);
  return {
      {"mlp_b64", mlp, classify, randn({64, 784}), randint(0, 10, {64}), false, 101},
      {"cnn_fmnist_b128", cnn, classify, randn({128, 1, 28, 28}), randint(0, 10, {128}), false, 7},
      {"transformer", transformer, regress, randn({16, 128, 256}), randn({16, 128, 256}), true, 7},
  };
}

}  // namespace

std::vector<Result> bench_train(const Options& options) {
  manual_seed(0);
  nn::Sequential mlp({std::make_shared<nn::Linear>(784, 512), std::make_shared<nn::ReLU>(),
                      std::make_shared<nn::Linear>(512, 10)});
  const double mlp_ms =
      train_step_ms(mlp, randn({64, 784}), randint(0, 10, {64}), scaled_reps(101, options));
  examples::FashionCNN cnn;
  const double cnn_ms = train_step_ms(cnn, randn({128, 1, 28, 28}), randint(0, 10, {128}),
                                      std::max(options.repetitions / 2, 3));
  std::vector<Result> results = {{"train_step_mlp_b64", "ms", mlp_ms, {}},
                                 {"train_step_cnn_fmnist_b128", "ms", cnn_ms, {}}};

  for (const Model& m : models()) {
    const int reps = scaled_reps(m.reps, options);
    const double compiled = step_ms(m, true, options.backend, reps);
    const double eager = step_ms(m, false, options.backend, reps);
    results.push_back({"compiled_train_step_" + m.name, "ms", compiled, {{"kiln_eager", eager}}});
  }
  for (const Model& m : models()) {
    const std::string model_name = m.name == "mlp_b64"           ? "mlp"
                                   : m.name == "cnn_fmnist_b128" ? "cnn_fmnist"
                                                                 : m.name;
    const std::optional<double> min_cut = saved_bytes(m, "min_cut");
    const std::optional<double> by_default = saved_bytes(m, "default");
    if (min_cut && by_default)
      results.push_back(
          {"saved_bytes_" + model_name, "bytes", *min_cut, {{"default", *by_default}}});
  }
  return results;
}

}  // namespace kiln::bench
