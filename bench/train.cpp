// Training steps (zero_grad, forward, cross_entropy, backward, SGD with momentum), in ms per step;
// PyTorch eager runs the same models (torch_eager.py) as the reference.
//   train_step_mlp_b64:          Linear(784, 512) - ReLU - Linear(512, 10), batch 64
//   train_step_cnn_fmnist_b128:  the demo's CNN (examples/fashion_mnist.cpp), batch 128
#include "bench/bench.h"
#include "examples/fashion_mnist.h"
#include "kiln/kiln.h"

namespace kiln::bench {
namespace {

double train_step_ms(nn::Module& model, const Tensor& x, const Tensor& y, int reps) {
  optim::SGD opt(model.parameters(), {.lr = 0.01, .momentum = 0.9});
  auto step = [&] {
    opt.zero_grad();
    cross_entropy(model.forward(x), y).backward();
    opt.step();
  };
  return median_seconds(step, reps, /*warmup=*/5) * 1e3;
}

}  // namespace

std::vector<Result> bench_train(const Options& options) {
  manual_seed(0);
  nn::Sequential mlp({std::make_shared<nn::Linear>(784, 512), std::make_shared<nn::ReLU>(),
                      std::make_shared<nn::Linear>(512, 10)});
  const double mlp_ms =
      train_step_ms(mlp, randn({64, 784}), randint(0, 10, {64}), options.repetitions);
  examples::FashionCNN cnn;
  const double cnn_ms = train_step_ms(cnn, randn({128, 1, 28, 28}), randint(0, 10, {128}),
                                      std::max(options.repetitions / 2, 3));
  return {{"train_step_mlp_b64", "ms", mlp_ms, {}},
          {"train_step_cnn_fmnist_b128", "ms", cnn_ms, {}}};
}

}  // namespace kiln::bench
