// The Fashion-MNIST training loop (see fashion_mnist.h). Written the way a LibTorch user would
// write it, with nothing Kiln-internal: this file is the example of the public API.
#include "examples/fashion_mnist.h"

#include "kiln/compile.h"

#include <fmt/format.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <ostream>

namespace kiln::examples {

FashionCNN::FashionCNN() : nn::Module("FashionCNN") {
  auto block = [](int64_t in, int64_t out) {
    return std::vector<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Conv2d>(in, out, 3, nn::ConvOptions<2>{.padding = 1}),
        std::make_shared<nn::BatchNorm2d>(out), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::MaxPool2d>(2)};
  };
  features_ = register_module("features", std::make_shared<nn::Sequential>());
  for (auto& m : block(1, 32)) features_->push_back(m);
  for (auto& m : block(32, 64)) features_->push_back(m);
  classifier_ = register_module("classifier", std::make_shared<nn::Linear>(64 * 7 * 7, 10));
}

Tensor FashionCNN::forward(const Tensor& images) {
  return classifier_->forward(features_->forward(images).flatten(1));
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One line per epoch, redrawn in place on a terminal; on a pipe (CI logs) only the final state.
class ProgressBar {
 public:
  ProgressBar(std::ostream& out, bool enabled, std::string title, int64_t total)
      : out_(out),
        enabled_(enabled),
        tty_(isatty(fileno(stdout)) != 0),
        title_(std::move(title)),
        total_(total),
        start_(Clock::now()) {}

  void update(int64_t done, double loss, double accuracy, int64_t images, bool final = false) {
    if (!enabled_) return;
    const double elapsed = seconds_since(start_);
    if (!final && (!tty_ || elapsed - last_draw_ < 0.1)) return;
    last_draw_ = elapsed;
    constexpr int kWidth = 30;
    const int filled = total_ > 0 ? static_cast<int>(kWidth * done / total_) : kWidth;
    out_ << (tty_ ? "\r" : "")
         << fmt::format("{} [{}{}] {:4}/{} loss {:.4f} acc {:5.1f}% {:6.0f} img/s", title_,
                        std::string(filled, '#'), std::string(kWidth - filled, '.'), done, total_,
                        loss, 100 * accuracy, images / std::max(elapsed, 1e-9));
    if (final) out_ << "\n";
    out_.flush();
  }

 private:
  std::ostream& out_;
  bool enabled_;
  bool tty_;
  std::string title_;
  int64_t total_;
  Clock::time_point start_;
  double last_draw_ = -1;
};

std::unique_ptr<optim::LRScheduler> make_scheduler(const FashionMnistOptions& o,
                                                   optim::Optimizer& opt, int64_t steps_per_epoch) {
  const int64_t total = o.epochs * steps_per_epoch;
  if (o.scheduler == "onecycle")
    return std::make_unique<optim::OneCycleLR>(
        opt, optim::OneCycleLROptions{.max_lr = {o.lr}, .total_steps = total});
  if (o.scheduler == "cosine") return std::make_unique<optim::CosineAnnealingLR>(opt, total);
  if (o.scheduler == "step")
    return std::make_unique<optim::StepLR>(opt, std::max<int64_t>(total / 3, 1), 0.1);
  return nullptr;  // "none" (train_fashion_mnist checked the name)
}

// Accuracy of `model` on a whole dataset, in eval mode and without recording gradients.
double evaluate(nn::Module& model, const data::TensorDataset& dataset, int64_t batch_size) {
  NoGradGuard no_grad;
  model.eval();
  int64_t correct = 0;
  const int64_t n = dataset.size();
  for (int64_t start = 0; start < n; start += batch_size) {
    const int64_t len = std::min(batch_size, n - start);
    Tensor logits = model.forward(dataset.data().narrow(0, start, len));
    correct += logits.argmax(1).eq(dataset.targets().narrow(0, start, len)).sum().item<int64_t>();
  }
  model.train();
  return n > 0 ? static_cast<double>(correct) / static_cast<double>(n) : 0.0;
}

std::shared_ptr<data::TensorDataset> limited(std::shared_ptr<data::TensorDataset> d, int64_t n) {
  if (n <= 0 || n >= d->size()) return d;
  return std::make_shared<data::TensorDataset>(d->data().narrow(0, 0, n).contiguous(),
                                               d->targets().narrow(0, 0, n).contiguous());
}

}  // namespace

