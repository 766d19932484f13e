// A 2-layer LSTM (input 256, hidden 256) with a linear head, written with LibTorch's API: one
// training step (zero_grad, forward over a sequence of 128 steps at batch 32, MSE loss,
// backward, SGD) on random data, timed. kiln-bench runs it built against LibTorch, against Kiln's
// torch:: front end, and (lstm_step_compiled, -DKILN_COMPILE) with its one torch::compile line:
// lstm_seq128_b32_train_step.
//
//   lstm_step [SEQ] [BATCH] [STEPS]
//
// Prints `RESULT median_ms=<float> loss=<float>` over STEPS timed steps (after 3 untimed ones,
// which include the compile of the compiled build).
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

struct TaggerImpl : torch::nn::Module {
  TaggerImpl() : lstm(torch::nn::LSTMOptions(256, 256).num_layers(2)), head(256, 16) {
    register_module("lstm", lstm);
    register_module("head", head);
  }
  torch::Tensor forward(torch::Tensor x) { return head(std::get<0>(lstm->forward(x))); }
  torch::nn::LSTM lstm;
  torch::nn::Linear head;
};
TORCH_MODULE(Tagger);

int main(int argc, char** argv) {
  const int64_t seq = argc > 1 ? std::atoll(argv[1]) : 128;
  const int64_t batch = argc > 2 ? std::atoll(argv[2]) : 32;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 11;
  torch::manual_seed(0);
  Tagger model;
  using Forward = std::function<torch::Tensor(TaggerImpl&, torch::Tensor)>;
  Forward forward = [](TaggerImpl& m, torch::Tensor x) { return m.forward(x); };
#ifdef KILN_COMPILE
  forward = torch::compile(forward);  // the one line a compiled run adds (Kiln's kiln::compile)
#endif
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.01));
  const torch::Tensor inputs = torch::randn({seq, batch, 256});
  const torch::Tensor targets = torch::randn({seq, batch, 16});
  float last_loss = 0;
  auto step = [&] {
    optimizer.zero_grad();
    torch::Tensor loss = torch::mse_loss(forward(*model, inputs), targets);
    loss.backward();
    optimizer.step();
    last_loss = loss.item<float>();
  };
  for (int i = 0; i < 3; ++i) step();
  std::vector<double> ms;
  for (int i = 0; i < steps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    step();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("RESULT median_ms=%.4f loss=%.6f\n", ms[ms.size() / 2], last_loss);
  return 0;
}
