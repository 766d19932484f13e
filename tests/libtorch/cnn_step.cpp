// The demo's CNN (examples/fashion_mnist.cpp: two Conv-BatchNorm-ReLU-MaxPool blocks and a linear
// classifier) written with LibTorch's API: one eager training step (zero_grad, forward,
// cross-entropy, backward, SGD with momentum) on random data, timed. kiln-bench runs it built
// against LibTorch and against Kiln's torch:: front end, on an idle machine and while another
// process spins on one core (eager_cnn_step_busy_machine).
//
//   cnn_step [BATCH] [STEPS]
//
// Prints `RESULT median_ms=<float>` over STEPS timed steps (after 5 untimed ones).
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

struct BlockImpl : torch::nn::Module {
  BlockImpl(int64_t in, int64_t out)
      : conv(torch::nn::Conv2dOptions(in, out, 3).padding(1)), norm(out) {
    register_module("conv", conv);
    register_module("norm", norm);
  }
  torch::Tensor forward(torch::Tensor x) {
    return torch::max_pool2d(torch::relu(norm(conv(x))), 2);
  }
  torch::nn::Conv2d conv;
  torch::nn::BatchNorm2d norm;
};
TORCH_MODULE(Block);

struct FashionCnnImpl : torch::nn::Module {
  FashionCnnImpl() : block1(1, 32), block2(32, 64), classifier(64 * 7 * 7, 10) {
    register_module("block1", block1);
    register_module("block2", block2);
    register_module("classifier", classifier);
  }
  torch::Tensor forward(torch::Tensor x) { return classifier(block2(block1(x)).flatten(1)); }
  Block block1, block2;
  torch::nn::Linear classifier;
};
TORCH_MODULE(FashionCnn);

int main(int argc, char** argv) {
  const int64_t batch = argc > 1 ? std::atoll(argv[1]) : 128;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 21;
  torch::manual_seed(0);
  FashionCnn model;
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  const torch::Tensor images = torch::randn({batch, 1, 28, 28});
  const torch::Tensor labels = torch::randint(0, 10, {batch});
  auto step = [&] {
    optimizer.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(images), labels);
    loss.backward();
    optimizer.step();
  };
  for (int i = 0; i < 5; ++i) step();
  std::vector<double> ms;
  for (int i = 0; i < steps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    step();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("RESULT median_ms=%.4f\n", ms[ms.size() / 2]);
  return 0;
}