FashionMnistResult train_fashion_mnist(const FashionMnistOptions& o, std::ostream& out) {
  KILN_CHECK(o.epochs >= 1 && o.batch_size >= 1 && o.lr > 0, ValueError,
             "fashion_mnist: epochs ({}) and batch size ({}) must be >= 1 and lr ({}) > 0",
             o.epochs, o.batch_size, o.lr);
  KILN_CHECK(o.scheduler == "onecycle" || o.scheduler == "cosine" || o.scheduler == "step" ||
                 o.scheduler == "none",
             ValueError,
             "fashion_mnist: unknown scheduler '{}'; use onecycle, cosine, step or none",
             o.scheduler);
  manual_seed(o.seed);
  const auto normalize = data::FashionMNIST::kTrainNormalize;
  auto train_set =
      limited(std::make_shared<data::FashionMNIST>(o.data_dir, true, normalize), o.train_limit);
  auto test_set =
      limited(std::make_shared<data::FashionMNIST>(o.data_dir, false, normalize), o.test_limit);
  data::DataLoader loader(train_set, {.batch_size = o.batch_size, .shuffle = true, .seed = o.seed});

  FashionCNN model;
  optim::SGD optimizer(model.parameters(),
                       {.lr = o.lr, .momentum = 0.9, .weight_decay = 5e-4, .nesterov = true});
  auto scheduler = make_scheduler(o, optimizer, loader.size());
  out << fmt::format(
      "Training {} on {} Fashion-MNIST images ({} test), {} epochs, batch {}, "
      "lr {} ({} schedule)\n",
      model.name(), train_set->size(), test_set->size(), o.epochs, o.batch_size, o.lr, o.scheduler);

  // --compile: the whole training step is one compiled function (compile_backend). zero_grad()
  // and the scheduler-driven hyperparameters are effects; forward and loss are the first graph
  // (with inductor, compiled with its backward through AOT autograd, BatchNorm's running
  // statistics functionalized); backward() is a graph break that runs the compiled backward
  // through the autograd engine (Note [Backward in a compiled function]); the optimizer step is
  // the second graph, one fused update per parameter with lr and momentum as tensors, so
  // OneCycleLR never recompiles (Note [Optimizer steps under a trace]).
  auto train_step = compile(
      [&optimizer](nn::Module& m, const Tensor& images, const Tensor& labels) {
        optimizer.zero_grad();
        Tensor logits = m(images);
        Tensor loss = cross_entropy(logits, labels);
        loss.backward();
        optimizer.step();
        return std::make_pair(logits, loss);
      },
      {.backend = o.compile_backend.empty() ? "eager" : o.compile_backend,
       .name = "fashion_mnist_train_step"});

  FashionMnistResult result;
  const auto start = Clock::now();
  int64_t images_seen = 0;
  for (int64_t epoch = 0; epoch < o.epochs; ++epoch) {
    ProgressBar bar(out, o.progress, fmt::format("epoch {}/{}", epoch + 1, o.epochs),
                    loader.size());
    double loss_sum = 0;
    int64_t correct = 0, seen = 0, step = 0;
    for (data::Batch& batch : loader) {
      Tensor logits, loss;
      if (o.compile_backend.empty()) {
        optimizer.zero_grad();
        logits = model.forward(batch.data);
        loss = cross_entropy(logits, batch.target);
        loss.backward();
        optimizer.step();
      } else {
        std::tie(logits, loss) = train_step(model, batch.data, batch.target);
      }
      if (scheduler) scheduler->step();

      const int64_t n = batch.data.size(0);
      loss_sum += loss.item<double>() * static_cast<double>(n);
      {
        NoGradGuard no_grad;
        correct += logits.argmax(1).eq(batch.target).sum().item<int64_t>();
      }
      seen += n;
      ++step;
      bar.update(step, loss_sum / seen, static_cast<double>(correct) / seen, seen);
    }
    bar.update(step, loss_sum / seen, static_cast<double>(correct) / seen, seen, true);
    if (epoch == 0) result.first_train_loss = loss_sum / seen;
    result.final_train_loss = loss_sum / seen;
    images_seen += seen;
  }
  result.seconds = seconds_since(start);
  if (!o.compile_backend.empty()) {
    const capture::CompileStats stats = train_step.stats();
    result.compiles = stats.compiles;
    // Only the code-generating backend compiles the backward (AOT autograd) and the optimizer
    // update; "eager" interprets the captured graphs, the backward through the autograd engine.
    out << fmt::format(
        "compiled training step (backend {}{}): {} compiles, {} graphs, {} cache hits\n",
        o.compile_backend,
        o.compile_backend == "inductor" ? ": forward, loss, backward and optimizer step" : "",
        stats.compiles, stats.graphs, stats.cache_hits);
  }
  result.images_per_second = images_seen / std::max(result.seconds, 1e-9);
  result.test_accuracy = evaluate(model, *test_set, 1000);
  out << fmt::format("test accuracy {:.2f}% ({} images); training took {:.1f} s ({:.0f} img/s)\n",
                     100 * result.test_accuracy, test_set->size(), result.seconds,
                     result.images_per_second);

  if (!o.checkpoint.empty()) {
    StateDict run;
    run.values["epochs"] = std::to_string(o.epochs);
    run.values["test_accuracy"] = fmt::format("{}", result.test_accuracy);
    std::map<std::string, StateDict> parts{
        {"model", model.state_dict()}, {"optimizer", optimizer.state_dict()}, {"run", run}};
    if (scheduler) parts["scheduler"] = scheduler->state_dict();
    io::save_checkpoint(o.checkpoint, parts);
    out << "checkpoint saved to " << o.checkpoint << "\n";
  }
  if (!o.compile_backend.empty() && o.compare_step_times > 0) {
    // Eager against compiled on one batch: forward, loss, backward and optimizer step, median of
    // `compare_step_times` steps each, after a warm-up step (after the checkpoint: these steps
    // change the model).
    data::Batch batch = *loader.begin();
    auto step_ms = [&](auto&& step) {
      std::vector<double> times;
      for (int64_t i = 0; i <= o.compare_step_times; ++i) {
        const auto t0 = Clock::now();
        step();
        if (i > 0) times.push_back(1e3 * seconds_since(t0));
      }
      std::sort(times.begin(), times.end());
      return times[times.size() / 2];
    };
    result.eager_step_ms = step_ms([&] {
      optimizer.zero_grad();
      cross_entropy(model.forward(batch.data), batch.target).backward();
      optimizer.step();
    });
    result.compiled_step_ms = step_ms([&] { train_step(model, batch.data, batch.target); });
    optimizer.zero_grad();
    out << fmt::format(
        "training step, batch {}: eager {:.1f} ms, compiled ({}) {:.1f} ms ({:.2f}x; "
        "median of {})\n",
        batch.data.size(0), result.eager_step_ms, o.compile_backend, result.compiled_step_ms,
        result.eager_step_ms / result.compiled_step_ms, o.compare_step_times);
  }

  return result;
}

}  // namespace kiln::examples
